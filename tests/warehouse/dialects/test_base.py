"""The dialect package: the one place of SQL spellings, chosen by the connection's engine."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import airflow_provider_namelookup
from airflow_provider_namelookup.warehouse.dialects import DIALECTS, UnsupportedWarehouse, dialect_for
from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
from airflow_provider_namelookup.warehouse.schema import (
    ANSWER_BOOKKEEPING,
    ANSWER_RESULTS,
    BOOKKEEPING,
    SOURCE_COUNTRY,
    SOURCE_NAME,
)

PACKAGE = Path(airflow_provider_namelookup.__file__).parent
ENGINE_NAMES = {"sqlite", "postgresql", "postgres", "mysql", "mariadb", "duckdb", "snowflake", "bigquery",
                "databricks", "redshift", "mssql", "sqlserver", "trino", "oracle"}


def _strings_outside_docstrings(tree: ast.AST) -> list[ast.Constant]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_engine_name_is_written_outside_the_dialects_package() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[:2] == ("warehouse", "dialects") or relative.parts[0] == "emulator":
            continue
        for node in _strings_outside_docstrings(ast.parse(path.read_text())):
            if node.value.strip().lower() in ENGINE_NAMES:
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_dialects_package_imports_in_no_circle() -> None:
    import subprocess
    import sys

    for dialect in DIALECTS:  # each module imports on its own, first, in a fresh interpreter
        module = dialect.__module__
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True)


def _hook(engine: str, conn_type: str | None = None) -> Any:
    return SimpleNamespace(dialect_name=engine, conn_type=conn_type or engine, placeholder="?")


def test_a_dialect_is_chosen_by_the_hook_s_engine_and_an_unknown_one_is_refused_by_name() -> None:
    assert dialect_for(_hook("sqlite")).name == "sqlite"
    assert dialect_for(_hook("postgresql", "postgres")).name == "postgresql"
    assert dialect_for(_hook("default", "mysql")).name == "mysql"  # no SQLAlchemy URL: the connection type
    with pytest.raises(UnsupportedWarehouse) as info:
        dialect_for(_hook("oracle"))
    message = str(info.value)
    assert "'oracle'" in message and all(d.name in message for d in DIALECTS)


def test_every_dialect_names_its_provider_and_its_credit_promise() -> None:
    for dialect in DIALECTS:
        assert dialect.provider.startswith("apache-airflow-providers-") and dialect.credit_promise, dialect.name
        assert set(dialect.types) == set(WarehouseDialect.types), dialect.name


def test_the_engine_s_own_column_names_are_reserved_nowhere() -> None:
    """They are written unquoted (base.py), so no supported engine may reserve one."""
    from sqlalchemy.dialects.mysql.reserved_words import RESERVED_WORDS_MARIADB, RESERVED_WORDS_MYSQL
    from sqlalchemy.dialects.postgresql.base import RESERVED_WORDS as POSTGRES
    from sqlalchemy.dialects.sqlite.base import SQLiteIdentifierPreparer

    ours = {c.name for c in (*BOOKKEEPING, *ANSWER_BOOKKEEPING, *ANSWER_RESULTS)} | {
        SOURCE_NAME, SOURCE_COUNTRY, "query_hash", "raw_name", "raw_country", "first_key", "chunk", "batch",
        "charge_key", "price_here", "carrier", "price", "total"}
    for reserved in (POSTGRES, RESERVED_WORDS_MYSQL, RESERVED_WORDS_MARIADB, SQLiteIdentifierPreparer.reserved_words):
        assert not ours & {w.lower() for w in reserved}


def test_values_of_the_engine_become_literals_and_author_sql_keeps_its_percent() -> None:
    dialect = WarehouseDialect(_hook("x"))
    assert dialect.literal("it's") == "'it''s'" and dialect.literal(None) == "NULL" and dialect.literal(2) == "2"
    percent = WarehouseDialect(SimpleNamespace(placeholder="%s", dialect=None))
    assert percent.user_sql("id % 8 = 3", with_params=True) == "id %% 8 = 3"
    assert percent.user_sql("id % 8 = 3", with_params=False) == "id % 8 = 3"
    assert dialect.user_sql("id % 8 = 3", with_params=True) == "id % 8 = 3"  # ? markers: nothing to escape
