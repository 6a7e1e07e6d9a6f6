"""What ``pseudonymise=True`` costs a table run: the same table enriched with it off and on.

Each mode enriches its own copy of one SQLite ``customers`` table (real name frequencies,
:mod:`benchmarks.warehouse`) with ``SqlGenderLookupOperator.execute`` in a fresh interpreter
(:mod:`benchmarks.child`), against the emulator in a process of its own: a first run (every
distinct name paid) and a rerun (nothing paid). The modes alternate, ``--repeats`` times, and the
median of each is reported. With it on, the run hashes each distinct value and each answer's echoes
(HMAC-SHA-256) and, on a rerun, reads every row's distinct values again (a pseudonymised target keeps
no raw value to compare in SQL; the fill still rewrites only changed rows).

Example::

    python -m benchmarks.personal_data_cost --rows 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.service import BenchService
from benchmarks.warehouse import build_customers, sqlite_connection_env

_MODULE = __spec__.name if __spec__ is not None else __name__
"""This module's import name (``python -m`` runs it as ``__main__``), for the child to import."""


def enrich(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """A :mod:`benchmarks.child` job: the gender operator over ``customers``, ``pseudonymise`` as given."""
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    options: dict[str, Any] = {"pseudonymise": True} if params["pseudonymise"] else {}  # off: an earlier release too
    operator = SqlGenderLookupOperator(task_id="enrich_customers", conn_id=params["sql_conn_id"],
                                       source_table="customers", answers_table="namelookup_answers",
                                       key_column="customer_id", name_column="first_name", country_column="country",
                                       **options)
    operator.get_db_hook()

    def work() -> dict[str, Any]:
        return dict(operator.execute({}))

    return work


def measure(rows: int, repeats: int, workdir: Path, modes: tuple[str, ...] = ("off", "on")) -> dict[str, Any]:
    """Median seconds (wall and CPU) of a first run and a rerun, per mode, and what each paid."""
    base = workdir / "customers.db"
    facts = build_customers(base, rows=rows, seed=2026)
    key_env = {"AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION": json.dumps(
        {"conn_type": "generic", "password": secrets.token_hex(32)})}
    runs: dict[str, list[dict[str, Any]]] = {}
    with BenchService(log_path=workdir / "emulator.log") as service:
        for repeat in range(repeats):
            for mode in modes:
                db = workdir / f"{mode}_{repeat}.db"
                shutil.copy(base, db)
                env = {**service.connection_env(), **sqlite_connection_env("bench_warehouse", db), **key_env}
                params = {"sql_conn_id": "bench_warehouse", "pseudonymise": mode == "on"}
                for phase in ("first", "rerun"):
                    result = run_in_child(f"{_MODULE}:enrich", params, env=env,
                                          log_path=workdir / "runs.log")
                    runs.setdefault(f"{mode}_{phase}", []).append(result)
    return {"rows": rows, "distinct_queries": facts.distinct_queries, "repeats": repeats,
            **{name: {"seconds": round(statistics.median(r["seconds"] for r in results), 3),
                      "cpu_seconds": round(statistics.median(r["cpu_seconds"] for r in results), 3),
                      "credits_used": [r["value"]["credits_used"] for r in results]}
               for name, results in runs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="off,on", help="off, on or both (off alone runs on an earlier release)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="namelookup-personal-") as scratch:
        print(json.dumps(measure(args.rows, args.repeats, Path(scratch), tuple(args.modes.split(","))), indent=2))


if __name__ == "__main__":
    main()
