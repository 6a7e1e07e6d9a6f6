"""``max_credits_scope="dag_run"``: an approved amount is spent once per DAG run, however often the
task runs (issue 32, F4: a retry or a clear of ``enrich`` spent the approved 200 again, 300 in all).

What earlier tries spent is read from the answers they stored in the warehouse (their
``answered_by`` ends in the task instance's id), so it holds across processes and workers; the
DAG runs here are real (``dag.test()``), the service is the emulator, the warehouse SQLite and
PostgreSQL."""

from __future__ import annotations

from typing import Any

import pendulum
import pytest

pytestmark = pytest.mark.usefixtures("airflow_db")

FAILS_AFTER_ITS_RUN = """
from datetime import timedelta

class FailsOnce(SqlGenderLookupOperator):
    '''The first try does all its work (pays, stores, fills), then fails: a lost worker, say.'''

    def execute(self, context):
        summary = super().execute(context)
        if context["ti"].try_number == 1:
            raise RuntimeError("the worker went away after its run")
        return summary
"""


def _customers(warehouse: Any, first: int, count: int) -> list[tuple[int, str, None]]:
    return [(key, f"Name{key:04d}", None) for key in range(first, first + count)]


@pytest.mark.parametrize("scope, spent_in_all", [("dag_run", 200), ("try", 300)])
def test_a_retry_spends_only_what_earlier_tries_left(scope: str, spent_in_all: int, sqlite_warehouse: Any,
                                                     namelookup: Any, write_dag: Any) -> None:
    namelookup.set_credits(1_000)
    table = sqlite_warehouse.create_customers(_customers(sqlite_warehouse, 0, 200))
    added = _customers(sqlite_warehouse, 200, 100)
    dag = write_dag(FAILS_AFTER_ITS_RUN + f"""
def add_rows(context):
    from airflow.sdk import BaseHook
    hook = BaseHook.get_connection({sqlite_warehouse.conn_id!r}).get_hook()
    hook.insert_rows({table!r}, {added!r})

FailsOnce(task_id="enrich", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r}, key_column="customer_id",
          name_column="name", max_credits=200, max_credits_scope={scope!r}, on_insufficient_credits="partial",
          retries=1, retry_delay=timedelta(0), on_retry_callback=add_rows)
""")
    assert str(dag.run().state) == "success"
    assert dag.last_run.get_task_instance("enrich").try_number == 2
    assert 1_000 - namelookup.remaining() == spent_in_all
    enriched = sqlite_warehouse.rows(f"SELECT COUNT(*) FROM {table}_gender WHERE status = 'ok'")[0][0]
    assert enriched == spent_in_all  # with dag_run, the 100 rows added wait for the next DAG run


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_cleared_task_spends_only_what_the_run_has_left(kind: str, request: pytest.FixtureRequest,
                                                          namelookup: Any, write_dag: Any) -> None:
    """A DAG run of the same run id made again (``dag.test()`` at the same logical date clears the
    old one and runs every task anew, as a clear does): ``dag_run`` pays nothing more; a task
    whose ``max_credits`` is per try pays its budget again."""
    warehouse = request.getfixturevalue(f"{kind}_warehouse")
    namelookup.set_credits(2_000)
    table = warehouse.create_customers(_customers(warehouse, 0, 300))
    other = warehouse.create_customers(_customers(warehouse, 1_000, 300))
    common = (f"conn_id={warehouse.conn_id!r}, key_column='customer_id', name_column='name', max_credits=120, "
              "on_insufficient_credits='partial'")
    dag = write_dag(f"""
SqlGenderLookupOperator(task_id="per_run", source_table={table!r}, max_credits_scope="dag_run", {common})
SqlGenderLookupOperator(task_id="per_try", source_table={other!r}, {common})
""")
    when = pendulum.datetime(2026, 11, 20, tz="UTC")
    first = dag.run(logical_date=when, run_after=when)
    assert 2_000 - namelookup.remaining() == 240
    again = dag.run(logical_date=when, run_after=when)
    assert first.run_id == again.run_id
    assert warehouse.rows(f"SELECT COUNT(*) FROM {table}_gender WHERE status = 'ok'")[0][0] == 120
    assert warehouse.rows(f"SELECT COUNT(*) FROM {other}_gender WHERE status = 'ok'")[0][0] == 240
    assert 2_000 - namelookup.remaining() == 360
    later = pendulum.datetime(2026, 11, 21, tz="UTC")
    dag.run(logical_date=later, run_after=later)  # another DAG run: a budget of its own
    assert warehouse.rows(f"SELECT COUNT(*) FROM {table}_gender WHERE status = 'ok'")[0][0] == 240


def test_a_scope_that_is_not_one_of_the_two_fails_when_the_dag_is_parsed() -> None:
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    with pytest.raises(ValueError, match="max_credits_scope must be one of try, dag_run, got 'run'"):
        SqlGenderLookupOperator(task_id="t", conn_id="w", source_table="t", key_column="k", name_column="n",
                                max_credits_scope="run")
