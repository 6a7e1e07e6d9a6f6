"""Orchestration of the demo (see the package docstring).

Example::

    python -m demo                 # a few thousand customers, two DAG runs, a report
    python -m demo --short         # 300 customers, one DAG run (what ``make test`` runs)
    NAMELOOKUP_DEMO_WAREHOUSE=duckdb python -m demo      # the same on a DuckDB file
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from demo.report import print_report
from demo.warehouses import KINDS, DemoWarehouse, demo_warehouse
from namelookup_emulator.server import EmulatorProcess

ROOT = Path(__file__).resolve().parent.parent
DAG_ID = "namelookup_warehouse_enrichment"
SEED_CREDITS = 20_000


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def airflow_env(home: Path, emulator_url: str, token: str, warehouse: DemoWarehouse) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW_CONN_NAMELOOKUP_DEFAULT": json.dumps({"conn_type": "namelookup", "host": emulator_url,
                                                       "password": token}),
        "AIRFLOW_CONN_NAMELOOKUP_WAREHOUSE": json.dumps(warehouse.connection()),
    })
    env.pop("NAMELOOKUP_WAREHOUSE_CONN_ID", None)
    env.pop("NAMELOOKUP_CUSTOMERS_TABLE", None)
    return env


def airflow(args: Sequence[str], env: dict[str, str], log: Path) -> None:
    """Run an ``airflow`` command, its output to ``log``; on failure show the log's tail."""
    with log.open("a") as out:
        done = subprocess.run([sys.executable, "-m", "airflow", *args], env=env, stdout=out,  # noqa: S603
                              stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        print(log.read_text()[-4000:], file=sys.stderr)
        raise SystemExit(f"airflow {' '.join(args)} failed (exit {done.returncode}); full log: {log}")


def progress_lines(log: Path, since: int, width: int = 100) -> list[str]:
    """The run's plan and progress messages from the Airflow log, whole: a long one goes on over
    several lines, broken between words (never inside a number), the next lines indented.

    >>> import tempfile
    >>> log = Path(tempfile.mkdtemp()) / "airflow.log"
    >>> _ = log.write_text("2026-11-25T10:00:00Z [info     ] Plan for t: 4,000 rows, 2,666 distinct new "
    ...                    "queries (2,666 credits) [airflow.task] loc=run.py:1\\n")
    >>> progress_lines(log, 0, width=40)
    ['Plan for t: 4,000 rows, 2,666 distinct', '  new queries (2,666 credits)']
    """
    lines = log.read_text().splitlines()[since:]
    keep = ("Plan for", "Progress:", "credits remaining", "Created target table")
    messages = [line.split("] ", 1)[-1].rsplit(" [", 1)[0] for line in lines if any(k in line for k in keep)]
    return [part for m in messages
            for part in textwrap.wrap(m, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    parser.add_argument("--rows", type=int, default=None, help="customers in the warehouse (default 4000)")
    parser.add_argument("--short", action="store_true", help="300 customers and a single DAG run")
    parser.add_argument("--workdir", type=Path, default=ROOT / ".demo", help="where the throwaway files go")
    parser.add_argument("--warehouse", choices=KINDS, default=os.environ.get("NAMELOOKUP_DEMO_WAREHOUSE") or "sqlite",
                        help="the warehouse kind (default: $NAMELOOKUP_DEMO_WAREHOUSE, else sqlite)")
    args = parser.parse_args(argv)
    rows = args.rows or (300 if args.short else 4000)
    started = time.monotonic()

    work: Path = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    home = work / "airflow"
    (home / "dags").mkdir(parents=True)
    for example in (ROOT / "example_dags").glob("*.py"):
        shutil.copy(example, home / "dags" / example.name)
    warehouse = demo_warehouse(args.warehouse, work)
    log = work / "airflow.log"

    say(f"Building a {warehouse.label} warehouse with {rows:,} customers: {warehouse.path}")
    warehouse.build(rows)

    token = secrets.token_urlsafe(24)
    with (work / "emulator.log").open("w") as emulator_log, \
            EmulatorProcess(seed_token=token, seed_credits=SEED_CREDITS, stderr=emulator_log) as emulator:
        say(f"Emulator listening on {emulator.url} (an account with {SEED_CREDITS:,} credits)")
        env = airflow_env(home, emulator.url, token, warehouse)
        say("Preparing a throwaway Airflow home (airflow db migrate)")
        airflow(["db", "migrate"], env, log)

        runs: list[dict[str, Any]] = []
        for attempt in range(1 if args.short else 2):
            label = "first run" if attempt == 0 else "second run, nothing changed"
            say(f"airflow dags test {DAG_ID}   ({label})")
            seen = len(log.read_text().splitlines())
            t0 = time.monotonic()
            airflow(["dags", "test", DAG_ID], env, log)
            for line in progress_lines(log, seen):
                print(f"    {line}")
            runs.append({"label": label, "seconds": time.monotonic() - t0,
                         "remaining": _remaining(emulator.url, token)})
        stats = emulator.stats()

    print_report(warehouse, runs, seed_credits=SEED_CREDITS, emulator_stats=stats)
    say(f"Done in {time.monotonic() - started:.0f} s. Files: {work} (Airflow log: {log}). Nothing left running.")
    return 0


def _remaining(url: str, token: str) -> int:
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with NameLookupHook.for_url(url, token) as hook:
        return int(hook.get_statistic()["remaining_credits"])
