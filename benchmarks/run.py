"""Run the benchmarks and write ``benchmarks/results.md`` (and ``results.json``).

Every benchmark starts its own emulator process and stops it when done; every measured
child process is killed if it outlives its time limit or if this run is interrupted
(Ctrl-C or SIGTERM). Scratch files (the SQLite tables, logs) go to a temporary
directory that is removed at the end unless ``--keep`` is given.

Example::

    python -m benchmarks.run                               # full run (the in-task part alone: 8 min)
    python -m benchmarks.run --quick                       # small sizes (15 min, 13 in the in-task part)
    python -m benchmarks.run --only table --rows 100000,1000000 --naive-rows 20000
    python -m benchmarks.run --only hook,emulator --names 5000 --duration 1
    python -m benchmarks.run --only latency --latency-ms 80-120 --latency-rows 20000,100000
    python -m benchmarks.run --only handwritten --versus-rows 1000000 --versus-latency-rows 20000 --latency-ms 80-120
    python -m benchmarks.run --only table_duckdb --duck-rows 100000,1000000
    python -m benchmarks.run --only in_task --in-task-rows 1000000 --in-task-latency-rows 20000
    python -m benchmarks.run --only in_task --in-task-warehouses sqlite --in-task-distributions sample
    python -m benchmarks.run --only in_task --in-task-networks latency --in-task-latency-rows 1000000
    python -m benchmarks.run --only in_task --in-task-columns gender,probability --in-task-networks loopback
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks import (
    emulator_throughput,
    hook_throughput,
    in_task,
    latency,
    table_duckdb,
    table_enrichment,
    table_postgres,
    versus_handwritten,
)
from benchmarks.figures import Section, render
from benchmarks.machine import describe, summary_lines
from benchmarks.provider import answer_fields

HERE = Path(__file__).resolve().parent
IN_TASK_DISTRIBUTIONS = ("first", "sample", "share5", "share35")
"""The in-task cases' name distributions (:mod:`benchmarks.distributions`): share35 only over the WAN, and
over the WAN above 100,000 rows only first and sample."""
IN_TASK_NETWORKS = ("loopback", "latency")
"""The in-task cases' networks: the emulator over loopback, or behind --latency-ms (PostgreSQL's cases)."""

BENCHMARKS = ("in_task", "table", "table_postgres", "table_duckdb", "handwritten", "latency", "hook", "emulator")

FULL: dict[str, Any] = {"rows": (100_000, 1_000_000), "naive_rows": 100_000, "names": 20_000, "repeats": 3,
                        "duration": 3.0, "latency_rows": (20_000, 100_000), "latency_naive_rows": 200,
                        "pg_rows": (100_000, 1_000_000, 10_000_000), "duck_rows": (100_000, 1_000_000),
                        "versus_rows": (1_000_000,), "versus_latency_rows": (20_000,), "versus_repeats": 5,
                        "in_task_rows": (1_000_000,), "in_task_latency_rows": (20_000, 1_000_000)}
QUICK: dict[str, Any] = {"rows": (10_000, 100_000), "naive_rows": 2_000, "names": 4_000, "repeats": 1, "duration": 1.0,
                         "latency_rows": (2_000, 10_000), "latency_naive_rows": 50, "pg_rows": (10_000, 100_000),
                         "duck_rows": (10_000, 100_000), "versus_rows": (10_000,), "versus_latency_rows": (2_000,),
                         "versus_repeats": 3, "in_task_rows": (10_000,), "in_task_latency_rows": (2_000,)}


def _numbers(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _latency_range(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds or a range like 80-120, got {text!r}") from None
    if not 0 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"expected a range low-high with 0 <= low <= high, got {text!r}")
    return bounds


def _list_of(kind: str, allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """A parser of a comma-separated list of ``allowed`` names, refusing any other naming what ``kind`` may be.

    >>> _list_of("networks", ("loopback", "latency"))("latency, loopback")
    ('latency', 'loopback')
    """

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n.strip() for n in text.split(",") if n.strip())
        if not names or any(n not in allowed for n in names):
            raise argparse.ArgumentTypeError(f"{kind} are {', '.join(allowed)}; got {text!r}")
        return names

    return parse


_benchmarks = _list_of("benchmarks", BENCHMARKS)
_distributions = _list_of("distributions", IN_TASK_DISTRIBUTIONS)
_networks = _list_of("networks", IN_TASK_NETWORKS)
_names = _list_of("warehouses", versus_handwritten.WAREHOUSES)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: tables of 10,000 and 100,000 rows, naive loop on 2,000 rows, "
                             "4,000 names, 1 s per emulator point")
    parser.add_argument("--only", type=_benchmarks, default=BENCHMARKS, metavar="LIST",
                        help=f"benchmarks to run, comma-separated (default: {','.join(BENCHMARKS)})")
    parser.add_argument("--rows", type=_numbers, metavar="N,N", help="table sizes (default 100000,1000000)")
    parser.add_argument("--pg-rows", type=_numbers, metavar="N,N",
                        help="PostgreSQL table sizes (default 100000,1000000,10000000)")
    parser.add_argument("--duck-rows", type=_numbers, metavar="N,N", help="DuckDB table sizes (default 100000,1000000)")
    parser.add_argument("--naive-rows", type=int, metavar="N",
                        help="rows the naive loop goes through, a prefix of the smallest table "
                             "(default: all of it, 100000); bigger tables are extrapolated")
    parser.add_argument("--names", type=int, metavar="N", help="distinct names per hook run (default 20000)")
    parser.add_argument("--concurrency", type=_numbers, metavar="N,N",
                        help="async hook max_concurrency levels (default 1,4,8)")
    parser.add_argument("--emulator-concurrency", type=_numbers, metavar="N,N",
                        help="emulator benchmark concurrency levels (default 1,8,32)")
    parser.add_argument("--latency-ms", type=_latency_range, default=(80.0, 120.0), metavar="MS-MS",
                        help="latency benchmark: the emulator's added latency per request (default 80-120)")
    parser.add_argument("--latency-rows", type=_numbers, metavar="N,N",
                        help="latency benchmark: table sizes (default 20000,100000)")
    parser.add_argument("--latency-naive-rows", type=int, metavar="N",
                        help="latency benchmark: rows the naive loop goes through per lookup, extrapolated "
                             "to the tables (default 200)")
    parser.add_argument("--versus-rows", type=_numbers, metavar="N,N",
                        help="provider vs hand-written DAGs: table sizes on loopback (default 1000000)")
    parser.add_argument("--versus-latency-rows", type=_numbers, metavar="N,N",
                        help="provider vs hand-written DAGs: table sizes with --latency-ms (default 20000)")
    parser.add_argument("--versus-repeats", type=int, metavar="N",
                        help="provider vs hand-written DAGs: runs of each WAN case, each on a fresh table; the "
                             "median ratio is reported (default 5)")
    parser.add_argument("--versus-warehouses", type=_names, metavar="LIST",
                        default=versus_handwritten.WAREHOUSES,
                        help="provider vs hand-written DAGs: warehouses on loopback, the first also with latency "
                             f"(default {','.join(versus_handwritten.WAREHOUSES)})")
    parser.add_argument("--in-task-rows", type=_numbers, metavar="N,N",
                        help="inside a task: table sizes on loopback, on PostgreSQL, SQLite and DuckDB, each with "
                             "first names only, the sample's names and 5 %% distinct names (default 1000000)")
    parser.add_argument("--in-task-latency-rows", type=_numbers, metavar="N,N",
                        help="inside a task: PostgreSQL table sizes with --latency-ms, with first names only, the "
                             "sample's names, 5 %% and 35 %% distinct names (above 100,000 rows first names only "
                             "and the sample's) (default 20000,1000000)")
    parser.add_argument("--in-task-warehouses", type=_names, default=("postgres", "sqlite", "duckdb"), metavar="LIST",
                        help="inside a task: the warehouses (default postgres,sqlite,duckdb; the WAN cases are "
                             "PostgreSQL's)")
    parser.add_argument("--in-task-networks", type=_networks, default=IN_TASK_NETWORKS, metavar="LIST",
                        help="inside a task: the networks, loopback (--in-task-rows) and latency "
                             "(--in-task-latency-rows) (default loopback,latency: latency alone leaves the "
                             "loopback cases out)")
    parser.add_argument("--in-task-distributions", type=_distributions, default=IN_TASK_DISTRIBUTIONS,
                        metavar="LIST", help="inside a task: the name distributions (default "
                                             f"{','.join(IN_TASK_DISTRIBUTIONS)}; share35 only over the WAN)")
    parser.add_argument("--in-task-repeats", type=int, default=5, metavar="N",
                        help="inside a task: repetitions of a table of at most 100,000 rows (default 5)")
    parser.add_argument("--in-task-big-repeats", type=int, default=3, metavar="N",
                        help="inside a task: repetitions of a bigger table, each on a fresh table: its first "
                             "run is the median of these (default 3)")
    parser.add_argument("--in-task-reruns", type=int, default=5, metavar="N",
                        help="inside a task: unchanged reruns of a case, shared among its repetitions (at least "
                             "one each), each a DAG run over an unchanged table (default 5)")
    parser.add_argument("--in-task-columns", type=answer_fields, metavar="LIST",
                        help="inside a task: the answer fields the provider's target holds (its columns=), e.g. "
                             "gender,probability as the hand-written task's (default: every one)")
    parser.add_argument("--repeats", type=int, metavar="N", help="runs per hook configuration (default 3)")
    parser.add_argument("--duration", type=float, metavar="S", help="seconds per emulator point (default 3)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the customer tables (default 2026)")
    parser.add_argument("--output", type=Path, default=HERE / "results.md", help="the Markdown report")
    parser.add_argument("--workdir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (tables and logs)")
    return parser


def _option(args: argparse.Namespace, name: str) -> Any:
    """The option given on the command line, else the full or quick default."""
    value = getattr(args, name)
    return (QUICK if args.quick else FULL)[name] if value is None else value


def in_task_cases(args: argparse.Namespace) -> tuple[in_task.Case, ...]:
    """The in-task benchmark's cases the options choose, ``(warehouse, rows, distribution, network)`` each.

    >>> in_task_cases(build_parser().parse_args(["--in-task-networks", "latency", "--in-task-latency-rows",
    ...                                          "1000000", "--in-task-distributions", "first"]))
    (('postgres', 1000000, 'first', 'latency'),)
    """
    loopback = (((w, size, d, "loopback") for size in _option(args, "in_task_rows")
                 for w in args.in_task_warehouses for d in ("first", "sample", "share5")
                 if d in args.in_task_distributions) if "loopback" in args.in_task_networks else ())
    wan = ((("postgres", size, d, "latency") for size in _option(args, "in_task_latency_rows")
            for d in (IN_TASK_DISTRIBUTIONS if size <= in_task.BIG_ROWS else ("first", "sample"))
            if d in args.in_task_distributions and "postgres" in args.in_task_warehouses)
           if "latency" in args.in_task_networks else ())
    return (*loopback, *wan)


def _plan(args: argparse.Namespace) -> dict[str, Callable[[Path], Section]]:
    table = table_enrichment.TableOptions(sizes=tuple(_option(args, "rows")),
                                          naive_rows=int(_option(args, "naive_rows")), seed=args.seed)
    hook = hook_throughput.HookOptions(names=int(_option(args, "names")), repeats=int(_option(args, "repeats")),
                                       concurrency=args.concurrency or hook_throughput.HookOptions.concurrency)
    emulator = emulator_throughput.EmulatorOptions(
        duration=float(_option(args, "duration")),
        concurrency=args.emulator_concurrency or emulator_throughput.EmulatorOptions.concurrency)
    wan = latency.LatencyOptions(sizes=tuple(_option(args, "latency_rows")), latency_ms=args.latency_ms,
                                 naive_rows=int(_option(args, "latency_naive_rows")), seed=args.seed)
    cases = in_task_cases(args)
    plans: dict[str, Callable[[Path], Section]] = {
        "in_task": lambda work: in_task.run(in_task.InTaskOptions(
            cases=cases, repeats=args.in_task_repeats, big_repeats=args.in_task_big_repeats,
            reruns=args.in_task_reruns, latency_ms=args.latency_ms,
            seed=args.seed, columns=args.in_task_columns), work),
        "table": lambda work: table_enrichment.run(table, work),
        "table_postgres": lambda work: table_postgres.run(
            table_postgres.PostgresOptions(sizes=tuple(_option(args, "pg_rows")), seed=args.seed), work),
        "handwritten": lambda work: versus_handwritten.run(versus_handwritten.VersusOptions(
            loopback_sizes=tuple(_option(args, "versus_rows")),
            latency_sizes=tuple(_option(args, "versus_latency_rows")), warehouses=args.versus_warehouses,
            latency_ms=args.latency_ms, seed=args.seed,
            latency_repeats=int(_option(args, "versus_repeats"))), work),
        "table_duckdb": lambda work: table_duckdb.run(
            table_duckdb.DuckDBOptions(sizes=tuple(_option(args, "duck_rows")), seed=args.seed), work),
        "latency": lambda work: latency.run(wan, work),
        "hook": lambda work: hook_throughput.run(hook, work),
        "emulator": lambda work: emulator_throughput.run(emulator, work),
    }
    return {name: plans[name] for name in BENCHMARKS if name in args.only}


def _stop_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so that every ``with``/``finally`` stops its processes."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _stop_on_sigterm()
    plans = _plan(args)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="namelookup-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    sections: list[Section] = []
    failed: list[str] = []
    try:
        for name, plan in plans.items():
            print(f"==> benchmark {name} ...", flush=True)
            t0 = time.monotonic()
            try:
                section = plan(work)
            except Exception as exc:
                traceback.print_exc()
                failed.append(name)
                section = Section(name, f"{name}: FAILED")
                section.notes.append(f"{type(exc).__name__}: {exc}")
            section.seconds = time.monotonic() - t0
            sections.append(section)
            print(f"    done in {section.seconds:.0f} s", flush=True)
    finally:
        if args.keep:
            print(f"scratch files kept in {work}")
        elif args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    machine = describe()
    command = "python -m benchmarks.run " + shlex.join(argv if argv is not None else sys.argv[1:])
    preamble = [f"Command: `{command.strip()}`, finished {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
                f"in {time.monotonic() - started:.0f} s.", "", "Machine (the emulator and the client share "
                "these cores):", "", *summary_lines()]
    report = render(sections, preamble=preamble)
    args.output.write_text(report)
    args.output.with_suffix(".json").write_text(json.dumps(
        {"command": command, "machine": machine, "benchmarks": {s.key: {"seconds": s.seconds, **s.data}
                                                                for s in sections}}, indent=2, default=str))
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
