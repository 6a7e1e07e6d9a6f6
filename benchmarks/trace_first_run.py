"""Where a provider first run's time goes: a timeline of its warehouse steps, its HTTP requests
and its log lines, on a fresh PostgreSQL table against the emulator (over a WAN round trip
by default).

Not a benchmark (nothing is compared): a tool for finding what lies on the critical path
before changing the engine. The run is the provider's as :mod:`benchmarks.provider` runs it
(``SqlGenderLookupOperator.execute``), in this process, with each warehouse step
(``WarehouseSession.run``: one function on the session's thread, named by its qualified
name) and each HTTP request (``httpx.AsyncClient.send``) timed, and the TLS contexts made
(``httpx.create_ssl_context``); the timeline is printed in
milliseconds from the start of ``execute``, and after it the run's phases (:func:`phases`: up to
the first lookup request, the lookups, after the last answer, and the warehouse steps by name). A
second run over the unchanged table follows when ``--rerun`` is given. ``--names`` picks the table's
name distribution (:mod:`benchmarks.distributions`) on every warehouse, so that a case of the
in-task benchmark can be traced as it was measured; ``--columns`` narrows the target to some answer
fields (the operator's ``columns``, e.g. ``gender,probability`` as the hand-written DAG's; default every one).

Example::

    .venv/bin/python -m benchmarks.trace_first_run --rows 20000 --latency-ms 80 120
    .venv/bin/python -m benchmarks.trace_first_run --rows 200000 --latency-ms 0 0 --warehouse sqlite --rerun
    .venv/bin/python -m benchmarks.trace_first_run --rows 1000000 --latency-ms 0 0 --names share5
    .venv/bin/python -m benchmarks.trace_first_run --rows 1000000 --latency-ms 0 0 --columns gender,probability
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks import table_postgres
from benchmarks.distributions import DISTRIBUTIONS
from benchmarks.provider import answer_fields, written_fields
from benchmarks.service import BenchService


@dataclass
class Timeline:
    """Spans (start, end, lane, what) in seconds from :attr:`origin`."""

    origin: float = 0.0
    spans: list[tuple[float, float, str, str]] = field(default_factory=list)

    def add(self, start: float, end: float, lane: str, what: str) -> None:
        self.spans.append((start - self.origin, end - self.origin, lane, what))

    def lines(self) -> Iterator[str]:
        for start, end, lane, what in sorted(self.spans):
            duration = f"{(end - start) * 1000:7.1f} ms" if end > start else " " * 10
            yield f"{start * 1000:8.1f} {end * 1000:8.1f} {duration}  {lane:<5} {what}"


def phases(timeline: Timeline, total: float) -> list[tuple[str, float]]:
    """A run's time by phase, in seconds: up to the first lookup request, the lookups (first request
    out to last answer in), after the last answer (the last stores, the fill), and each warehouse
    step's name with its summed time (steps of one session run one at a time, but beside the
    lookups and the other session's steps, so their sum is not a share of ``total``). The distinct
    pass is ``TableQuestions.pages`` whether it reads on the run's session or on its own.

    >>> t = Timeline()
    >>> t.add(0.0, 0.1, "sql", "TableQuestions.pages.<locals>.<lambda> (session 1)")
    >>> t.add(0.1, 0.3, "http", "POST /v2/gender"); t.add(0.2, 0.4, "http", "POST /v2/gender")
    >>> t.add(0.4, 0.9, "sql", "TargetTable._fill_new (session 1)")
    >>> [(what, round(seconds, 2)) for what, seconds in phases(t, 1.0)]  # doctest: +NORMALIZE_WHITESPACE
    [('whole run', 1.0), ('before the first lookup request', 0.1), ('lookups: 2 requests', 0.3),
     ('after the last answer', 0.6), ('step TargetTable._fill_new', 0.5), ('step TableQuestions.pages', 0.1)]
    """
    lookups = [(start, end) for start, end, lane, what in timeline.spans
               if lane == "http" and what.startswith("POST ")]
    found: list[tuple[str, float]] = [("whole run", total)]
    if lookups:
        first, last = min(s for s, _ in lookups), max(e for _, e in lookups)
        found += [("before the first lookup request", first), (f"lookups: {len(lookups)} requests", last - first),
                  ("after the last answer", total - last)]
    steps: dict[str, float] = {}
    for start, end, lane, what in timeline.spans:
        if lane == "sql":
            name = what.split(" (session")[0].split(".<locals>")[0]
            name = "TableQuestions.pages" if name == "next" else name  # a reader's page, on its own session
            steps[name] = steps.get(name, 0.0) + end - start
    found += [(f"step {name}", seconds) for name, seconds in sorted(steps.items(), key=lambda item: -item[1])]
    return found


class _LogSpans(logging.Handler):
    def __init__(self, timeline: Timeline) -> None:
        super().__init__(logging.INFO)
        self.timeline = timeline

    def emit(self, record: logging.LogRecord) -> None:
        now = time.perf_counter()
        self.timeline.add(now, now, "log", record.getMessage()[:160])


@contextmanager
def traced(timeline: Timeline, *, statements: bool = False) -> Iterator[None]:
    """Time every warehouse step and HTTP request, and note every log line, while inside; with
    ``statements``, every SQL statement of a step too (its first 160 characters)."""
    import httpx

    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    original_run, original_send, original_tls = WarehouseSession.run, httpx.AsyncClient.send, httpx.create_ssl_context
    original_calls = {name: getattr(WarehouseSession, name) for name in ("execute", "executemany", "fetchall")}

    def timed_statement(name: str) -> Any:
        original = original_calls[name]

        def call(self: WarehouseSession, sql: str, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(self, sql, *args, **kwargs)
            finally:
                timeline.add(start, time.perf_counter(), "stmt", " ".join(sql.split())[:160])
        return call

    async def run(self: WarehouseSession, fn: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await original_run(self, fn, *args, **kwargs)
        finally:
            name = getattr(fn, "__qualname__", repr(fn))
            timeline.add(start, time.perf_counter(), "sql", f"{name} (session {id(self) % 1000})")

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        start = time.perf_counter()
        try:
            return await original_send(self, request, **kwargs)
        finally:
            timeline.add(start, time.perf_counter(), "http", f"{request.method} {request.url.path}")

    def create_ssl_context(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original_tls(*args, **kwargs)
        finally:
            timeline.add(start, time.perf_counter(), "tls", "httpx.create_ssl_context")

    handler = _LogSpans(timeline)
    logger = logging.getLogger("airflow.task.operators")
    WarehouseSession.run = run  # type: ignore[method-assign]
    if statements:
        for name in original_calls:
            setattr(WarehouseSession, name, timed_statement(name))
    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    httpx.create_ssl_context = create_ssl_context
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        yield
    finally:
        WarehouseSession.run = original_run  # type: ignore[method-assign]
        for name, original in original_calls.items():
            setattr(WarehouseSession, name, original)
        httpx.AsyncClient.send = original_send  # type: ignore[method-assign]
        httpx.create_ssl_context = original_tls
        logger.removeHandler(handler)
        logger.level = level


def trace(rows: int, latency_ms: tuple[float, float], *, rerun: bool, workdir: Path, warehouse: str = "postgres",
          names: str = "sample", statements: bool = False, columns: tuple[str, ...] | None = None) -> None:
    """Build the table, run the provider (and its rerun), print each run's timeline (``columns``: the
    answer fields the target holds, None: every one)."""
    with BenchService(workdir / "emulator_trace.log", credits=100_000_000) as service:
        if max(latency_ms) > 0:
            service.process.set_faults(latency_ms=list(latency_ms))
        suffix = uuid.uuid4().hex[:8]
        if warehouse == "postgres" and names == "sample":
            table, answers = f"bench_trace_{suffix}", f"bench_trace_answers_{suffix}"
            table_postgres.load_customers(table, rows, seed=2026)
            conn_id, env = table_postgres.WAREHOUSE_CONN_ID, table_postgres.connection_env()

            def cleanup() -> None:
                table_postgres.drop([table, f"{table}_gender", answers])
        else:
            from benchmarks import in_task

            built = in_task.build_table(warehouse, rows, names, seed=2026, workdir=workdir)
            table, answers, conn_id, env = (built.conf["table"], built.conf["answers_table"],
                                            in_task.WAREHOUSE_CONN_ID, built.env)
            cleanup = built.cleanup
        connections = mock.patch.dict(os.environ, {**service.connection_env(), **env})
        try:
            connections.start()
            from benchmarks.provider import enrich_customers

            for attempt in ("first run", "rerun")[: 2 if rerun else 1]:
                work = enrich_customers({"sql_conn_id": conn_id, "source_table": table, "answers_table": answers,
                                         "columns": columns})
                timeline = Timeline()
                with traced(timeline, statements=statements):
                    timeline.origin = time.perf_counter()
                    summary = work()
                    total = time.perf_counter() - timeline.origin
                print(f"\n== {attempt}: {rows:,} rows on {warehouse}, latency {latency_ms[0]:g}-{latency_ms[1]:g} ms: "
                      f"{total * 1000:.0f} ms, {summary.get('lookups')} lookups, "
                      f"{summary.get('statements')} statements; the target holds {written_fields(columns)}")
                print("   start      end   duration  lane  what")
                for line in timeline.lines():
                    print(line)
                print(f"-- {attempt} by phase (ms)")
                for what, seconds in phases(timeline, total):
                    print(f"{seconds * 1000:9.1f}  {what}")
        finally:
            connections.stop()
            cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--latency-ms", type=float, nargs=2, default=(80.0, 120.0), metavar=("LOW", "HIGH"))
    parser.add_argument("--rerun", action="store_true", help="trace a rerun over the unchanged table too")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/namelookup-trace"))
    parser.add_argument("--warehouse", choices=("postgres", "sqlite", "duckdb"), default="postgres")
    parser.add_argument("--names", default="sample", choices=sorted(DISTRIBUTIONS),
                        help="the table's name distribution (benchmarks.distributions)")
    parser.add_argument("--statements", action="store_true", help="time each SQL statement too (lane stmt)")
    parser.add_argument("--columns", type=answer_fields, metavar="LIST",
                        help="the answer fields the target holds (the operator's columns=), e.g. gender,probability "
                             "(default: every one)")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    trace(args.rows, tuple(args.latency_ms), rerun=args.rerun, workdir=args.workdir, warehouse=args.warehouse,
          names=args.names, statements=args.statements, columns=args.columns)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
