"""The demo's own script, in its short mode: what ``make demo`` does, smaller."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support import require

ROOT = Path(__file__).resolve().parent.parent


def run_demo(tmp_path: Path, **env: str) -> str:
    done = subprocess.run([sys.executable, "-m", "demo", "--short", "--workdir", str(tmp_path / "demo")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _plan_messages(out: str) -> list[str]:
    """The plan lines the demo shows while its DAG runs, each joined with its continuation lines."""
    messages: list[str] = []
    for line in out.splitlines():
        if line.startswith("    Plan for"):
            messages.append(line.strip())
        elif line.startswith("      ") and messages and not line.startswith("       "):
            messages[-1] += " " + line.strip()
    return messages


def test_short_demo_runs_end_to_end_and_leaves_nothing_running(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    assert "Warehouse: SQLite" in out
    assert re.search(r"customers_gender: [\d,]+ rows enriched, [1-9]\d* rows? with (errors|an error)", out)
    # whole lines (issue 25, item 11): each plan message ends as the provider wrote it, no number cut
    plans = _plan_messages(out)
    assert len(plans) == 4, plans  # plan only and the run, per target
    for plan in plans:
        assert plan.count("(") == plan.count(")"), plan
        assert re.search(r"already answered in namelookup_answers_\w+$", plan), plan  # the DAG's own answers table
        assert re.search(r"[\d,]+ distinct new queries \([\d,]+ credits\)", plan), plan
    # and what was counted: queries, not first names
    assert "a gender query is a first name with its row's country" in out
    gender = re.search(r"([\d,]+) credits for ([\d,]+) distinct queries \(first name and country hint\), 1 credit each",
                       out)
    origin = re.search(r"([\d,]+) credits for ([\d,]+) distinct queries \(first name alone: no hint is read\), "
                       r"2 credits each", out)
    assert gender and origin, out
    number = lambda text: int(text.replace(",", ""))  # noqa: E731
    assert number(gender.group(1)) == number(gender.group(2)) and number(origin.group(1)) == 2 * number(origin.group(2))
    names = number(re.search(r"Customers: [\d,]+ rows, ([\d,]+) distinct first names", out).group(1))  # type: ignore[union-attr]
    assert number(gender.group(2)) > names  # the same names with other countries
    assert re.search(r"first run: [1-9][\d,]* credits spent", out)
    assert "Gender split by country" in out and "parameter-first-name-invalid" in out
    # why there are rows with errors, and fewer requests than lookups (issue 36, item 6)
    assert "Rows kept with an error, by the rule they break" in out
    assert re.search(r"country of origin: one name a request \(the service has no batch form for it\): "
                     rf"{origin.group(2)} requests", out), out
    url = re.search(r"Emulator listening on (http://\S+)", out).group(1)  # type: ignore[union-attr]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/emulator/health", timeout=2)


def test_the_demo_runs_on_a_duckdb_file(tmp_path: Path) -> None:
    require("airflow.providers.duckdb", reason="the duckdb extra (in the test extra) installs it")
    out = run_demo(tmp_path, NAMELOOKUP_DEMO_WAREHOUSE="duckdb")
    assert f"Warehouse: DuckDB, {tmp_path / 'demo' / 'warehouse.duckdb'}" in out
    assert re.search(r"customers_gender: [\d,]+ rows enriched, [1-9]\d* rows? with (errors|an error)", out)
    assert re.search(r"first run: [1-9][\d,]* credits spent", out)
    assert "Gender split by country" in out
