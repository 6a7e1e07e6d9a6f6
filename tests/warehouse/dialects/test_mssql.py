"""SQL Server, which no test here can reach: every statement of a run parses in sqlglot's
``tsql`` dialect, and a 1,000,000-row run sends at most 40 statements."""

from __future__ import annotations

from typing import Any

from tests.warehouse.dialects.parsing import check_every_statement_parses, check_statement_budget


def test_every_statement_of_a_run_parses(emulator: Any, make_account: Any) -> None:
    check_every_statement_parses("mssql", "tsql", emulator, make_account)


def test_a_million_row_run_sends_at_most_40_statements(emulator: Any, make_account: Any,
                                                       record_property: Any) -> None:
    check_statement_budget("mssql", emulator, make_account, record_property)
