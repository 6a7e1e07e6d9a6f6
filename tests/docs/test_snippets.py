"""Every Python snippet of the documentation runs, against the emulator, so the pages cannot drift
(the README's snippets were run so until issue 34 moved them to the site).

A snippet is found by the ``:name:`` of its ``code-block``, never by the title it stands under; the
README's minimal DAG by its ``<!-- snippet: ... -->`` marker. Each is run as a reader would use
it: a script, the body of a DAG that ``dag.test()`` runs to success, or a whole DAG file; with
the connections the pages name (``namelookup_default``, ``namelookup_local`` and an SQLite
``warehouse`` holding ``customers``) set up as a user would. The DAGs the pages show in full are
``example_dags/`` files, which ``tests/test_example_dags.py`` runs.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.docs.site import Site, readme_snippet
from tests.support import load_dag, set_connection

pytestmark = pytest.mark.usefixtures("airflow_db")

RUN, DAG_BODY, DAG_FILE = "run", "dag-body", "dag-file"
SNIPPETS = {
    "connection-sign-up": RUN,
    "hooks-sync-and-async": RUN,
    "xcom-operator-calls": DAG_BODY,
    "table-operator-call": DAG_BODY,
    "last-name-column": DAG_BODY,
    "columns-argument": DAG_BODY,
    "erasure-and-retention": DAG_BODY,
    "accuracy-notebook": RUN,
    "usage-record-store": RUN,
    "smallest-dialect": RUN,
    "pseudonym-by-value": RUN,
}
"""How each named snippet of the pages runs (a new Python snippet needs a name and an entry here)."""
README_SNIPPETS = {"readme-minimal-dag": DAG_FILE}
PAYING = {"hooks-sync-and-async", "xcom-operator-calls", "table-operator-call", "last-name-column", "columns-argument",
          "erasure-and-retention", "readme-minimal-dag"}
"""Snippets that must really ask the (emulated) service."""


def test_every_python_block_of_the_pages_is_a_named_snippet_or_an_example_dag(site: Site) -> None:
    python = [b for b in site.code_blocks if b.language in ("python", "py", "python3", "default", "")
              and not b.page.startswith("api/")]
    unnamed = [f"{b.page}: {b.text[:60]!r}" for b in python if b.included_from is None and b.name is None]
    unknown = [f"{b.page}: {b.name}" for b in python if b.name is not None and b.name not in SNIPPETS]
    assert unnamed == [] and unknown == []
    assert set(SNIPPETS) <= {b.name for b in site.code_blocks}, "a snippet of SNIPPETS is on no page"


@pytest.fixture
def readers_setup(namelookup: Any, emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The connections the pages' snippets name, and the public service's URL pointing at the emulator."""
    set_connection("namelookup_local", {"conn_type": "namelookup", "host": emulator.url,
                                        "password": namelookup.token})
    warehouse = tmp_path / "warehouse.db"
    with sqlite3.connect(warehouse) as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, "
                   "country TEXT, signup_date TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?)",
                       [(1, "Theresa", "Miller", "DE", "2099-01-01"), (2, "Andrea", None, "IT", "2099-01-01"),
                        (3, "John", "Smith", None, "2099-01-01"), (4, "", "Doe", None, "2099-01-01")])
    db.close()
    set_connection("warehouse", {"conn_type": "sqlite", "host": str(warehouse)})
    monkeypatch.setattr("airflow_provider_namelookup.hooks.base.DEFAULT_BASE_URL", emulator.url)
    namelookup.set_credits(1_000)
    yield namelookup
    for conn_id in ("namelookup_local", "warehouse"):
        monkeypatch.delenv(f"AIRFLOW_CONN_{conn_id.upper()}", raising=False)


def _run(name: str, mode: str, code: str, readers_setup: Any, write_dag: Any, airflow_db: Path) -> None:
    spent_before = readers_setup.remaining()
    if mode == RUN:
        exec(compile(code, f"<snippet {name}>", "exec"), {"__name__": "docs_snippet"})
    else:
        if mode == DAG_BODY:
            dag = write_dag(code)
        else:
            path = airflow_db / f"snippet_{name.replace('-', '_')}.py"
            path.write_text(code)
            (dag_id,) = re.findall(r'DAG\(\s*"(\w+)"', code)
            dag = load_dag(path, dag_id)
        assert dag.dag.tasks, "the snippet made no task"
        run = dag.run()
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        assert str(run.state) == "success", states
    if name in PAYING:
        assert readers_setup.remaining() < spent_before  # it really asked the (emulated) service


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_a_snippet_of_the_pages_runs(name: str, site: Site, readers_setup: Any, write_dag: Any,
                                     airflow_db: Path) -> None:
    _run(name, SNIPPETS[name], site.snippet(name).text, readers_setup, write_dag, airflow_db)


@pytest.mark.parametrize("name", sorted(README_SNIPPETS))
def test_a_snippet_of_the_readme_runs(name: str, readers_setup: Any, write_dag: Any, airflow_db: Path) -> None:
    _run(name, README_SNIPPETS[name], readme_snippet(name), readers_setup, write_dag, airflow_db)
