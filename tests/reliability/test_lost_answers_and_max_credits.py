"""``max_credits`` bounds what the service may charge when answers are lost after the charge (issue 48,
item 2). The emulator's ``drop_after`` fault processes a request in full, charges it, then drops the
connection: the service has no idempotency key, so sending the request again may charge it again.

Before, a run over 40 distinct names with ``max_credits=40`` and half the answers lost was charged
120 and succeeded, its XCom saying ``credits_used: 40``. Every request that may have been charged now
counts against ``max_credits`` (of the try, or of the DAG run with ``max_credits_scope="dag_run"``):
a run stops before a request could take the charged-or-maybe-charged total past it, and says so in
one line. Real DAG runs (``dag.test()``), the emulator over loopback, SQLite."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.usage.test_recording import records_of

pytestmark = pytest.mark.usefixtures("airflow_db")

NAMES = [(key, f"Lost{key:03d}", None) for key in range(1, 41)]
"""40 distinct names: one array request of 40 lookups, 40 credits."""


def _account(emulator: Any, make_account: Any, conn_id: str, **extra: Any) -> str:
    token = make_account(credits=1_000)
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(
        {"conn_type": "namelookup", "host": emulator.url, "password": token,
         "extra": {"max_retries": 5, "backoff_base": 0.005, **extra}})
    return token


def _enrich(warehouse: Any, table: str, conn_id: str, **extra: Any) -> str:
    args = {"conn_id": warehouse.conn_id, "source_table": table, "key_column": "customer_id",
            "name_column": "name", "namelookup_conn_id": conn_id, **extra}
    return "SqlGenderLookupOperator(task_id='enrich', " + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def _logged(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    captured = capfd.readouterr()
    return captured.out + captured.err + caplog.text


def _said(logged: str) -> set[str]:
    """The provider's lines that say why the run stopped (each once, however often the log is echoed)."""
    return {line[line.index("Stopped:"):] for line in logged.splitlines() if "Stopped:" in line}


def test_a_lost_answer_is_not_sent_again_past_max_credits(sqlite_warehouse: Any, emulator: Any, make_account: Any,
                                                          write_dag: Any, capfd: pytest.CaptureFixture[str],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Every answer lost after its charge: the request of 40 lookups was charged 40, and sending it
    again could charge 40 more, past ``max_credits=40``; the run stops at 40 and the task fails
    (``on_insufficient_credits="fail"``), saying why in one line. Before: six attempts, 240 charged."""
    token = _account(emulator, make_account, "nl_lossy")
    table = sqlite_warehouse.create_customers(NAMES)
    dag = write_dag(_enrich(sqlite_warehouse, table, "nl_lossy", max_credits=40, check_remaining_credits=False))
    capfd.readouterr()
    emulator.set_faults(drop_after=1.0)
    dag.run()
    emulator.set_faults()
    assert dag.state("enrich") == "failed"
    assert 1_000 - emulator.state.remaining_credits(token) == 40  # not 240
    logged = _logged(capfd, caplog)
    said = _said(logged)
    assert len(said) == 1, said
    assert all(words in next(iter(said)) for words in (
        "stopped before max_credits=40", "40 credits may have been charged for answers lost after their request was "
        "sent", "no answer was received"))
    assert "Retrying" not in logged and "Another call failed" not in logged  # nothing else said about it


def test_partial_spends_up_to_max_credits_and_counts_what_lost_answers_may_cost(
        sqlite_warehouse: Any, emulator: Any, make_account: Any, write_dag: Any) -> None:
    """``on_insufficient_credits="partial"``: the run stops sending at the budget and succeeds; what was
    not answered waits for the next run, and the summary counts the credits the lost answers may have
    cost beside those of the answers received."""
    token = _account(emulator, make_account, "nl_lossy_partial")
    table = sqlite_warehouse.create_customers(NAMES)
    dag = write_dag(_enrich(sqlite_warehouse, table, "nl_lossy_partial", max_credits=40,
                            on_insufficient_credits="partial", check_remaining_credits=False))
    emulator.set_faults(drop_after=1.0)
    dag.run()
    emulator.set_faults()
    assert dag.state("enrich") == "success"
    summary = dag.xcom("enrich")
    assert (summary["credits_used"], summary["credits_maybe_charged"], summary["rows_deferred"]) == (0, 40, 40)
    assert 1_000 - emulator.state.remaining_credits(token) == 40
    assert sqlite_warehouse.rows(f"SELECT COUNT(*) FROM {table}_gender WHERE status = 'ok'")[0][0] == 0
    [record] = records_of(dag.dag_id)  # the credits view's record of the try counts them too
    assert (record.credits_used, record.credits_maybe_charged) == (0, 40)


def test_a_retry_in_the_dag_run_scope_counts_what_lost_answers_may_have_cost(
        sqlite_warehouse: Any, emulator: Any, make_account: Any, write_dag: Any) -> None:
    """``max_credits_scope="dag_run"``: the first try's lost answers are kept in the answers table as
    maybe charged, so the retry finds nothing left of ``max_credits`` and spends nothing. Before: each
    try charged 240."""
    token = _account(emulator, make_account, "nl_lossy_run")
    table = sqlite_warehouse.create_customers(NAMES)
    dag = write_dag(_enrich(sqlite_warehouse, table, "nl_lossy_run", max_credits=40, max_credits_scope="dag_run",
                            check_remaining_credits=False, retries=1, retry_delay=0))
    emulator.set_faults(drop_after=1.0)
    dag.run()
    emulator.set_faults()
    assert dag.state("enrich") == "failed"
    assert dag.last_run.get_task_instance("enrich").try_number == 2
    assert 1_000 - emulator.state.remaining_credits(token) == 40  # the second try sent nothing
    answers = sqlite_warehouse.answers_table
    assert sqlite_warehouse.rows(f"SELECT state, credits FROM {answers} WHERE state <> 'answered'") == [("lost", 40)]


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_with_half_the_answers_lost_the_charge_stays_within_max_credits(
        seed: int, sqlite_warehouse: Any, emulator: Any, make_account: Any, write_dag: Any) -> None:
    """The audit's run: 40 names, ``max_credits=40``, half the answers lost after their charge; here in
    four requests of 10 at once, so that some are answered and some lost. Whatever the draws, the
    service charges at most ``max_credits``, and the summary counts every credit it charged. Before:
    charged 120, the XCom saying ``credits_used: 40``."""
    token = _account(emulator, make_account, f"nl_half_{seed}", batch_size=10)
    table = sqlite_warehouse.create_customers(NAMES)
    dag = write_dag(_enrich(sqlite_warehouse, table, f"nl_half_{seed}", max_credits=40,
                            on_insufficient_credits="partial"))
    lost_before = emulator.stats()["credits_lost_after_charge"]
    emulator.set_faults(drop_after=0.5, seed=seed)
    dag.run()
    emulator.set_faults()
    assert dag.state("enrich") == "success"
    charged = 1_000 - emulator.state.remaining_credits(token)
    summary = dag.xcom("enrich")
    assert emulator.stats()["credits_lost_after_charge"] > lost_before  # the fault struck
    assert charged <= 40
    assert summary["credits_used"] <= charged <= summary["credits_used"] + summary["credits_maybe_charged"]
    ok = sqlite_warehouse.rows(f"SELECT COUNT(*) FROM {table}_gender WHERE status = 'ok'")[0][0]
    assert ok == summary["credits_used"] and ok + summary["rows_deferred"] == 40
