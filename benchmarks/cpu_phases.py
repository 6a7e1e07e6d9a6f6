"""Where a provider first run's CPU goes, by phase: read source, plan, register the map, claim, ask,
store answers, fill target.

Not a benchmark (nothing is compared): issue 53 asks, where a goal stays out of reach, for a profile
of the task's CPU by phase. The run is the provider's ``SqlGenderLookupOperator.execute`` in this
process (as :mod:`benchmarks.trace_first_run` runs it), on a fresh table of the in-task benchmark
(:func:`benchmarks.in_task.build_table`), against the emulator over loopback.

A profile of CPU time, not of wall time. Two kinds of threads do the run's work: the event loop's
(planning, HTTP, the engine), whose CPU is its thread time, and the warehouse sessions' (every
statement, the driver's work, on SQLite and DuckDB the database engine itself), whose CPU is the rest
of the process time of ``execute()``. How each kind's CPU divides among the phases comes from
``py-spy`` (in the ``dev`` extra), run on this process for the
time of ``execute()`` alone (``--nonblocking``): its samples of threads that are not waiting
(:data:`_WAITING`: a socket, the warehouse's answer, a lock, an empty queue), each given to the
phase of its stack (:func:`phase_of`: the innermost frame that names a phase). py-spy also counts a
thread that is runnable but waits for a core, so on a loaded machine its samples add up to more
than the CPU: the shares are scaled to each kind's measured CPU.

Example::

    .venv/bin/python -m benchmarks.cpu_phases --rows 1000000 --warehouse postgres --names first
    .venv/bin/python -m benchmarks.cpu_phases --rows 200000 --warehouse sqlite --names sample --runs 2
    .venv/bin/python -m benchmarks.cpu_phases --rows 1000000 --names first --columns gender,probability

``--columns`` narrows the provider's target to some answer fields (the operator's ``columns``; default
every one), as the hand-written DAG's ``gender`` and ``probability``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks.provider import answer_fields, written_fields

PHASES = ("read source", "plan", "register the map", "claim", "ask (HTTP)", "store answers", "fill target",
          "prepare, budget, summary", "event loop", "other")
"""The phases, in the order of a run."""

_PACKAGE = "airflow_provider_namelookup"
_CODE_OF_PHASE: dict[str, tuple[str, ...]] = {
    # a phase: the code that does it, as a path ending, or ``ending:function`` for one function of that file
    "plan": ("engine/plan.py", "engine/reading.py:plan_page", "engine/reading.py:plan_ahead"),
    "read source": ("warehouse/source.py",),
    "register the map": ("engine/reading.py:find_answered", "warehouse/valuemap.py", "warehouse/answers.py:register",
                         "warehouse/answers.py:_my_order", "warehouse/answers.py:_answered_in_batch"),
    "claim": ("warehouse/answers.py:plan_claims", "warehouse/answers.py:_claim", "warehouse/answers.py:_renew",
              "warehouse/answers.py:_release", "engine/claiming.py"),
    "store answers": ("warehouse/answers.py:_store", "warehouse/incoming.py", "engine/writeback.py",
                      "engine/asking.py:_stored"),
    "fill target": ("warehouse/target.py", "engine/finishing.py"),
    "ask (HTTP)": ("engine/answerer.py", "/hooks/", "/httpx/", "/httpcore/", "/h11/", "/anyio/"),
    "prepare, budget, summary": ("warehouse/target.py:_prepare", "warehouse/answers.py:_prepare", "engine/spending.py",
                                 "engine/budget.py", "engine/progress.py", "/operators/", "/usage/"),
}
_FALLBACK_CODE_OF_PHASE: dict[str, tuple[str, ...]] = {
    # frames that name a phase only when no frame of the stack matches :data:`_CODE_OF_PHASE` (the loop runs
    # every step)
    "event loop": ("asyncio/", "/selectors.py", "concurrent/futures/"),
}


def _rules(code_of_phase: dict[str, tuple[str, ...]]) -> tuple[tuple[str, str | None, str], ...]:
    """``(path ending, function or None for any, phase)``, a function's rule before its file's."""
    rules = [(ending, function or None, phase) for phase, places in code_of_phase.items()
             for ending, _, function in (place.partition(":") for place in places)]
    return tuple(sorted(rules, key=lambda rule: rule[1] is None))


_RULES = _rules(_CODE_OF_PHASE)
_FALLBACK = _rules(_FALLBACK_CODE_OF_PHASE)


def phase_of(stack: list[tuple[str, str]]) -> tuple[str, str]:
    """The phase of a stack of ``(function, path)`` frames, outermost first (its innermost frame that
    matches :data:`_RULES`), and the innermost frame of the provider's package on it
    (``module path:function``), to show what "other" holds.

    >>> package = "/x/airflow_provider_namelookup"
    >>> phase_of([("run", "/x/asyncio/base_events.py"), ("AnswersTable._claim", f"{package}/warehouse/answers.py"),
    ...           ("fetchall", f"{package}/warehouse/session.py")])
    ('claim', 'warehouse/session.py:fetchall')
    >>> phase_of([("main", "/x/y.py")])
    ('other', '')
    """
    here = next((f"{path.replace(os.sep, '/').rsplit(_PACKAGE + '/', 1)[-1]}:{function}"
                 for function, path in reversed(stack) if _PACKAGE in path), "")
    for rules in (_RULES, _FALLBACK):
        for function, path in reversed(stack):
            path = path.replace(os.sep, "/")
            name = function.rsplit(".", 1)[-1]  # py-spy names a method Class.method
            for ending, wanted, phase in rules:
                if ending in path and (wanted is None or wanted == name):
                    return phase, here
    return "other", here


_WAITING = frozenset({"select", "wait", "_worker", "acquire", "get", "_wait_for_tstate_lock", "wait_c",
                      "wait_select", "wait_epoll", "poll"})
"""Innermost functions of a thread that waits (an event loop's select, psycopg's wait for the server's
answer, an executor's thread waiting for work): their samples are not CPU."""

_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::\d+)?\)$")


def parse_raw(text: str, *, main_thread: int) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    r"""py-spy's raw (collapsed) samples of threads not waiting, counted by ``(phase, thread kind)``
    (``loop``: the thread ``main_thread``, else ``warehouse``), and the samples of "other" by frame.

    >>> by_phase, _ = parse_raw("thread (7): MainThread;run (/a/asyncio/x.py:1);send (/a/httpx/_client.py:9) 50\n"
    ...                         "thread (7): MainThread;run (/a/asyncio/x.py:1);select (/a/selectors.py:4) 90\n"
    ...                         "thread (8): sql;_store (/a/airflow_provider_namelookup/warehouse/answers.py:3) 25\n",
    ...                         main_thread=7)
    >>> sorted(by_phase.items())
    [(('ask (HTTP)', 'loop'), 50), (('store answers', 'warehouse'), 25)]
    """
    by_phase: Counter[tuple[str, str]] = Counter()
    other: Counter[str] = Counter()
    for line in text.splitlines():
        stack_text, _, samples = line.rpartition(" ")
        if not stack_text or not samples.isdigit():
            continue
        thread, *frames = stack_text.split(";")
        stack = [(m["function"], m["path"]) for f in frames if (m := _FRAME.match(f))]
        if not stack or stack[-1][0].rsplit(".", 1)[-1] in _WAITING:
            continue
        kind = "loop" if f"({main_thread})" in thread or f"({main_thread:#x})" in thread else "warehouse"
        phase, here = phase_of(stack)
        spent = int(samples)
        by_phase[phase, kind] += spent
        if phase == "other":
            other[here or (f"{stack[-1][0]} ({stack[-1][1].rsplit('/', 1)[-1]})" if stack else "?")] += spent
    return by_phase, other


@dataclass
class Profile:
    """One ``execute()``'s CPU by phase (see the module docstring): :attr:`by_phase` and :attr:`other`
    in CPU seconds once :meth:`scale` has been given each kind's CPU."""

    by_phase: Counter[tuple[str, str]] = field(default_factory=Counter)
    other: Counter[str] = field(default_factory=Counter)
    samples: int = 0

    def scale(self, cpu: dict[str, float]) -> None:
        """Samples to seconds: each thread kind's samples share its CPU (``{"loop": s, "warehouse": s}``).

        >>> p = Profile(Counter({("plan", "loop"): 30, ("ask (HTTP)", "loop"): 10, ("claim", "warehouse"): 5}))
        >>> p.scale({"loop": 2.0, "warehouse": 0.5}); sorted(p.by_phase.items())
        [(('ask (HTTP)', 'loop'), 0.5), (('claim', 'warehouse'), 0.5), (('plan', 'loop'), 1.5)]
        """
        counts = {kind: sum(n for (_, k), n in self.by_phase.items() if k == kind) for kind in cpu}
        self.samples = sum(counts.values())
        loop_share = cpu["loop"] / counts["loop"] if counts.get("loop") else 0.0
        self.other = Counter({where: n * loop_share for where, n in self.other.items()})  # "other" is mostly the loop's
        self.by_phase = Counter({(phase, kind): n * cpu[kind] / counts[kind]
                                 for (phase, kind), n in self.by_phase.items() if counts.get(kind)})

    @property
    def total(self) -> float:
        return sum(self.by_phase.values())


@contextmanager
def sampled(rate: float, workdir: Path, *, keep: bool = False) -> Iterator[Profile]:
    """Sample this process with py-spy while inside; the profile is filled on the way out (``keep``: py-spy's
    raw samples are left in ``workdir``)."""
    out = workdir / f"py-spy-{os.getpid()}-{time.monotonic_ns()}.txt"
    spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(os.getpid()),
                            "--rate", f"{rate:g}", "--format", "raw", "--threads", "--full-filenames",
                            "--nonblocking", "--output", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # py-spy attaches
    profile = Profile()
    try:
        yield profile
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        profile.by_phase, profile.other = parse_raw(out.read_text(), main_thread=threading.main_thread().native_id
                                                    or 0)
        if not keep:
            out.unlink()


def table_lines(runs: list[tuple[Profile, float, float]]) -> list[str]:
    """A Markdown table: each phase's CPU (median over ``runs`` of ``(sampler, process time, wall time)``),
    on the event loop's thread and the warehouse threads, and its share of the sampled whole."""
    import statistics

    def median(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    lines = ["| phase | event loop thread | warehouse threads | both | share |", "|---|---:|---:|---:|---:|"]
    whole = median([s.total for s, _, _ in runs])
    for phase in PHASES:
        loop = median([s.by_phase[phase, "loop"] for s, _, _ in runs])
        warehouse = median([s.by_phase[phase, "warehouse"] for s, _, _ in runs])
        both = median([s.by_phase[phase, "loop"] + s.by_phase[phase, "warehouse"] for s, _, _ in runs])
        if both:
            lines.append(f"| {phase} | {loop:.2f} s | {warehouse:.2f} s | {both:.2f} s | {both / whole:.0%} |")
    lines.append(f"| all phases | | | {whole:.2f} s | |")
    lines.append(f"| process time of execute() | | | {median([p for _, p, _ in runs]):.2f} s | |")
    lines.append(f"| wall time of execute() | | | {median([w for _, _, w in runs]):.2f} s | |")
    return lines


def profile(rows: int, *, warehouse: str, names: str, runs: int, workdir: Path, seed: int = 2026,
            rate: float = 250.0, keep: bool = False,
            columns: tuple[str, ...] | None = None) -> list[tuple[Profile, float, float, dict[str, Any]]]:
    """``runs`` first runs, each on a fresh table; each run's sampler, process time, wall time and summary
    (``columns``: the answer fields the target holds, None: every one)."""
    from benchmarks import in_task
    from benchmarks.provider import enrich_customers
    from benchmarks.service import BenchService

    done = []
    with BenchService(workdir / "emulator_cpu_phases.log", credits=1_000_000_000) as service:
        for attempt in range(runs):
            table = in_task.build_table(warehouse, rows, names, seed=seed + attempt, workdir=workdir)
            try:
                with mock.patch.dict(os.environ, {**service.connection_env(), **table.env}):
                    work = enrich_customers({"sql_conn_id": in_task.WAREHOUSE_CONN_ID,
                                             "source_table": table.conf["table"],
                                             "answers_table": table.conf["answers_table"], "columns": columns})
                    with sampled(rate, workdir, keep=keep) as sampler:
                        cpu, loop, wall = time.process_time(), time.thread_time(), time.perf_counter()
                        summary = work()
                        cpu, loop, wall = (time.process_time() - cpu, time.thread_time() - loop,
                                           time.perf_counter() - wall)
                sampler.scale({"loop": loop, "warehouse": cpu - loop})
                done.append((sampler, cpu, wall, summary))
            finally:
                table.cleanup()
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--warehouse", choices=("postgres", "sqlite", "duckdb"), default="postgres")
    parser.add_argument("--names", default="first", help="the table's name distribution (benchmarks.distributions)")
    parser.add_argument("--runs", type=int, default=3, help="first runs, each on a fresh table (the median is shown)")
    parser.add_argument("--rate", type=float, default=250.0, help="py-spy's samples per second")
    parser.add_argument("--keep", action="store_true", help="keep py-spy's raw samples in the workdir")
    parser.add_argument("--columns", type=answer_fields, metavar="LIST",
                        help="the answer fields the target holds (the operator's columns=), e.g. gender,probability "
                             "(default: every one)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/namelookup-cpu-phases"))
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    done = profile(args.rows, warehouse=args.warehouse, names=args.names, runs=args.runs, workdir=args.workdir,
                   rate=args.rate, keep=args.keep, columns=args.columns)
    for sampler, cpu, wall, summary in done:
        print(f"run: {wall:.2f} s wall, {cpu:.2f} s process time ({sampler.samples} samples), "
              f"{summary.get('credits_used')} credits, {summary.get('statements')} statements")
    print(f"\n{args.rows:,} rows, {args.warehouse}, {args.names}, the target holding {written_fields(args.columns)}, "
          f"first run, median of {len(done)}:\n")
    print("\n".join(table_lines([(s, c, w) for s, c, w, _ in done])))
    other: Counter[str] = Counter()
    for sampler, *_ in done:
        other.update(sampler.other)
    if other:
        print("\n'other', by the innermost frame of the provider (all runs):")
        for where, spent in other.most_common(8):
            print(f"  {spent:6.2f} s  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
