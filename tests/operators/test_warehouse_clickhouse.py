"""The whole-run tests on ClickHouse: its statements run by chdb (the ClickHouse 26.9 engine in the test
process) behind the real ``ClickHouseHook`` of apache-airflow-providers-clickhousedb, whose
clickhouse-connect client is replaced by ``tests/warehouse/chdb_client.py``; the dialect is found by
this checkout's entry point, as a third party's package registers one (docs: Adding a warehouse).

Each is the same test as the other engines': a DAG run (``dag.test()``) first paying exactly the
distinct names, a rerun paying 0, changed names asked again, invalid rows reported; a budget that fails
whole or spends part; parallel runs over ``where`` shards paying each query once (ClickHouse's claims
queue behind the answers table's writer lease, their lookups do not).

Example::

    pytest tests/operators/test_warehouse_clickhouse.py
"""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.contrib.clickhouse import ClickHouseDialect
from tests.operators.test_warehouse import (  # noqa: F401  (run here on ClickHouse)
    test_a_budget_fails_whole_or_spends_part_and_the_next_run_the_rest,
    test_table_enrichment_is_correct_frugal_and_incremental,
)
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

house = warehouses("clickhouse")
"""ClickHouse for the first run and the budget, imported from test_warehouse.py, which runs them on SQLite
(``warehouse`` leaves ClickHouse out)."""


def test_the_dialect_comes_from_the_entry_point(clickhouse_warehouse: Any) -> None:
    from airflow_provider_namelookup.warehouse.dialects import WAREHOUSES, registered

    assert "clickhouse" not in [w.name for w in WAREHOUSES]  # not built in
    found = {w.name: w for w in registered()}
    assert "clickhousedb" not in found  # one warehouse for the dialect's two entry points
    assert found["clickhouse"].engines == ("clickhouse", "clickhousedb")
    assert found["clickhouse"].entry_point.group == "airflow_provider_namelookup.warehouses"
    assert type(clickhouse_warehouse.dialect) is ClickHouseDialect  # the hook reports "clickhousedb"


def test_parallel_shards_share_answers(clickhouse_warehouse: Any, namelookup: Any) -> None:
    from tests.operators import test_warehouse_concurrency as concurrency  # Airflow 3's structlog: not at import

    concurrency.test_country_of_origin_shards_share_answers(clickhouse_warehouse, namelookup)


def test_parallel_runs_over_tables_with_shared_names_pay_once(clickhouse_warehouse: Any, namelookup: Any,
                                                              emulator: Any) -> None:
    from tests.operators import test_warehouse_concurrency as concurrency

    concurrency.test_tables_with_shared_names_pay_once_across_tables(clickhouse_warehouse, namelookup, emulator)
