"""The warehouse connection killed mid-run (issue 19, item 18): while claiming, while storing
answers, while filling. The task fails with a clear error, no paid answer is lost, and the
next run pays only for the rest. On PostgreSQL (``pg_terminate_backend``) and MariaDB (``KILL``)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from airflow_provider_namelookup.warehouse.answers import AnswersTable
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.valuemap import ValueMap

pytestmark = pytest.mark.usefixtures("airflow_db")

PHASES = {"claiming": (AnswersTable, "_claim"), "storing": (AnswersTable, "_store"),
          "filling": (ValueMap, "resolve")}


def _kill(session: WarehouseSession, warehouse: Any) -> None:
    """End the session's own connection from another one, as an administrator would."""
    if warehouse.kind == "postgres":
        pid = session.fetchall("SELECT pg_backend_pid()")[0][0]
        warehouse.hook.run(f"SELECT pg_terminate_backend({pid})")
    else:
        pid = session.fetchall("SELECT CONNECTION_ID()")[0][0]
        warehouse.hook.run(f"KILL {pid}")


@pytest.mark.database
@pytest.mark.parametrize("phase", PHASES)
def test_a_connection_killed_mid_run_loses_no_paid_answer(warehouse: Any, namelookup: Any, emulator: Any,
                                                          monkeypatch: pytest.MonkeyPatch, phase: str) -> None:
    if warehouse.kind == "bigquery":
        pytest.skip("bigquery has no connection to end: every statement is an HTTP request of its own "
                    "(test_warehouse_bigquery.py cuts the store's request on the network instead)")
    if warehouse.kind not in ("postgres", "mariadb"):
        pytest.skip(f"{warehouse.kind} runs in the task's process (or is emulated in it): no server to end the "
                    "connection (Databricks on Spark: tests/operators/test_warehouse_databricks.py)")
    rows = [(i, f"Name{i % 150:03d}", None) for i in range(1, 401)]
    table = warehouse.create_customers(rows)
    namelookup.set_credits(1000)
    owner, method = PHASES[phase]
    real = getattr(owner, method)
    killed: list[str] = []

    def killing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not killed:
            killed.append(phase)
            _kill(self.session, warehouse)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, method, killing)
    operator = SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                       key_column="customer_id", name_column="name", check_remaining_credits=False)
    with pytest.raises(Exception, match=r"connection to the warehouse 'warehouse_.*' was lost"):
        operator.execute({})
    assert killed == [phase]
    paid = 1000 - namelookup.remaining()
    stored = warehouse.rows(f"SELECT COUNT(*) FROM {warehouse.answers_table} WHERE state = 'answered'")[0][0]
    assert stored == paid  # every answer paid for is in the answers table
    assert warehouse.rows(f"SELECT COUNT(*) FROM {warehouse.answers_table} WHERE state = 'claimed'")[0][0] == 0

    monkeypatch.setattr(owner, method, real)
    summary = SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                      key_column="customer_id", name_column="name",
                                      check_remaining_credits=False).execute({})
    assert 1000 - namelookup.remaining() == 150  # the retry paid only for the rest: each name once in all
    assert summary["lookups"] == 150 - paid
    filled = warehouse.rows(f"SELECT COUNT(*), SUM(credits_used) FROM {table}_gender WHERE status = 'ok'")[0]
    assert tuple(int(v) for v in filled) == (400, 150)
