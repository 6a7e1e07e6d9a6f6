"""Every Python snippet of the README runs, against the emulator, so the README cannot drift.

Each ```python block is run as a reader would use it, by the section it stands in: the
hook and sign-up snippets as a script, the operator snippets as the body of a DAG that
``dag.test()`` runs to success (the sensor and scale-out snippets' DAG is parsed), with the
connections the README names (``namelookup_default``, ``namelookup_local`` and an SQLite
``warehouse`` holding ``customers``) set up as a user would.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import set_connection

pytestmark = pytest.mark.usefixtures("airflow_db")

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
RUN, DAG_RUN, DAG_PARSE = "run", "dag-run", "dag-parse"
MODES = {"Connection": RUN, "Hooks": RUN, "Operators over XCom": DAG_RUN, "Operators over tables": DAG_RUN,
         "Credit sensor": DAG_RUN, "The usage record": RUN, "Scaling out": DAG_PARSE,
         "Evaluating a table": DAG_PARSE, "Evaluating an XCom list": DAG_RUN, "In a notebook": RUN}
"""How the snippets of each section run (a new section with a snippet must say how here)."""


def snippets() -> list[tuple[str, str]]:
    """``(section heading, code)`` of every ```python block, in order."""
    found = []
    for match in re.finditer(r"```python\n(.*?)```", README, flags=re.S):
        headings = re.findall(r"^#{2,3} (.+)$", README[:match.start()], flags=re.M)
        found.append((headings[-1].strip(), match.group(1)))
    return found


@pytest.fixture
def readers_setup(namelookup: Any, emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The connections the README's snippets name, and the public service's URL pointing at the emulator."""
    set_connection("namelookup_local", {"conn_type": "namelookup", "host": emulator.url,
                                        "password": namelookup.token})
    warehouse = tmp_path / "warehouse.db"
    with sqlite3.connect(warehouse) as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT, "
                   "signup_date TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)",
                       [(1, "Theresa", "DE", "2099-01-01"), (2, "Andrea", "IT", "2099-01-01"),
                        (3, "John", None, "2099-01-01"), (4, "", None, "2099-01-01")])
    db.close()
    set_connection("warehouse", {"conn_type": "sqlite", "host": str(warehouse)})
    monkeypatch.setattr("airflow_provider_namelookup.hooks.namelookup.DEFAULT_BASE_URL", emulator.url)
    namelookup.set_credits(1_000)
    yield namelookup
    for conn_id in ("namelookup_local", "warehouse"):
        monkeypatch.delenv(f"AIRFLOW_CONN_{conn_id.upper()}", raising=False)


def test_every_section_with_a_snippet_says_how_it_runs() -> None:
    sections = {heading for heading, _ in snippets()}
    assert sections and sections <= set(MODES), sections - set(MODES)


@pytest.mark.parametrize(("heading", "code"), snippets(), ids=[h for h, _ in snippets()])
def test_a_readme_snippet_runs(heading: str, code: str, readers_setup: Any, write_dag: Any) -> None:
    mode = MODES[heading]
    spent_before = readers_setup.remaining()
    if mode == RUN:
        exec(compile(code, f"README.md ({heading})", "exec"), {"__name__": "readme_snippet"})
    else:
        dag = write_dag(code)
        assert dag.dag.tasks, "the snippet made no task"
        if mode == DAG_RUN:
            run = dag.run()
            states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
            assert str(run.state) == "success", states
    if heading in ("Hooks", "Operators over XCom", "Operators over tables"):
        assert readers_setup.remaining() < spent_before  # it really asked the (emulated) service
