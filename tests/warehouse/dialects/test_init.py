"""Choosing a warehouse's dialect module (loaded when first used), what to install for a missing
provider, and keeping every engine's spelling inside the dialects package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_namelookup.warehouse.dialects import (
    WAREHOUSES,
    UnsupportedWarehouse,
    all_dialects,
    dialect_for,
    install_hint,
)

PACKAGE = Path(__file__).resolve().parents[3] / "airflow_provider_namelookup"
DIALECTS_DIR = PACKAGE / "warehouse" / "dialects"
ENGINE_NAMES = {name.lower() for w in WAREHOUSES for name in (w.name, *w.engines)} | {"tsql", "trino", "oracle"}


def hook(conn_type: str, dialect_name: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(conn_type=conn_type, dialect_name=dialect_name, placeholder="%s")


@pytest.mark.parametrize(("conn_type", "dialect_name", "chosen"), [
    ("sqlite", "sqlite", "sqlite"), ("postgres", "postgresql", "postgresql"), ("mysql", "mysql", "mysql"),
    ("mysql", "default", "mysql"),  # no SQLAlchemy URL: the connection type decides
    ("duckdb", "duckdb", "duckdb"), ("snowflake", "snowflake", "snowflake"), ("redshift", None, "redshift"),
    ("google_cloud_platform", "default", "bigquery"), ("databricks", None, "databricks"), ("mssql", "mssql", "mssql"),
])
def test_each_warehouse_gets_its_module(conn_type: str, dialect_name: str | None, chosen: str) -> None:
    assert dialect_for(hook(conn_type, dialect_name)).name == chosen


def test_a_warehouse_the_engine_cannot_serve_is_refused_naming_the_supported_ones() -> None:
    with pytest.raises(UnsupportedWarehouse) as refused:
        dialect_for(hook("oracle", "oracle"))
    message = str(refused.value)
    assert "'oracle'" in message and all(w.name in message for w in WAREHOUSES)
    assert "clickhouse" in message and "clickhousedb" not in message  # two entry points, one warehouse


def test_only_the_module_of_the_warehouse_in_use_is_imported() -> None:
    probe = ("import sys; from types import SimpleNamespace as H; "
             "from airflow_provider_namelookup.warehouse.dialects import dialect_for; "
             "dialect_for(H(conn_type='sqlite', dialect_name='sqlite', placeholder='?')); "
             "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
             "if m.startswith('airflow_provider_namelookup.warehouse.dialects.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    warehouses = {warehouse.name for warehouse in WAREHOUSES}
    assert [module for module in ast.literal_eval(loaded.strip()) if module in warehouses] == ["sqlite"]


def test_every_module_imports_first_on_its_own() -> None:
    for warehouse in WAREHOUSES:  # no import circle: each module imports alone, in a fresh interpreter
        module = f"airflow_provider_namelookup.warehouse.dialects.{warehouse.name}"
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True)


def test_every_warehouse_names_its_provider_its_credit_promise_and_what_to_install() -> None:
    for warehouse, dialect in zip(WAREHOUSES, all_dialects(), strict=True):
        assert dialect.name == warehouse.name and len(dialect.credit_promise) > 40, warehouse.name
        assert warehouse.provider.startswith("apache-airflow-providers-")
        assert warehouse.provider in (install_hint(warehouse.engines[0]) or "")
    # the Airflow provider itself, as the extra pins it: the package is not on PyPI yet (issue 36)
    assert install_hint("snowflake") == "pip install 'apache-airflow-providers-snowflake>=6.20' " \
                                        "(what the snowflake extra of airflow-provider-namelookup installs)"
    assert install_hint("postgres") == "pip install apache-airflow-providers-postgres"
    assert install_hint("oracle") is None


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


def _strings_outside_docstrings(tree: ast.AST) -> list[ast.Constant]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_engine_name_is_written_or_compared_outside_the_dialects_package() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if DIALECTS_DIR in path.parents or relative.parts[0] == "emulator":
            continue
        tree = ast.parse(path.read_text())
        offenders += [f"{relative}:{line}: {name!r}" for line, name in _compared_names(tree)]
        offenders += [f"{relative}:{node.lineno}: {node.value!r}" for node in _strings_outside_docstrings(tree)
                      if node.value.strip().lower() in ENGINE_NAMES]
    assert offenders == [], "engine-specific decisions belong in warehouse/dialects/: " + ", ".join(offenders)


def test_the_check_finds_a_comparison() -> None:
    assert _compared_names(ast.parse("if hook.dialect_name == 'postgresql': pass")) == [(1, "postgresql")]
    assert _compared_names(ast.parse("x = kind in ('duckdb', 'x')")) == [(1, "duckdb")]
