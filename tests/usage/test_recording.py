"""Every execution of a lookup task leaves a usage record in the metadata database, however it ends:
real DAG runs (``dag.test()``) against the emulator, records read back as the api-server reads them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_namelookup.usage import store
from airflow_provider_namelookup.usage.record import UsageRecord

pytestmark = pytest.mark.usefixtures("airflow_db")


def records_of(dag_id: str) -> list[UsageRecord]:
    """The dag's records, as the api-server reads them (the Variable table of the metadata DB)."""
    from airflow.utils.session import create_session

    with create_session() as session:
        return [r for r in store.read(session, since=datetime(2000, 1, 1, tzinfo=UTC)) if r.dag_id == dag_id]


def xcom_keys(dag: Any, task_id: str) -> set[str]:
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS

    if AIRFLOW_V_3_0_PLUS:
        from airflow.models.xcom import XComModel
    else:  # Airflow 2's XCom class is the table's model
        from airflow.models.xcom import XCom as XComModel

    with create_session() as session:
        return set(session.scalars(select(XComModel.key).where(XComModel.dag_id == dag.dag_id,
                                                               XComModel.task_id == task_id)))


@pytest.mark.compat
def test_each_try_is_recorded_even_the_one_that_ran_out_of_credits_and_its_xcom_did_not_survive(
        write_dag: Any, namelookup: Any, emulator: Any) -> None:
    """Try 1 spends 100 credits, then meets limit-exceeded; try 2 pays the other 150. Both records
    stay, while the XCom try 1 pushed is gone: Airflow clears a task instance's XComs when a try starts
    (which is why the records are Variables)."""
    names = [f"Name{i:03d}" for i in range(250)]
    namelookup.set_credits(120)
    dag = write_dag(f"""
        from datetime import timedelta

        class Probing(GenderLookupOperator):
            def execute(self, context):
                context["ti"].xcom_push(key=f"probe_try{{context['ti'].try_number}}", value=1)
                return super().execute(context)

        def top_up(context):
            import httpx
            httpx.post({emulator.url!r} + "/emulator/accounts/credits",
                       json={{"api_token": {namelookup.token!r}, "add": 1000}})

        Probing(task_id="genders", queries={names!r}, check_remaining_credits=False, max_concurrency=1,
                retries=1, retry_delay=timedelta(0), on_retry_callback=top_up)
    """)
    assert str(dag.run().state) == "success"
    charged = 120 + 1000 - namelookup.remaining()
    first, second = sorted(records_of(dag.dag_id), key=lambda r: r.try_number)
    assert (first.try_number, first.state, first.error, first.status_id) == (
        1, "failed", "NameLookupLimitExceeded", "limit-exceeded")
    assert (first.credits_used, first.requests, first.cache_hits, first.lookups) == (100, 2, None, 100)
    assert (second.try_number, second.state, second.error) == (2, "success", None)
    assert (second.credits_used, second.requests, second.lookups) == (150, 2, 150)
    assert first.credits_used + second.credits_used == charged == 250
    assert (first.conn_id, first.lookup, first.run_id) == ("namelookup_default", "gender", dag.last_run.run_id)
    assert first.start <= first.end <= second.start <= second.end
    assert xcom_keys(dag, "genders") == {"probe_try2", "return_value"}  # try 1's XCom is gone


@pytest.mark.compat
def test_a_successful_try_records_credits_cache_hits_and_the_remaining_credits(write_dag: Any,
                                                                               namelookup: Any) -> None:
    dag = write_dag("""
        GenderLookupOperator(task_id="genders", queries=["Anna", "anna ", "Theresa", "John", "12345"])
        CountryOfOriginOperator(task_id="origins", queries=["Giulia", "Sven"])
    """)
    assert str(dag.run().state) == "success"
    by_task = {r.task_id: r for r in records_of(dag.dag_id)}
    genders, origins = by_task["genders"], by_task["origins"]
    # "anna " repeats Anna (paid once in this run: no answer paid before it, so no cache hit),
    # "12345" breaks a rule and costs nothing
    assert (genders.credits_used, genders.lookups, genders.cache_hits) == (3, 3, 0)
    assert genders.requests == 2  # the budget's free statistic call and one batch
    assert (origins.lookup, origins.credits_used, origins.requests) == ("country_of_origin", 4, 3)
    assert namelookup.remaining() == 100 - 7
    # each read the statistic before spending: that reading, less what the try spent after it
    assert {genders.remaining_credits, origins.remaining_credits} <= {100 - 3, 100 - 4, 100 - 7}


@pytest.mark.compat
def test_a_table_run_records_its_summary_and_a_rerun_records_its_cache_hits(write_dag: Any, namelookup: Any,
                                                                              sqlite_warehouse: Any) -> None:
    table = sqlite_warehouse.create_customers([(i, name, "DE") for i, name in
                                               enumerate(["Anna", "Theresa", "Anna", "John"], start=1)])
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", sql_conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", country_column="country")
    """)
    assert str(dag.run().state) == "success"
    sqlite_warehouse.insert(table, [(5, "Anna", "DE"), (6, "Sven", "DE")])
    assert str(dag.run().state) == "success"
    first, rerun = sorted(records_of(dag.dag_id), key=lambda r: r.start)
    assert (first.credits_used, first.lookups, first.cache_hits) == (3, 3, 0)
    assert (rerun.credits_used, rerun.lookups, rerun.cache_hits) == (1, 1, 1)  # Sven paid, Anna from the answers
    assert first.run_id != rerun.run_id and namelookup.remaining() == 100 - 4


@pytest.mark.compat
def test_an_execution_timeout_midway_is_recorded_with_what_it_spent(write_dag: Any, namelookup: Any,
                                                                     emulator: Any) -> None:
    namelookup.set_credits(1000)
    emulator.set_faults(latency_ms=1000)  # batch 1 answers at ~1 s, batch 2 would at ~2 s
    dag = write_dag(f"""
        from datetime import timedelta

        GenderLookupOperator(task_id="genders", queries={[f"Name{i:03d}" for i in range(250)]!r},
                             check_remaining_credits=False, max_concurrency=1,
                             execution_timeout=timedelta(seconds=1.6))
    """)
    from airflow.providers.common.compat.sdk import AirflowTaskTimeout

    from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS

    if AIRFLOW_V_3_0_PLUS:
        assert str(dag.run().state) == "failed"
    else:  # Airflow 2's dag.test() runs the task in this process, and the timeout's exception escapes it
        with pytest.raises(AirflowTaskTimeout):
            dag.run()
    [record] = records_of(dag.dag_id)
    assert (record.state, record.error) == ("failed", "AirflowTaskTimeout")
    assert record.credits_used == 1000 - namelookup.remaining() >= 100


def test_a_try_that_loses_the_network_after_spending_is_recorded(write_dag: Any, namelookup: Any,
                                                                  emulator: Any) -> None:
    namelookup.set_credits(1000)
    emulator.set_faults(latency_ms=300)

    def cut_the_network_after_the_first_batch() -> None:
        deadline = time.monotonic() + 30
        while namelookup.remaining() > 900 and time.monotonic() < deadline:
            time.sleep(0.01)
        emulator.set_faults(latency_ms=300, drop_before=1.0)  # connections close before an answer

    cutter = threading.Thread(target=cut_the_network_after_the_first_batch, daemon=True)
    cutter.start()
    dag = write_dag(f"""
        GenderLookupOperator(task_id="genders", queries={[f"Name{i:03d}" for i in range(300)]!r},
                             check_remaining_credits=False, max_concurrency=1)
    """)
    assert str(dag.run().state) == "failed"
    cutter.join()
    [record] = records_of(dag.dag_id)
    assert (record.state, record.error) == ("failed", "NameLookupConnectionError")
    assert record.credits_used == 1000 - namelookup.remaining() == 100
    assert record.retries == 5 and record.requests == 1 + 6  # the paid batch, then 6 attempts without an answer


def after_the_first_request(emulator: Any, action: Any) -> threading.Thread:
    """Run ``action`` once the emulator has answered one more request (the sensor's first poke), on a
    thread. It watches the emulator's counters, not the metadata database: SQLite and ``dag.test()``
    in the main thread do not share it well."""
    seen = emulator.stats()["requests"]

    def watch() -> None:
        deadline = time.monotonic() + 60
        while emulator.stats()["requests"] == seen and time.monotonic() < deadline:
            time.sleep(0.05)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.compat
def test_every_poke_of_a_rescheduled_sensor_records_the_remaining_credits(write_dag: Any, namelookup: Any,
                                                                          emulator: Any) -> None:
    namelookup.set_credits(0)
    dag = write_dag("""
        NameLookupCreditsSensor(task_id="wait", min_credits=50, mode="reschedule", poke_interval=0.5, timeout=60)
    """)
    top_up = after_the_first_request(emulator, lambda: namelookup.set_credits(50))  # after the first poke
    assert str(dag.run().state) == "success"
    top_up.join()
    pokes = sorted(records_of(dag.dag_id), key=lambda r: r.start)
    assert len(pokes) >= 2 and {p.try_number for p in pokes} == {1}
    assert [p.state for p in pokes] == ["up_for_reschedule"] * (len(pokes) - 1) + ["success"]
    assert pokes[0].remaining_credits == 0 and pokes[-1].remaining_credits == 50
    assert all(p.lookup == "statistic" and p.credits_used == 0 and p.requests == 1 for p in pokes)


def test_a_deferred_sensor_records_both_halves(write_dag: Any, namelookup: Any, emulator: Any) -> None:
    namelookup.set_credits(3)
    dag = write_dag("""
        NameLookupCreditsSensor(task_id="wait", min_credits=400, deferrable=True, poke_interval=0.2, timeout=60)
    """)
    top_up = after_the_first_request(emulator, lambda: namelookup.set_credits(500))  # after the first poke
    assert str(dag.run().state) == "success"
    top_up.join()
    before, after = sorted(records_of(dag.dag_id), key=lambda r: r.start)
    assert (before.state, before.remaining_credits, before.requests) == ("deferred", 3, 1)
    assert (after.state, after.remaining_credits, after.requests) == ("success", 500, 0)  # the triggerer asked


def test_sigterm_midway_writes_the_record_before_the_worker_is_killed(airflow_db: Path, namelookup: Any,
                                                                       emulator: Any, tmp_path: Path) -> None:
    """As a supervisor stops a task: SIGTERM (Airflow calls ``on_kill``), then SIGKILL. The record of
    what the killed try had spent is in the metadata database before the SIGKILL."""
    namelookup.set_credits(1000)
    emulator.set_faults(latency_ms=600)
    dag_id = f"test_sigterm_{os.getpid()}_{int(time.time())}"
    (airflow_db / f"{dag_id}.py").write_text(textwrap.dedent(f"""
        import pendulum
        from airflow.providers.common.compat.sdk import DAG
        from airflow_provider_namelookup.operators import GenderLookupOperator

        with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False) as dag:
            GenderLookupOperator(task_id="genders", queries=[f"Name{{i:03d}}" for i in range(1000)],
                                 check_remaining_credits=False, max_concurrency=1)

        if __name__ == "__main__":
            dag.test()
    """))
    # The worker stores the record unencrypted: this process may have read the configuration before
    # it held a Fernet key, and a deployment shares one key between all its components anyway.
    env = {**os.environ, "AIRFLOW__CORE__FERNET_KEY": ""}
    worker = subprocess.Popen([sys.executable, str(airflow_db / f"{dag_id}.py")], env=env,
                              stdout=(tmp_path / "worker.log").open("w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while namelookup.remaining() > 800 and time.monotonic() < deadline:  # two batches paid
            time.sleep(0.1)
        assert namelookup.remaining() <= 800, (tmp_path / "worker.log").read_text()[-3000:]
        spent_at_sigterm = 1000 - namelookup.remaining()
        worker.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        while not records_of(dag_id) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
    spent = 1000 - namelookup.remaining()
    [record] = records_of(dag_id)
    # what was paid when SIGTERM came, less at most the batch in flight (charged, its answer not yet
    # read); the handler returns, so the try may pay for more before the SIGKILL (a record it writes
    # later has the same key)
    assert record.state == "killed" and spent_at_sigterm - 100 <= record.credits_used <= spent
