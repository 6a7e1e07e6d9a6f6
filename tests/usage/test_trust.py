"""The records the credits view counts (issue 25, item 2): every record a real try of the provider's
operators wrote, and none of those another task forged (real DAG runs, ``dag.test()``, the records
read and checked as the api-server does)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_namelookup.usage import store
from airflow_provider_namelookup.usage.record import UsageRecord
from airflow_provider_namelookup.usage.trust import OPERATORS_OF, trusted, why_not_counted

pytestmark = pytest.mark.usefixtures("airflow_db")

SINCE = datetime(2000, 1, 1, tzinfo=UTC)


def _read(dag_ids: set[str]) -> tuple[list[UsageRecord], list[UsageRecord]]:
    """The records of ``dag_ids``: all of them, and those the view counts."""
    from airflow.utils.session import create_session

    with create_session() as session:
        every = [r for r in store.read(session, since=SINCE) if r.dag_id in dag_ids]
        return every, trusted(session, every, now=datetime.now(UTC))


def test_the_operators_named_are_the_providers_and_their_lookups() -> None:
    from airflow_provider_namelookup.operators import (
        CountryOfOriginOperator,
        GenderLookupOperator,
        SqlCountryOfOriginOperator,
        SqlGenderLookupOperator,
    )
    from airflow_provider_namelookup.sensors import NameLookupCreditsSensor

    classes = [GenderLookupOperator, SqlGenderLookupOperator, CountryOfOriginOperator, SqlCountryOfOriginOperator,
               NameLookupCreditsSensor]
    assert {name: sorted(ops) for name, ops in OPERATORS_OF.items()} == {
        lookup: sorted(c.__name__ for c in classes if (getattr(getattr(c, "lookup", None), "value", None)
                                                      or "statistic") == lookup)
        for lookup in ("gender", "country_of_origin", "statistic")}


def test_every_record_of_a_real_try_is_counted(write_dag: Any, namelookup: Any, emulator: Any,
                                               sqlite_warehouse: Any) -> None:
    """Lookups that succeed, a try that fails and its retry (the first try then lives in the task
    instance history, under its own id), a table run, the pokes of a rescheduled sensor and the two
    halves of a deferred one."""
    table = sqlite_warehouse.create_customers([(1, "Anna", "DE"), (2, "John", "US")])
    namelookup.set_credits(3)
    dag = write_dag(f"""
        from datetime import timedelta

        def top_up(context):
            import httpx
            httpx.post({emulator.url!r} + "/emulator/accounts/credits",
                       json={{"api_token": {namelookup.token!r}, "add": 100}})

        retried = GenderLookupOperator(task_id="retried", queries=["Anna", "Ben", "Carla", "Dora", "Emil"],
                                       check_remaining_credits=False, retries=1, retry_delay=timedelta(0),
                                       on_retry_callback=top_up)
        origins = CountryOfOriginOperator(task_id="origins", queries=["Giulia", "Sven"])
        table = SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                        key_column="customer_id", name_column="name", country_column="country")
        poked = NameLookupCreditsSensor(task_id="poked", min_credits=1, mode="reschedule", poke_interval=0.3,
                                        timeout=60)
        deferred = NameLookupCreditsSensor(task_id="deferred", min_credits=1, deferrable=True, poke_interval=0.2,
                                           timeout=60)
        retried >> origins >> table >> poked >> deferred
    """)
    assert str(dag.run().state) == "success"
    every, counted = _read({dag.dag_id})
    assert {(r.task_id, r.try_number) for r in every} >= {("retried", 1), ("retried", 2), ("origins", 1),
                                                         ("table", 1), ("poked", 1), ("deferred", 1)}
    assert sorted(counted, key=store.key_of) == sorted(every, key=store.key_of)


def test_a_record_written_by_any_other_task_is_not_counted(write_dag: Any, namelookup: Any,
                                                           sqlite_warehouse: Any) -> None:
    """The forgeries of the audit, written as any task can write them (a Variable through the Task
    SDK), and a few more: each is refused for its own reason, and the real record stays counted."""
    victim = write_dag('GenderLookupOperator(task_id="genders", queries=["Anna", "John"])')
    assert str(victim.run().state) == "success"
    [genuine] = _read({victim.dag_id})[1]
    base = genuine.as_dict()

    def later(microseconds: int) -> dict[str, str]:
        """Another start: a forger who may read the victim's task instances (its try's id) through the
        REST API cannot know the microsecond a record started, so cannot write to the record's own key."""
        return {"start": (genuine.start + timedelta(microseconds=microseconds)).isoformat()}

    forged = {
        "a fake try id": {**base, "credits_used": 987_654, "ti_id": "0199a3c2-7c1e-7d55-9a57-6a3f1f0c2b11"},
        "a run that does not exist": {**base, "run_id": "manual__forged"},
        "a try number no try has": {**base, "try_number": 7},
        "another lookup": {**base, "lookup": "country_of_origin", **later(1)},
        "dated in 2099": {**base, "start": "2099-01-01T00:00:00+00:00", "end": "2099-01-01T00:00:01+00:00"},
        "before the try": {**base, "start": (genuine.start - timedelta(days=1)).isoformat(),
                           "end": (genuine.end - timedelta(days=1)).isoformat()},
        "a second record of the try": {**base, "credits_used": 987_654, **later(2)},
    }
    forger = write_dag(f"""
        @task
        def forge(**context):
            from airflow.sdk import Variable
            from airflow_provider_namelookup.usage import store
            from airflow_provider_namelookup.usage.record import UsageRecord

            forged = {forged!r}
            keys = {{}}
            for why, fields in forged.items():
                keys[why] = store.write(UsageRecord.from_dict(fields))
            # a copy of the real record under another key, and a record of the forging task itself
            copy_key = store.KEY_PREFIX + "20261123T080000000000Z__copy"
            Variable.set(copy_key, {base!r}, serialize_json=True)
            keys["a copy under another key"] = copy_key
            ti = context["ti"]
            own = dict({base!r}, dag_id=ti.dag_id, task_id=ti.task_id, run_id=ti.run_id, ti_id=str(ti.id),
                       start=forged["a fake try id"]["start"])
            keys["its own try, a PythonOperator"] = store.write(UsageRecord.from_dict(own))
            return keys

        forge()
    """)
    assert str(forger.run().state) == "success"
    from airflow.utils.session import create_session

    now = datetime.now(UTC)
    with create_session() as session:
        every = [r for r in store.read(session, since=SINCE) if r.dag_id in (victim.dag_id, forger.dag_id)]
        counted = trusted(session, every, now=now)
    assert counted == []  # the second record of the try makes the genuine one doubtful too
    assert all(r.start.year < 2099 for r in every)  # never read: dated in the future
    with create_session() as session:
        from airflow_provider_namelookup.usage.trust import task_tries

        tries = task_tries(session, every)
    reasons = {why_not_counted(r, tries.get(r.try_key), now) for r in every}
    assert reasons >= {"no try of a Name Lookup operator has its task instance, try number and id",
                       "its try ran GenderLookupOperator, which writes no country_of_origin records",
                       "it did not run while its try ran", None}

    # without the second record of the try, the genuine one counts again
    keys = forger.xcom("forge")
    with create_session() as session:
        store_variable = store._variable_model()
        session.query(store_variable).filter(store_variable.key == keys["a second record of the try"]).delete()
    assert _read({victim.dag_id, forger.dag_id})[1] == [genuine]

    # delete_before(now) deletes the record dated in 2099 with the old ones
    with create_session() as session:
        store_variable = store._variable_model()
        assert session.query(store_variable).filter(store_variable.key == keys["dated in 2099"]).count() == 1
        store.delete_before(session, now - timedelta(days=3650))
        assert session.query(store_variable).filter(store_variable.key == keys["dated in 2099"]).count() == 0
        assert session.query(store_variable).filter(store_variable.key == store.key_of(genuine)).count() == 1


def test_a_sensors_record_spends_nothing() -> None:
    from airflow_provider_namelookup.usage.trust import TaskTry

    now = datetime.now(UTC)
    poke = UsageRecord(dag_id="d", task_id="wait", run_id="r", map_index=-1, try_number=1, ti_id="u", conn_id="c",
                       lookup="statistic", state="success", credits_used=0, requests=1, retries=0, cache_hits=None,
                       lookups=None, remaining_credits=5, start=now - timedelta(seconds=5), end=now)
    task_try = TaskTry("u", "NameLookupCreditsSensor", now - timedelta(seconds=6), now)
    assert why_not_counted(poke, task_try, now) is None
    assert why_not_counted(replace(poke, credits_used=987_654), task_try, now) == "a sensor's statistic costs nothing"
