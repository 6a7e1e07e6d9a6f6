"""Choosing a warehouse's dialect module, and keeping every engine's spelling inside this package."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_namelookup.warehouse.dialects import DIALECTS, UnsupportedWarehouse, dialect_for

PACKAGE = Path(__file__).resolve().parents[3] / "airflow_provider_namelookup"
DIALECTS_DIR = PACKAGE / "warehouse" / "dialects"
ENGINE_NAMES = {name.lower() for d in DIALECTS for name in (d.name, *d.engines)} | {"postgres", "mariadb", "tsql"}


def hook(conn_type: str, dialect_name: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(conn_type=conn_type, dialect_name=dialect_name, placeholder="%s")


@pytest.mark.parametrize(("conn_type", "dialect_name", "chosen"), [
    ("sqlite", "sqlite", "sqlite"), ("postgres", "postgresql", "postgresql"), ("mysql", "mysql", "mysql"),
    ("duckdb", "duckdb", "duckdb"), ("snowflake", "snowflake", "snowflake"), ("redshift", None, "redshift"),
    ("google_cloud_platform", "default", "bigquery"), ("databricks", None, "databricks"), ("mssql", "mssql", "mssql"),
])
def test_each_warehouse_gets_its_module(conn_type: str, dialect_name: str | None, chosen: str) -> None:
    assert dialect_for(hook(conn_type, dialect_name)).name == chosen


def test_a_warehouse_the_engine_cannot_serve_is_refused_naming_the_supported_ones() -> None:
    with pytest.raises(UnsupportedWarehouse) as refused:
        dialect_for(hook("oracle", "oracle"))
    message = str(refused.value)
    assert "'oracle'" in message
    for dialect in DIALECTS:
        assert dialect.name in message


def test_every_module_names_its_provider_and_credit_promise() -> None:
    for dialect in DIALECTS:
        assert dialect.provider.startswith("apache-airflow-providers-") and len(dialect.credit_promise) > 40


def _compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants naming an engine that take part in a comparison (``==``, ``in``, ``match``)."""
    found = []
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.match_case):
            operands = [node.pattern]
        for operand in operands:
            for leaf in ast.walk(operand):
                value = getattr(leaf, "value", None)
                if isinstance(value, str) and value.lower() in ENGINE_NAMES:
                    found.append((leaf.lineno, value))
    return found


def test_no_engine_name_is_compared_outside_the_dialects_package() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if DIALECTS_DIR in path.parents:
            continue
        offenders += [f"{path.relative_to(PACKAGE)}:{line}: {name!r}"
                      for line, name in _compared_names(ast.parse(path.read_text()))]
    assert offenders == [], "engine-specific decisions belong in warehouse/dialects/: " + ", ".join(offenders)


def test_the_check_finds_a_comparison() -> None:
    assert _compared_names(ast.parse("if hook.dialect_name == 'postgresql': pass")) == [(1, "postgresql")]
    assert _compared_names(ast.parse("x = kind in ('duckdb', 'x')")) == [(1, "duckdb")]
