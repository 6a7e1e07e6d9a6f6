"""The approval example (``example_dags/namelookup_approved_enrichment.py``) with a person answering:
the DAG runs with ``dag.test()`` in this process and waits in Airflow's human-in-the-loop state; a
thread plays the approver through the REST API of a real api-server on the same metadata database
(``PATCH .../taskInstances/approve/-1/hitlDetails``, as the Required Actions page sends it)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.plugins.conftest import ApiServer
from tests.support import load_dag

pytestmark = pytest.mark.usefixtures("airflow_db")
DAG_ID = "namelookup_approved_enrichment"


@pytest.fixture
def customers(sqlite_warehouse: Any) -> Iterator[tuple[Any, str]]:
    table = sqlite_warehouse.table_name()
    sqlite_warehouse.hook.run(f"CREATE TABLE {table} (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)")
    sqlite_warehouse.insert(table, [(1, "Theresa", "DE"), (2, "Andrea", "IT"), (3, "Andrea", "DE"),
                                    (4, "Lars", None), (5, "theresa", "DE"), (6, "Giulia", "IT")])
    os.environ.update(NAMELOOKUP_WAREHOUSE_CONN_ID=sqlite_warehouse.conn_id, NAMELOOKUP_CUSTOMERS_TABLE=table)
    yield sqlite_warehouse, table
    for name in ("NAMELOOKUP_WAREHOUSE_CONN_ID", "NAMELOOKUP_CUSTOMERS_TABLE"):
        os.environ.pop(name, None)


class Approver(threading.Thread):
    """Waits for the DAG's approval request, reads it, and answers ``option`` as ``user``."""

    def __init__(self, server: ApiServer, option: str, user: str = "admin") -> None:
        super().__init__(daemon=True)
        self.server, self.option, self.user = server, option, user
        self.request: dict[str, Any] | None = None
        self.answer: httpx.Response | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 120
            while self.request is None:
                assert time.monotonic() < deadline, "no approval was asked for in 120 s"
                listed = self.server.get(f"/api/v2/dags/{DAG_ID}/dagRuns/~/hitlDetails", user="admin")
                listed.raise_for_status()
                waiting = [d for d in listed.json()["hitl_details"] if not d["response_received"]]
                if waiting:
                    self.request = waiting[0]
                else:
                    time.sleep(0.5)
            ti = self.request["task_instance"]
            self.answer = httpx.patch(
                f"{self.server.url}/api/v2/dags/{DAG_ID}/dagRuns/{ti['dag_run_id']}/taskInstances/"
                f"{ti['task_id']}/{ti['map_index']}/hitlDetails", json={"chosen_options": [self.option]},
                headers={"Authorization": f"Bearer {self.server.token(self.user)}"}, timeout=60)
        except BaseException as err:  # reported by the test
            self.error = err


def run_with(approver: Approver, airflow_db: Path) -> Any:
    handle = load_dag(airflow_db / f"{DAG_ID}.py", DAG_ID)
    approver.start()
    # auto_approve_below 1: the plan (5 credits) needs a person.
    run = handle.run(run_conf={"auto_approve_below": 1})
    approver.join(30)
    assert approver.error is None, approver.error
    return handle, run


@pytest.mark.database
def test_an_approval_starts_the_paying_run(customers: tuple[Any, str], namelookup: Any, api_server: ApiServer,
                                          airflow_db: Path, capfd: pytest.CaptureFixture[str]) -> None:
    warehouse, table = customers
    approver = Approver(api_server, "Approve")
    handle, run = run_with(approver, airflow_db)
    assert str(run.state) == "success"
    assert approver.answer is not None and approver.answer.status_code == 200, approver.answer.text
    asked = approver.request
    assert asked is not None and asked["task_instance"]["task_id"] == "approve"
    assert asked["subject"] == f"Spend 5 Name Lookup credits on {table}?"
    assert asked["options"] == ["Approve", "Reject"]
    assert "**5 credits** to enrich" in asked["body"] and "**100 credits** left; 95 after this run" in asked["body"]
    assert "| 2 | Andrea | IT |" in asked["body"]  # the sample of rows
    assert (handle.state("approve"), handle.state("auto_approved"), handle.state("enrich")) == (
        "success", "skipped", "success")
    assert 100 - namelookup.remaining() == 5
    assert len(warehouse.rows(f"SELECT customer_id FROM {table}_gender WHERE status = 'ok'")) == 6

    # The token (the statistic call's and the lookups') shows nowhere: not whole, not in halves.
    printed = capfd.readouterr()
    seen = [printed.out, printed.err, repr(asked), *(repr(handle.xcom(t)) for t in ("plan", "review", "enrich"))]
    token = namelookup.token
    for piece in (token, token[:len(token) // 2], token[len(token) // 2:]):
        assert [text for text in seen if piece in text] == []


@pytest.mark.database
def test_a_rejection_spends_nothing(customers: tuple[Any, str], namelookup: Any, api_server: ApiServer,
                                   airflow_db: Path, emulator: Any) -> None:
    warehouse, table = customers
    before = emulator.stats()
    approver = Approver(api_server, "Reject")
    handle, _ = run_with(approver, airflow_db)
    assert approver.answer is not None and approver.answer.status_code == 200, approver.answer.text
    assert (handle.state("approve"), handle.state("auto_approved"), handle.state("enrich")) == (
        "success", "skipped", "skipped")
    assert namelookup.remaining() == 100  # the emulator's own count: not one credit
    after = emulator.stats()  # and not one name looked up, for anyone
    assert (after["queries_processed"], after["credits_charged"]) == (before["queries_processed"],
                                                                      before["credits_charged"])
    assert warehouse.rows(f"SELECT COUNT(*) FROM {table}") == [(6,)]


def test_a_viewer_may_not_answer(customers: tuple[Any, str], namelookup: Any, api_server: ApiServer,
                                 airflow_db: Path) -> None:
    """Who may approve is Airflow's rule (HITL_DETAIL PUT): a viewer is refused, the run waits on, and
    then an admin's rejection ends it."""
    viewer = Approver(api_server, "Approve", user="viewer")
    admin = Approver(api_server, "Reject")

    def viewer_then_admin() -> None:
        viewer.run()
        admin.run()

    both = threading.Thread(target=viewer_then_admin, daemon=True)
    handle = load_dag(airflow_db / f"{DAG_ID}.py", DAG_ID)
    both.start()
    handle.run(run_conf={"auto_approve_below": 1})
    both.join(30)
    assert viewer.error is None and admin.error is None
    assert viewer.answer is not None and viewer.answer.status_code == 403
    assert admin.answer is not None and admin.answer.status_code == 200
    assert handle.state("enrich") == "skipped" and namelookup.remaining() == 100


def test_whoever_triggers_a_run_cannot_raise_the_auto_approval(customers: tuple[Any, str], namelookup: Any,
                                                               airflow_db: Path, emulator: Any) -> None:
    """Issue 32, F3: ``run_conf={"auto_approve_below": 10**9}`` skipped the approval and spent 600
    credits. The param's maximum refuses such a run before any task starts."""
    handle = load_dag(airflow_db / f"{DAG_ID}.py", DAG_ID)
    before = emulator.stats()
    with pytest.raises(Exception, match="auto_approve_below") as refused:
        handle.run(run_conf={"auto_approve_below": 10**9})
    assert "500" in str(refused.value)  # the ceiling it is held to
    after = emulator.stats()
    assert (after["queries_processed"], after["credits_charged"]) == (before["queries_processed"],
                                                                      before["credits_charged"])
    assert namelookup.remaining() == 100


def test_the_review_holds_to_the_ceiling_whatever_it_is_handed(customers: tuple[Any, str], namelookup: Any,
                                                               airflow_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    """Were the param's schema bypassed (an Airflow whose conf skips validation), ``review`` still
    asks a person for a plan at or above the ceiling."""
    from airflow.sdk import Param

    monkeypatch.setenv("NAMELOOKUP_AUTO_APPROVE_CEILING", "3")
    handle = load_dag(airflow_db / f"{DAG_ID}.py", DAG_ID)  # the ceiling is read when the DAG is parsed
    handle.dag.params["auto_approve_below"] = Param(10**9, type="integer")  # no maximum any more
    handle.run(mark_success_pattern="^(approve|enrich)$")
    assert handle.state("auto_approved") == "skipped"  # 5 credits, ceiling 3: a person is asked
    assert namelookup.remaining() == 100
