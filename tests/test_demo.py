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


def test_short_demo_runs_end_to_end_and_leaves_nothing_running(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    assert "Warehouse: SQLite" in out
    assert re.search(r"customers_gender: [\d,]+ rows enriched, [1-9]\d* rows with errors", out)
    assert re.search(r"first run: [1-9][\d,]* credits spent", out)
    assert "Gender split by country" in out and "parameter-first-name-invalid" in out
    url = re.search(r"Emulator listening on (http://\S+)", out).group(1)  # type: ignore[union-attr]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/emulator/health", timeout=2)


def test_the_demo_runs_on_a_duckdb_file(tmp_path: Path) -> None:
    require("airflow.providers.duckdb", reason="the duckdb extra (in the test extra) installs it")
    out = run_demo(tmp_path, NAMELOOKUP_DEMO_WAREHOUSE="duckdb")
    assert f"Warehouse: DuckDB, {tmp_path / 'demo' / 'warehouse.duckdb'}" in out
    assert re.search(r"customers_gender: [\d,]+ rows enriched, [1-9]\d* rows with errors", out)
    assert re.search(r"first run: [1-9][\d,]* credits spent", out)
    assert "Gender split by country" in out
