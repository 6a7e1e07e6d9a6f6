"""What the compliance suite tells a contributor when a dialect is wrong: a failing statement's
dialect method, the methods a broken promise rests on, the statements over budget by method, and
a skip naming the capability a warehouse did not declare. Each case is SQLite's dialect with one
method broken on purpose, run through the suite's own tests over a bare DB-API connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_namelookup.testing import compliance
from airflow_provider_namelookup.testing.capabilities import Capabilities
from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse
from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect

PROMISE = "an upsert of SQLite's (a test's dialect)"


class MisspeltUpsert(SqliteDialect, name="sqlite", credit_promise=PROMISE):
    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        return super().upsert(table, columns, key, select).replace("INSERT INTO", "INSERT INTOO", 1)


class UpsertOfNoRows(SqliteDialect, name="sqlite", credit_promise=PROMISE):
    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        return super().upsert(table, columns, key, f"SELECT * FROM ({select}) AS none_of_them WHERE 1 = 0")


class ChattyReads(SqliteDialect, name="sqlite", credit_promise=PROMISE):
    def before_distinct_pass(self) -> list[str]:
        return [*super().before_distinct_pass(), *(f"SELECT {n}" for n in range(30))]


def house(tmp_path: Path, dialect: type[SqliteDialect], **options: Any) -> DbApiWarehouse:
    return DbApiWarehouse(lambda: sqlite3.connect(tmp_path / "warehouse.db", timeout=30), dialect, **options)


@pytest.fixture
def account(emulator: Any, make_account: Any) -> compliance.ComplianceAccount:
    return compliance.ComplianceAccount(emulator, make_account(credits=100))


def test_a_statement_that_fails_names_the_dialect_method_that_built_it(tmp_path: Path, account: Any) -> None:
    with pytest.raises(sqlite3.OperationalError) as failed:
        compliance.test_each_query_is_paid_once_and_a_rerun_pays_nothing(
            compliance_warehouse=house(tmp_path, MisspeltUpsert), compliance_account=account)
    (note,) = failed.value.__notes__
    assert note.startswith("the statement that failed was built by MisspeltUpsert.upsert: INSERT INTOO ")


def test_a_broken_promise_names_the_methods_it_rests_on_the_dialects_own_first_to_suspect(
        tmp_path: Path, account: Any) -> None:
    with pytest.raises(AssertionError) as broken:
        compliance.test_each_query_is_paid_once_and_a_rerun_pays_nothing(
            compliance_warehouse=house(tmp_path, UpsertOfNoRows), compliance_account=account)
    (note,) = broken.value.__notes__
    assert note.startswith("sqlite: this promise rests on the dialect's UpsertOfNoRows.upsert, ")  # its own first
    assert "UpsertOfNoRows.claim (inherited from OnConflictDialect)" in note


def test_a_run_over_the_statement_budget_names_the_methods_that_sent_its_statements(
        tmp_path: Path, account: Any) -> None:
    with pytest.raises(AssertionError, match=rf"sqlite: a first run over 100 rows sent \d+ statements \(budget "
                                             rf"{compliance.FIRST_RUN_STATEMENTS}\); by the dialect method that "
                                             r"built them: before_distinct_pass x30, "):
        compliance.test_whole_runs_keep_the_statement_budget(compliance_warehouse=house(tmp_path, ChattyReads),
                                                             compliance_account=account)


def test_the_budget_holds_sqlites_own_dialect_over_a_bare_connection(tmp_path: Path, account: Any) -> None:
    compliance.test_whole_runs_keep_the_statement_budget(compliance_warehouse=house(tmp_path, SqliteDialect),
                                                         compliance_account=account)


def test_a_capability_not_declared_skips_the_tests_that_need_it_naming_it(tmp_path: Path, account: Any) -> None:
    single = house(tmp_path, SqliteDialect, capabilities=Capabilities(concurrent_runs=False))
    with pytest.raises(pytest.skip.Exception, match=r"sqlite does not declare the capability 'concurrent_runs': "
                                                    r"runs in several threads of one process write it at once"):
        compliance.test_parallel_runs_pay_each_query_once(compliance_warehouse=single, compliance_account=account)


class ReadsReturningRows(SqliteDialect, name="sqlite", credit_promise=PROMISE):
    """Claims and stores that read back the rows they wrote (``RETURNING``), as a third party's dialect
    may, where every built-in dialect now counts them instead."""

    engine = SqliteDialect.engine.changed(claim_returning="query_hash", claim_counts_rows=False,
                                          update_returning="query_hash")  # SQLite names no alias there


def test_claims_and_stores_that_read_back_returning_rows_keep_the_promises(tmp_path: Path, account: Any) -> None:
    for promise in (compliance.test_each_query_is_paid_once_and_a_rerun_pays_nothing,
                    compliance.test_parallel_runs_pay_each_query_once):  # the second: claims held by others
        (tmp_path / promise.__name__).mkdir()
        promise(compliance_warehouse=house(tmp_path / promise.__name__, ReadsReturningRows),
                compliance_account=account)
