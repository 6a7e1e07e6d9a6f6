"""A warehouse dialect registered by another package (the entry-point group ``ENTRY_POINT_GROUP``):
the package pip-installed for real (into a folder of the test's, put on ``sys.path``), then found by
the engine name its hook reports, checked against the contract, and run."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_namelookup.testing.compliance import ComplianceAccount, distinct_valid, enrich
from airflow_provider_namelookup.testing.dbapi import DbApiConnectionHook
from airflow_provider_namelookup.warehouse.dialects import (
    ENTRY_POINT_GROUP,
    IncompleteDialect,
    UnsupportedWarehouse,
    dialect_for,
    registered,
)

ROOT = Path(__file__).resolve().parents[3]
LITEHOUSE = ROOT / "tests" / "contrib" / "litehouse"
PAGE = ROOT / "docs" / "adding-a-warehouse.md"


def pip_install(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``source`` (a folder with a ``pyproject.toml``) pip-installed into a folder on ``sys.path`` for this
    test; that folder."""
    build, target = tmp_path / f"{source.name}-src", tmp_path / f"{source.name}-site"
    shutil.copytree(source, build)  # setuptools builds in the source folder
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(build)], check=True)
    monkeypatch.syspath_prepend(str(target))
    return target


def _forget(packages: set[str]) -> None:
    """The test's installed packages imported no more (the next test installs them anew)."""
    for module in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[module]


@pytest.fixture
def litehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The litehouse package installed (for this test); the folder it is installed in, none of its modules
    imported yet (in a worker process that ran another test of it, an earlier install's could be)."""
    _forget({"namelookup_litehouse"})
    yield pip_install(LITEHOUSE, tmp_path, monkeypatch)
    _forget({"namelookup_litehouse"})


def sqlite_hook(path: Path, conn_type: str) -> DbApiConnectionHook:
    return DbApiConnectionHook(lambda: sqlite3.connect(path, timeout=30), conn_type=conn_type)


def test_a_registered_dialect_serves_its_engine_and_a_run_through_it_keeps_the_promises(
        litehouse: Any, tmp_path: Path, emulator: Any, make_account: Any) -> None:
    hook = sqlite_hook(tmp_path / "warehouse.db", "litehouse")
    assert ("litehouse", "namelookup-litehouse") in [(w.name, w.provider) for w in registered()]
    assert "namelookup_litehouse" not in sys.modules  # listed, not imported, until a hook asks for it
    dialect = dialect_for(hook)
    assert (type(dialect).__module__, dialect.name) == ("namelookup_litehouse.dialect", "litehouse")

    rows = [(1, "Theresa", None), (2, "theresa ", None), (3, "Andrea", "IT"), (4, "", None), (5, "John", "US")]
    hook.run("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    with sqlite3.connect(tmp_path / "warehouse.db") as db:
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)", rows)
    db.close()
    account = ComplianceAccount(emulator, make_account(credits=100))
    house = SimpleNamespace(hook=hook, dialect=dialect, answers_table="answers")
    first = enrich(house, account, "customers")  # type: ignore[arg-type]
    assert first["credits_used"] == 100 - account.remaining() == distinct_valid(rows) == 3
    target = dict(hook.get_records("SELECT customer_id, status FROM customers_gender"))
    assert target == {1: "ok", 2: "ok", 3: "ok", 4: "error", 5: "ok"}
    again = enrich(house, account, "customers")  # type: ignore[arg-type]
    assert (again["rows_unchanged"], again["requests"], again["credits_used"]) == (5, 0, 0)


RUN_IN_A_FRESH_AIRFLOW = """
import json, sys
from pathlib import Path
from airflow.sdk import BaseHook
from airflow_provider_namelookup.warehouse.dialects import dialect_for
from tests.support import load_dag

handle = load_dag(Path(sys.argv[1]), sys.argv[2])
run = handle.run()
hook = BaseHook.get_connection("litehouse_warehouse").get_hook()
print(json.dumps({"state": str(run.state), "summary": handle.xcom("enrich"), "hook": type(hook).__name__,
                  "dialect": type(dialect_for(hook)).__module__}))
"""
"""A DAG run in an interpreter of its own: Airflow's providers manager reads the installed providers
once a process, and this test's process may have read them before the package was installed."""


def test_a_table_operator_on_a_connection_of_the_registered_engine_runs_through_its_dialect(
        litehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, namelookup: Any, write_dag: Any) -> None:
    database = tmp_path / "litehouse.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)",
                       [(1, "Theresa", None), (2, "Andrea", "IT"), (3, "", None), (4, "theresa", None)])
    db.close()
    monkeypatch.setenv("AIRFLOW_CONN_LITEHOUSE_WAREHOUSE", json.dumps({"conn_type": "litehouse",
                                                                       "host": str(database)}))
    dag = write_dag("""
        SqlGenderLookupOperator(task_id="enrich", conn_id="litehouse_warehouse", source_table="customers",
                                key_column="customer_id", name_column="name")
    """)
    paths = [str(litehouse), str(ROOT), str(ROOT / "namelookup-emulator"), os.environ.get("PYTHONPATH", "")]
    done = subprocess.run([sys.executable, "-c", RUN_IN_A_FRESH_AIRFLOW, str(dag.path), dag.dag_id],
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)}, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert (ran["hook"], ran["dialect"]) == ("LitehouseHook", "namelookup_litehouse.dialect")
    assert ran["state"] == "success", done.stdout[-4000:]  # the task's log
    assert ran["summary"]["credits_used"] == 100 - namelookup.remaining() == 2
    with sqlite3.connect(database) as db:
        target = dict(db.execute("SELECT customer_id, status FROM customers_gender").fetchall())
    db.close()
    assert target == {1: "ok", 2: "ok", 3: "error", 4: "ok"}


def test_an_unknown_engine_is_refused_naming_the_registered_warehouses_too(litehouse: Any, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedWarehouse, match=r"sqlite, .*mssql, (.*, )?litehouse(, .*)? warehouses.*'oracle'"):
        dialect_for(sqlite_hook(tmp_path / "w.db", "oracle"))


def test_a_registered_dialect_that_fails_the_contract_is_refused_naming_its_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "halfhouse"
    (source / "halfhouse").mkdir(parents=True)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "halfhouse"\nversion = "0.1"\n'
        f'[project.entry-points."{ENTRY_POINT_GROUP}"]\nhalfhouse = "halfhouse.dialect:HalfDialect"\n'
        'nohouse = "halfhouse.names:NOT_A_DIALECT"\n')
    (source / "halfhouse" / "__init__.py").write_text("")
    (source / "halfhouse" / "dialect.py").write_text(
        "from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect\n"
        "class HalfDialect(WarehouseDialect, name='halfhouse'):\n    pass\n")
    (source / "halfhouse" / "names.py").write_text("NOT_A_DIALECT = 'sqlite'\n")
    pip_install(source, tmp_path, monkeypatch)
    try:
        with pytest.raises(IncompleteDialect) as refused:
            dialect_for(sqlite_hook(tmp_path / "w.db", "halfhouse"))
        message = str(refused.value)
        assert message.startswith(f"the warehouse entry point halfhouse = halfhouse.dialect:HalfDialect (group "
                                  f"{ENTRY_POINT_GROUP}, distribution halfhouse) fails the dialect contract: ")
        assert "HalfDialect must write: credit_promise (" in message
        with pytest.raises(IncompleteDialect, match=r"entry point nohouse = halfhouse.names:NOT_A_DIALECT .* names "
                                                    r"'sqlite', which is no WarehouseDialect subclass"):
            dialect_for(sqlite_hook(tmp_path / "w.db", "nohouse"))
    finally:
        _forget({"halfhouse"})


def page_block(name: str) -> str:
    """The text of the code block named ``name`` on the "Adding a warehouse" page."""
    (text,) = re.findall(rf"```{{code-block}} \w+\n:name: {name}\n\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return str(text)


def test_the_pages_steps_make_a_package_whose_dialect_serves_its_engine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package made of the page's blocks alone (step 3's module, step 5's entry point) and pip-installed."""
    source = tmp_path / "my-warehouse"
    (source / "my_warehouse").mkdir(parents=True)
    (source / "my_warehouse" / "__init__.py").write_text("")
    (source / "my_warehouse" / "dialect.py").write_text(page_block("smallest-dialect"))
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "my-warehouse"\nversion = "0.1"\n' + page_block("register-entry-point"))
    pip_install(source, tmp_path, monkeypatch)
    try:
        dialect = dialect_for(sqlite_hook(tmp_path / "w.db", "mywarehouse"))
        assert (type(dialect).__module__, type(dialect).__name__, dialect.name) == (
            "my_warehouse.dialect", "MyDialect", "mywarehouse")
    finally:
        _forget({"my_warehouse"})
