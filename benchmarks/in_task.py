"""Benchmark: what a user waits for, inside a real task run, beside the ``@task`` they would write.

An evaluating engineer times the operator in a DAG run on their own data, beside a hand-written
task in the same run. This benchmark does the same: ``airflow dags test`` (a fresh interpreter,
an SQLite metadata database, everything a task does: connections, rendering, the usage record,
XCom, metrics, lineage) runs a DAG holding the provider's ``SqlGenderLookupOperator`` and the
hand-written ``@task`` of :mod:`benchmarks.handwritten` (16 requests in flight, the temporary-table
upsert) over the same table (:mod:`benchmarks.dags.namelookup_in_task_bench`). Each task times
its own work (``execute`` for the operator, the whole ``@task`` body for the hand-written one);
the task instances' own durations (start to end, as Airflow records them) are read beside.

A case is a warehouse, a table size, a name distribution (:mod:`benchmarks.distributions`) and
a network (loopback, or the emulator's latency fault at a WAN round trip). Each repetition builds
a fresh table and runs the DAG twice (a first run and a rerun over the unchanged table; the
hand-written task pays again), the two tasks' order alternating between repetitions. A small
table (at most 100,000 rows) is built :attr:`InTaskOptions.repeats` times, a big one
:attr:`InTaskOptions.big_repeats` times (three: each 1M case is the median of three first runs), and
the :attr:`InTaskOptions.reruns` unchanged reruns are shared among its tables, the order alternating
between reruns too: a rerun lasts well under 2 s, so its ratio is a median of several. The table
shows medians, and the median of the ratios (hand-written ÷ provider: above 1, the provider is
faster) with their range; beside the time ratio, the CPU ratio: the process time of each task's
timed work, provider ÷ hand-written (above 1, the provider spends more CPU), which a loaded machine
moves much less than the time.

The provider's target holds every answer field by default; :attr:`InTaskOptions.columns` narrows it
(the operator's ``columns``, through the DAG run's conf), e.g. to the hand-written task's ``gender`` and
``probability``. The report says which the provider wrote.

Example::

    python -m benchmarks.run --only in_task --in-task-rows 1000000 --in-task-latency-rows 20000,1000000
    python -m benchmarks.run --only in_task --in-task-rows 200000 --in-task-latency-rows 20000 \
        --in-task-warehouses postgres --in-task-distributions first
    section = run(InTaskOptions(cases=(("postgres", 20_000, "share35", "latency"),)), workdir=Path("/tmp/b"))
    section = run(InTaskOptions(cases=(("postgres", 1_000_000, "first", "loopback"),),
                                columns=("gender", "probability")), workdir=Path("/tmp/b"))
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.distributions import customer_rows_of
from benchmarks.figures import Section, count, ratio, seconds
from benchmarks.figures import Table as ReportTable
from benchmarks.machine import usable_cores
from benchmarks.provider import written_fields
from benchmarks.service import BenchService

ROOT = Path(__file__).resolve().parent.parent
DAGS = Path(__file__).resolve().parent / "dags"
WAREHOUSE_CONN_ID = "bench_warehouse"
POSTGRES = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "test"}
ATTEMPTS = ("first", "rerun")
FIRST_GOALS = {("postgres", "loopback"): 1.0, ("postgres", "latency"): 1.5, ("sqlite", "loopback"): 0.8,
               ("duckdb", "loopback"): 0.8}
"""First-run goals of issue 53 (hand-written ÷ provider, at least), judged at :data:`GOAL_SIZES` and above."""
RERUN_GOALS = {"postgres": 20.0, "sqlite": 20.0, "duckdb": 20.0}
CPU_GOAL = 1.5
"""Issue 53: on a loopback first run of :data:`GOAL_SIZES` rows, the provider's task CPU (process time of
its timed work) at most this many times the hand-written task's."""
SECONDS_GOALS = {("postgres", "loopback", "first"): 30.0, ("postgres", "loopback", "rerun"): 5.0}
"""Issues 33's and 53's goals in seconds for the provider's ``execute()`` (at most), judged at
:data:`SECONDS_GOAL_ROWS`."""
SECONDS_GOAL_ROWS = 10_000_000
GOAL_SIZES = {"loopback": 1_000_000, "latency": 20_000}
CORE_PARTS = ("task", "emulator", "rest")
"""Where a task's core-seconds went: its own process, the emulator, the rest of the machine."""

BIG_ROWS = 100_000
"""A case of more rows is repeated :attr:`InTaskOptions.big_repeats` times."""

Case = tuple[str, int, str, str]
"""``(warehouse, rows, distribution, network)``."""


@dataclass(frozen=True)
class InTaskOptions:
    """What to run.

    :param cases: the cases, in order.
    :param repeats: repetitions of a case of at most 100,000 rows (each on a fresh table).
    :param big_repeats: repetitions of a bigger case (each on a fresh table): its first-run figures
        are the median of these.
    :param reruns: unchanged reruns of a case, shared among its repetitions (at least one each):
        each a DAG run over an unchanged table, the tasks' order alternating.
    :param latency_ms: the WAN network's latency fault: (low, high) milliseconds per request.
    :param seed: seed of the rows.
    :param timeout: most seconds one ``airflow dags test`` may take.
    :param columns: the answer fields the provider's target holds (the operator's ``columns``, e.g.
        ``("gender", "probability")``, what the hand-written task writes); None: every one.
    """

    cases: tuple[Case, ...] = (
        *((w, 1_000_000, d, "loopback") for w in ("postgres", "sqlite", "duckdb")
          for d in ("first", "sample", "share5")),
        *(("postgres", 20_000, d, "latency") for d in ("first", "sample", "share5", "share35")),
        *(("postgres", 1_000_000, d, "latency") for d in ("first", "sample")),
    )
    repeats: int = 5
    big_repeats: int = 3
    reruns: int = 5
    latency_ms: tuple[float, float] = (80.0, 120.0)
    seed: int = 2026
    timeout: float = 3600.0
    columns: tuple[str, ...] | None = None

    @property
    def conf(self) -> dict[str, Any]:
        """What the DAG run's conf adds to a table's: the provider's ``columns``, when given."""
        return {} if self.columns is None else {"columns": ",".join(self.columns)}


@dataclass
class TaskFigures:
    """One task of one DAG run: what it timed inside, and Airflow's record of it."""

    inside: float
    duration: float
    value: dict[str, Any] = field(default_factory=dict)


@dataclass
class DagRunFigures:
    provider: TaskFigures
    handwritten: TaskFigures
    credits: int
    dag_id: str = ""


class AirflowHome:
    """An ``AIRFLOW_HOME`` with a migrated SQLite metadata database whose DAGs folder is :data:`DAGS`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.env = {"AIRFLOW_HOME": str(path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS), "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.airflow("db", "migrate", timeout=600, log=path / "migrate.log")

    def airflow(self, *args: str, env: dict[str, str] | None = None, timeout: float, log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            code = subprocess.run([sys.executable, "-m", "airflow", *args],
                                  env={**os.environ, **self.env, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout, cwd=ROOT, check=False).returncode
        if code != 0:
            raise RuntimeError(f"airflow {' '.join(args[:2])} failed (exit code {code}); see {log}")

    def last_run(self, dag_id: str) -> DagRunFigures:
        """The figures of ``dag_id``'s latest DAG run, read from the metadata database."""
        db = sqlite3.connect(self.path / "airflow.db")
        try:
            (run_id,) = db.execute("SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1",
                                   [dag_id]).fetchone()
            tasks = {}
            for task_id, duration, state in db.execute(
                    "SELECT task_id, duration, state FROM task_instance WHERE dag_id = ? AND run_id = ? "
                    "AND task_id IN ('provider', 'handwritten')",
                    [dag_id, run_id]):
                if state != "success":
                    raise RuntimeError(f"{dag_id} {run_id}: task {task_id} ended {state}")
                (raw,) = db.execute("SELECT value FROM xcom WHERE dag_id = ? AND run_id = ? AND task_id = ? "
                                    "AND key = 'return_value'", [dag_id, run_id, task_id]).fetchone()
                value = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
                tasks[task_id] = TaskFigures(inside=float(value["execute_seconds"]), duration=float(duration),
                                             value=value)
        finally:
            db.close()
        return DagRunFigures(tasks["provider"], tasks["handwritten"], credits=0, dag_id=dag_id)


@dataclass
class Table:
    """A case's table, and how the runs reach it."""

    conf: dict[str, Any]
    env: dict[str, str]
    cleanup: Callable[[], None]
    compact: Callable[[], None] = lambda: None
    """Before a rerun after the first: the hand-written DAG's target made as it was after its first
    run. On PostgreSQL its upsert leaves every row it rewrote dead, so each rerun would be slower
    than the last (7.95 s, then 9.98-10.6 s, over five reruns of 1M rows) and the ratio would favour
    the provider; ``VACUUM FULL`` rewrites the table compactly, outside both tasks' timing."""


def _postgres() -> Any:
    import psycopg

    return psycopg.connect(**POSTGRES, autocommit=True)  # type: ignore[arg-type]


def build_table(warehouse: str, rows: int, distribution: str, *, seed: int, workdir: Path) -> Table:
    """A fresh ``customers`` table of ``rows`` rows of ``distribution`` on ``warehouse``."""
    data = list(customer_rows_of(distribution, rows, seed=seed))
    suffix = uuid.uuid4().hex[:8]
    if warehouse == "postgres":
        table = f"bench_in_task_{suffix}"
        with _postgres() as db:
            db.execute(f"CREATE TABLE {table} (customer_id BIGINT PRIMARY KEY, first_name TEXT, country TEXT)")
            with db.cursor().copy(f"COPY {table} (customer_id, first_name, country) FROM STDIN") as copy:
                for row in data:
                    copy.write_row(row)
            db.execute(f"ANALYZE {table}")
        conn = {"conn_type": "postgres", "host": POSTGRES["host"], "port": POSTGRES["port"],
                "login": POSTGRES["user"], "schema": POSTGRES["dbname"]}

        def drop() -> None:
            with _postgres() as db:
                for name in (table, f"{table}_gender", f"{table}_handwritten", f"answers_{suffix}"):
                    db.execute(f"DROP TABLE IF EXISTS {name}")

        def compact() -> None:
            with _postgres() as db:
                db.execute(f"VACUUM FULL {table}_handwritten")

        return Table({"warehouse": "postgres", "table": table, **_answers(suffix)}, _conn_env(conn), drop, compact)
    path = workdir / f"in_task_{suffix}.{'duckdb' if warehouse == 'duckdb' else 'db'}"
    if warehouse == "duckdb":
        import duckdb

        db = duckdb.connect(str(path))
        db.execute("CREATE TABLE customers (customer_id BIGINT PRIMARY KEY, first_name VARCHAR, country VARCHAR)")
        db.execute("INSERT INTO customers SELECT UNNEST(?), UNNEST(?), UNNEST(?)", [[r[i] for r in data]
                                                                                     for i in range(3)])
        db.close()
    else:
        with sqlite3.connect(path) as lite:
            lite.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)")
            lite.executemany("INSERT INTO customers VALUES (?, ?, ?)", data)
        lite.close()
    return Table({"warehouse": warehouse, "table": "customers", "db": str(path), **_answers(suffix)},
                 _conn_env({"conn_type": warehouse, "host": str(path)}), lambda: path.unlink(missing_ok=True))


def _conn_env(conn: dict[str, Any]) -> dict[str, str]:
    return {f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}": json.dumps(conn)}


def _answers(suffix: str) -> dict[str, Any]:
    return {"conn_id": WAREHOUSE_CONN_ID, "answers_table": f"answers_{suffix}", "in_flight": 16}


def run(options: InTaskOptions, workdir: Path) -> Section:
    """Run every case and report."""
    logs = workdir / "logs"
    home = AirflowHome(workdir / "airflow-home")
    results: dict[tuple[Case, str], list[DagRunFigures]] = {}
    for network in ("loopback", "latency"):
        cases = [case for case in options.cases if case[3] == network]
        if not cases:
            continue
        with BenchService(workdir / f"emulator_in_task_{network}.log", credits=1_000_000_000) as service:
            if network == "latency":
                service.process.set_faults(latency_ms=list(options.latency_ms))
            for case in cases:
                warehouse, rows, distribution, _ = case
                repeats = options.repeats if rows <= BIG_ROWS else options.big_repeats
                reruns = max(1, -(-options.reruns // repeats))
                for repetition in range(repeats):
                    table = build_table(warehouse, rows, distribution, seed=options.seed + repetition, workdir=workdir)
                    try:
                        turns = (("first", repetition), *(("rerun", repetition + r) for r in range(reruns)))
                        for attempt, turn in turns:
                            if attempt == "rerun" and turn > repetition:
                                table.compact()
                            dag_id = "bench_provider_first" if turn % 2 == 0 else "bench_handwritten_first"
                            before = service.counters()[1]
                            home.airflow("dags", "test", dag_id, "-c", json.dumps({**table.conf, **options.conf}),
                                         env={**service.connection_env(), **table.env,
                                              "NAMELOOKUP_BENCH_EMULATOR_PID": str(service.process.pid)},
                                         timeout=options.timeout,
                                         log=logs / f"in_task_{warehouse}_{rows}_{distribution}_{network}.log")
                            figures = home.last_run(dag_id)
                            figures.credits = before - service.counters()[1]
                            results.setdefault((case, attempt), []).append(figures)
                    finally:
                        table.cleanup()
    return report(options, results)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def task_cpu(task: TaskFigures) -> float | None:
    """The process time of a task's timed work (its own process's CPU), None when it counted none."""
    spent = _cores(task)
    return None if spent is None else spent["task"]


def cpu_ratios(runs: list[DagRunFigures]) -> list[float]:
    """Each run's task CPU, provider ÷ hand-written (runs whose tasks counted none are left out)."""
    ratios = []
    for r in runs:
        provider, handwritten = task_cpu(r.provider), task_cpu(r.handwritten)
        if provider is not None and handwritten:
            ratios.append(provider / handwritten)
    return ratios


def _cpu_shown(runs: list[DagRunFigures]) -> tuple[str, str]:
    """The median task CPU of each side (``provider / hand-written``) and the median CPU ratio with its range."""
    ratios = cpu_ratios(runs)
    if not ratios:
        return "-", "-"
    provider = _median([c for r in runs if (c := task_cpu(r.provider)) is not None])
    handwritten = _median([c for r in runs if (c := task_cpu(r.handwritten)) is not None])
    return f"{seconds(provider)} / {seconds(handwritten)}", _shown(ratios)


def _shown(ratios: list[float]) -> str:
    middle = ratio(_median(ratios))
    return middle if len(ratios) == 1 else f"{middle} ({ratio(min(ratios))}-{ratio(max(ratios))}, {len(ratios)} runs)"


def report(options: InTaskOptions, results: dict[tuple[Case, str], list[DagRunFigures]]) -> Section:
    low, high = options.latency_ms
    section = Section("in_task", "Inside a task: the provider's execute() beside the hand-written @task, one DAG run")
    table = section.table(
        ["network", "warehouse", "table", "names", "run", "provider execute()", "provider task", "its summary",
         "hand-written @task", "hand-written task", "ratio (inside)", "task CPU: provider / hand-written",
         "CPU ratio (provider ÷ hand-written)", "ratio (task durations)", "provider credits"],
        f"The provider writes {written_fields(options.columns)}, the hand-written task gender and probability "
        "(each beside the key; the provider beside its own columns too). "
        "airflow dags test on an SQLite metadata database; each task times its own work (the operator's "
        "execute(), the @task's whole body); task = the task instance's duration as Airflow records it; its "
        "summary = the run's own duration_seconds. Ratio = hand-written ÷ provider (above 1: the provider is "
        "faster); medians, and the median ratio with its range over the repetitions. Task CPU = the process time "
        "of each task's timed work; its ratio is provider ÷ hand-written (below 1: the provider spends less CPU):")
    cores = _cores_table(section)
    for case in options.cases:
        warehouse, rows, distribution, network = case
        label = "loopback" if network == "loopback" else f"{low:g}-{high:g} ms"
        for attempt in ATTEMPTS:
            runs = results.get((case, attempt), [])
            if not runs:
                continue
            inside = [r.handwritten.inside / r.provider.inside for r in runs]
            durations = [r.handwritten.duration / r.provider.duration for r in runs]
            table.add(label, warehouse, f"{count(rows)} rows", distribution, attempt,
                      seconds(_median([r.provider.inside for r in runs])),
                      seconds(_median([r.provider.duration for r in runs])),
                      seconds(_median([float(r.provider.value.get("duration_seconds", 0)) for r in runs])),
                      seconds(_median([r.handwritten.inside for r in runs])),
                      seconds(_median([r.handwritten.duration for r in runs])),
                      _shown(inside), *_cpu_shown(runs), _shown(durations),
                      count(runs[0].provider.value.get("credits_used", 0)))
            _check(section, case, attempt, label, inside, runs)
            _add_cores(cores, case, attempt, label, runs)
    section.data = {"options": {"cases": [list(c) for c in options.cases], "repeats": options.repeats,
                                "big_repeats": options.big_repeats,
                                "reruns": options.reruns, "latency_ms": [low, high], "seed": options.seed,
                                "columns": None if options.columns is None else list(options.columns)},
                    "runs": {"_".join(map(str, (*case, attempt))): [
                        {"provider": vars(r.provider), "handwritten": vars(r.handwritten), "credits": r.credits,
                         "dag_id": r.dag_id}
                        for r in runs] for (case, attempt), runs in results.items()}}
    return section


def _cores(task: TaskFigures) -> dict[str, float] | None:
    """The core-seconds a task counted (``task``, ``emulator``, ``rest``), None when it counted none."""
    spent = task.value.get("cores")
    return {part: float(spent[part]) for part in CORE_PARTS} if isinstance(spent, dict) else None


def _spent(runs: list[TaskFigures]) -> tuple[dict[str, float], float] | None:
    """The median core-seconds of each part over ``runs``, and the median of their sums."""
    counted = [c for c in map(_cores, runs) if c is not None]
    if not counted:
        return None
    return {part: _median([c[part] for c in counted]) for part in CORE_PARTS}, _median([sum(c.values())
                                                                                         for c in counted])


def _cores_table(section: Section) -> ReportTable:
    """The section's table of what each task's work cost the machine, beside the time a goal asks of
    the provider: on a machine of ``n`` cores a run that keeps ``c`` core-seconds busy cannot end before ``c / n``."""
    n = usable_cores()
    return section.table(
        ["network", "warehouse", "table", "names", "run", "provider: task / emulator / rest",
         "hand-written: task / emulator / rest", "provider in all", "hand-written in all",
         f"provider's floor on {n} cores", "the goal's time"],
        "Where the cores go: the core-seconds each task's work kept busy (CPU time of the task's own process, "
        "of the emulator, and of the rest of the machine: the warehouse server, anything else), medians. A "
        f"run cannot end before its core-seconds ÷ the cores ({n} here); the goal's time is the hand-written "
        "task's time ÷ the goal, what the provider's execute() would have to take:")


def _add_cores(table: ReportTable, case: Case, attempt: str, label: str, runs: list[DagRunFigures]) -> None:
    """``case``'s row of the cores table (none when its tasks counted no cores)."""
    provider, handwritten = _spent([r.provider for r in runs]), _spent([r.handwritten for r in runs])
    if provider is None or handwritten is None:
        return
    warehouse, rows, distribution, _ = case
    goal = _goal(case, attempt)
    goal_time = _median([r.handwritten.inside for r in runs]) / goal if goal else None
    floor = provider[1] / usable_cores()
    table.add(label, warehouse, f"{count(rows)} rows", distribution, attempt,
              " / ".join(seconds(provider[0][part]) for part in CORE_PARTS),
              " / ".join(seconds(handwritten[0][part]) for part in CORE_PARTS),
              seconds(provider[1]), seconds(handwritten[1]), seconds(floor),
              "-" if goal_time is None else f"{seconds(goal_time)}{' (below the floor)' if goal_time < floor else ''}")


def _goal(case: Case, attempt: str) -> float | None:
    """Issue 53's ratio for ``case``'s ``attempt`` (hand-written ÷ provider, at least), None where
    it sets none (another warehouse, a table smaller than :data:`GOAL_SIZES`)."""
    warehouse, rows, _, network = case
    if rows < GOAL_SIZES[network]:
        return None
    if attempt == "first":
        return FIRST_GOALS.get((warehouse, network))
    return RERUN_GOALS.get(warehouse) if network == "loopback" or warehouse == "postgres" else None


def _check(section: Section, case: Case, attempt: str, label: str, inside: list[float],
           runs: list[DagRunFigures]) -> None:
    warehouse, rows, distribution, network = case
    where = f"{label}, {warehouse}, {count(rows)} rows, {distribution}, {attempt}"
    goal = _goal(case, attempt)
    section.check(f"{where}: hand-written @task ÷ provider execute()", f">= {goal:g}x" if goal else "reported",
                  _shown(inside), met=_median(inside) >= goal if goal else None)
    if attempt == "first" and network == "loopback" and rows >= GOAL_SIZES[network] and (cpu := cpu_ratios(runs)):
        section.check(f"{where}: task CPU, provider ÷ hand-written", f"<= {CPU_GOAL:g}x", _shown(cpu),
                      met=_median(cpu) <= CPU_GOAL)
    if rows >= SECONDS_GOAL_ROWS and (limit := SECONDS_GOALS.get((warehouse, network, attempt))) is not None:
        taken = _median([r.provider.inside for r in runs])
        section.check(f"{where}: the provider's execute()", f"<= {limit:g} s", seconds(taken), met=taken <= limit)
    if attempt == "rerun":
        paid = sorted({int(r.provider.value.get("credits_used", -1)) for r in runs})
        section.check(f"{where}: the provider's rerun pays nothing", "0", ", ".join(map(str, paid)), met=paid == [0])
