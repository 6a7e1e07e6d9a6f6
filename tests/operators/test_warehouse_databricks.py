"""The whole-run tests of PostgreSQL and DuckDB on Databricks SQL's statements, run by a local
Spark 3.5.6 on Apache Iceberg 1.10.2 tables behind the real ``DatabricksSqlHook`` (see
``tests/warehouse/spark_dbapi.py`` for what is real and what is adapted).

Spark takes about a second a statement, so the ``warehouse`` fixture (every warehouse test)
does not include it: these run the issue's list on it, each the same test as the other engines'.

Example::

    pytest tests/operators/test_warehouse_databricks.py
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.operators import test_warehouse as whole

pytestmark = [pytest.mark.usefixtures("airflow_db"), pytest.mark.database]


def test_first_run_exact_rerun_free_changed_names_and_invalid_rows(databricks_warehouse: Any, write_dag: Any,
                                                                   namelookup: Any) -> None:
    whole.test_table_enrichment_is_correct_frugal_and_incremental(databricks_warehouse, write_dag, namelookup)
