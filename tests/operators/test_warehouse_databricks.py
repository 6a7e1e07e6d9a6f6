"""The whole-run tests of PostgreSQL and DuckDB on Databricks SQL's statements, run by a local
Spark 3.5.6 on Apache Iceberg 1.10.2 tables behind the real ``DatabricksSqlHook`` (see
``tests/warehouse/spark_dbapi.py`` for what is real and what is adapted).

Spark takes about a second a statement, so the ``warehouse`` fixture (every warehouse test)
does not include it: these run the issue's list on it, each the same test as the other engines'.
The compliance suite runs on it in tests/warehouse/test_compliance_databricks.py (its statement
budget instead of ``test_statements_do_not_grow_with_rows``, which holds the same promise).

Example (Spark and Iceberg's jars installed once; without them these tests are skipped)::

    make spark
    pytest tests/operators/test_warehouse_databricks.py
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from airflow_provider_namelookup.warehouse.answers import AnswersTable
from tests.operators.test_warehouse import (  # noqa: F401  (run here on Databricks)
    test_a_budget_fails_whole_or_spends_part_and_the_next_run_the_rest,
    test_country_of_origin_table,
    test_plan_only_counts_credits_and_creates_nothing,
    test_table_enrichment_is_correct_frugal_and_incremental,
)
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

house = warehouses("databricks")
warehouse = warehouses("databricks", name="warehouse")
"""The warehouse of the tests imported from test_warehouse.py (``warehouse``: of its country-of-origin test,
which runs there on every engine of the ``warehouse`` fixture)."""


def test_a_connection_lost_mid_store_loses_no_paid_answer(databricks_warehouse: Any, namelookup: Any, emulator: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The network drops the run's connection as it stores answers (the adapter's stand-in for a
    server ending it): the task fails saying so, every answer paid for is stored (the store runs
    again on a new connection), and the next run pays only for the rest."""
    house = databricks_warehouse
    table = house.create_customers([(i, f"Name{i % 150:03d}", None) for i in range(1, 401)])
    namelookup.set_credits(1000)
    real = AnswersTable._store
    dropped: list[Any] = []

    def dropping(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not dropped:
            dropped.append(self.session.conn)
            self.session.conn.kill()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AnswersTable, "_store", dropping)

    def run() -> dict[str, Any]:
        return SqlGenderLookupOperator(task_id="enrich", conn_id=house.conn_id, source_table=table,
                                       key_column="customer_id", name_column="name",
                                       check_remaining_credits=False).execute({})

    with pytest.raises(Exception, match=r"connection to the warehouse 'warehouse_databricks' was lost"):
        run()
    assert len(dropped) == 1
    paid = 1000 - namelookup.remaining()
    assert paid > 0
    stored = house.rows(f"SELECT COUNT(*) FROM {house.answers_table} WHERE state = 'answered'")[0][0]
    assert stored == paid  # every answer paid for is in the answers table
    assert house.rows(f"SELECT COUNT(*) FROM {house.answers_table} WHERE state = 'claimed'")[0][0] == 0

    monkeypatch.setattr(AnswersTable, "_store", real)
    summary = run()
    assert 1000 - namelookup.remaining() == 150 and summary["lookups"] == 150 - paid
    filled = house.rows(f"SELECT COUNT(*), SUM(credits_used) FROM {table}_gender WHERE status = 'ok'")[0]
    assert tuple(int(v) for v in filled) == (400, 150)
    assert [r[1] for r in house.rows("SHOW TABLES") if "namelookup_" in r[1]] == []  # staging tables dropped
