"""Every warehouse on recorded runs (:mod:`.recording`): every statement a whole run sends parses
in sqlglot's dialect of the warehouse, and a 1,000,000-row run sends at most 40 statements (a local
warehouse's continuous answer stores aside).

For Redshift and SQL Server, which no engine here runs, this and the compliance suite's scenarios
recorded (test_compliance_recorded.py) are all the tests can do; the others are also run whole by
the table operators' tests and the compliance suite (BigQuery on bqemulator, Databricks on a local
Spark, Snowflake on fakesnow).
PostgreSQL's driver paths (``COPY``, a named cursor) cannot be recorded: the benchmarks count
its statements.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.warehouse.dialects.parsing import check_every_statement_parses, check_statement_budget

RECORDED = {"sqlite": "sqlite", "mysql": "mysql", "duckdb": "duckdb", "snowflake": "snowflake",
            "bigquery": "bigquery", "databricks": "databricks", "redshift": "redshift", "mssql": "tsql"}
"""Connection type → sqlglot's dialect of the warehouse."""


@pytest.mark.parametrize(("conn_type", "read"), RECORDED.items())
def test_every_statement_of_a_run_parses(conn_type: str, read: str, emulator: Any, make_account: Any) -> None:
    check_every_statement_parses(conn_type, read, emulator, make_account)


@pytest.mark.parametrize("conn_type", RECORDED)
def test_a_million_row_run_sends_at_most_40_statements(conn_type: str, emulator: Any, make_account: Any,
                                                       record_property: Any) -> None:
    check_statement_budget(conn_type, emulator, make_account, record_property)
