"""The engines of the first release, SQLite and MySQL/MariaDB, on recorded runs: every statement
parses in sqlglot's dialect of the engine, and a 1,000,000-row run sends at most 40 statements.
(PostgreSQL's driver paths, ``COPY`` and a named cursor, cannot be recorded: the benchmarks count
its statements.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.warehouse.dialects.parsing import check_every_statement_parses, check_statement_budget


@pytest.mark.parametrize("engine", ["sqlite", "mysql"])
def test_every_statement_of_a_run_parses(engine: str, emulator: Any, make_account: Any) -> None:
    check_every_statement_parses(engine, engine, emulator, make_account)


@pytest.mark.parametrize("engine", ["sqlite", "mysql"])
def test_a_million_row_run_sends_at_most_40_statements(engine: str, emulator: Any, make_account: Any,
                                                       record_property: Any) -> None:
    check_statement_budget(engine, emulator, make_account, record_property)
