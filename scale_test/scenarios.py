"""The two runs of the scale-out DAG in the scale test, what each must prove, and what every
scenario reports (:class:`ScenarioResult`; the third scenario, **approval**, is in
:mod:`scale_test.approval`).

**exact**: the scale-out DAG enriches a fresh table through ``shards`` mapped task
instances on both workers. Every row must be enriched exactly once, the emulator must
have charged exactly the table's distinct valid queries (counted by
:mod:`scale_test.facts`, not by the operator), and the tries must have run on both
workers (``task_instance.hostname``). The usage records the workers wrote, as the
api-server's credits view reports them, must add up to what the emulator charged, one
try per shard.

**kill**: the same on a fresh warehouse, with the emulator answering after 100-300 ms
as a remote service would; a second after a shard on ``worker-1`` has logged its plan
(its lookups are then under way), ``worker-1`` and everything under it gets SIGKILL. Airflow must notice the
lost tries (heartbeat timeout), retry them on ``worker-2`` and finish the run; every
row must be enriched once and the answers the target records must be the distinct
queries (none paid twice). The credits charged beyond what the target records are the
answers lost in flight (charged by the service, never written): they are counted,
reported, and must not exceed what the killed tries could have had in flight: the
requests still open at the emulator right after the kill (the victim's among them: the
emulator charges them though nobody reads the answer) plus, per killed try, the one
store under way, which holds at most the answers of two first windows (the concurrency
controller starts at ``DEFAULT_INITIAL_CONCURRENCY`` in flight and grows by half of it in
its first round trip; the kill comes within about a round trip of the plan at this latency).

Example::

    result = run_exact(deployment, rows=200_000, shards=8, seed=2026, timeout=300)
    result.failures          # [] when everything held
    result.figures()         # wall time, rows/s, credits, tries per worker...
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_namelookup.hooks.concurrency import DEFAULT_INITIAL_CONCURRENCY
from scale_test.deployment import DAG_ID, Deployment, TaskTry, wait_for
from scale_test.facts import QueryFacts
from scale_test.warehouse import TargetCheck

ENRICH_TASK = "enrich_gender"
BATCH_SIZE = 100
"""Queries per request (the connection's default ``batch_size``)."""
STORE_UNDER_WAY = 2 * DEFAULT_INITIAL_CONCURRENCY
"""Requests whose answers one store under way can hold when a try is killed early in its lookups."""
KILL_LATENCY_MS = (200, 500)
"""The emulator's added latency during the kill run, so that answers are in flight when the worker dies."""
PLAN_LOGGED = "Plan for "
"""What a table operator logs once it has planned and before it looks anything up."""
KILL_DELAY = 0.3
"""Seconds between a victim shard's plan line and the SIGKILL: inside its lookups."""


@dataclass
class ScenarioResult:
    """What one run did, and every expectation it broke."""

    name: str
    rows: int
    shards: int
    facts: QueryFacts
    run_id: str = ""
    state: str = ""
    seconds: float = 0.0
    check: TargetCheck | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    tries: list[TaskTry] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    dag_id: str = DAG_ID
    enrich_task: str = ENRICH_TASK

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            self.failures.append(message)

    @property
    def credits_charged(self) -> int:
        return int(self.stats.get("credits_charged", 0))

    def figures(self) -> dict[str, Any]:
        """The run's measured figures, JSON-ready."""
        enrich = [t for t in self.tries if t.task_id == self.enrich_task]
        return {
            "scenario": self.name, "dag_id": self.dag_id, "run_id": self.run_id, "state": self.state, "rows": self.rows,
            "mapped_task_instances": len({t.map_index for t in enrich}),
            "wall_seconds": round(self.seconds, 1),
            "rows_per_second": round(self.rows / self.seconds) if self.seconds else None,
            "distinct_valid_queries": self.facts.distinct_queries, "invalid_rows": self.facts.invalid_rows,
            "credits_charged": self.credits_charged, "requests": self.stats.get("requests"),
            "credits_recorded_in_target": self.check.credits_recorded if self.check else None,
            "credits_paid_twice": (self.check.credits_recorded - self.facts.distinct_queries) if self.check else None,
            "tries_by_worker": dict(sorted(Counter(t.hostname or "?" for t in enrich).items())),
            **self.extra, "failures": self.failures,
        }


def run_exact(deployment: Deployment, *, rows: int, shards: int, seed: int, timeout: float,
              log: Callable[[str], None] = print) -> ScenarioResult:
    """Scenario **exact**: see the module's docstring."""
    facts = deployment.warehouse.fill(rows, seed=seed)
    result = ScenarioResult("exact", rows, shards, facts)
    log(f"[exact] {rows:,} rows, {facts.distinct_queries:,} distinct valid queries, "
        f"{facts.invalid_rows:,} invalid rows; triggering {shards} shards")
    deployment.reset_emulator_stats()
    started = time.monotonic()
    result.run_id = deployment.trigger({"table": "customers", "shards": shards})
    result.state = deployment.wait_for_run(result.run_id, timeout)
    result.seconds = time.monotonic() - started
    collect(deployment, result)
    _expect_complete(deployment, result)
    hosts = {t.hostname for t in result.tries if t.task_id == ENRICH_TASK}
    result.expect(set(deployment.workers) <= hosts,
                  f"shards ran on {sorted(h or '?' for h in hosts)}, not on every worker of {deployment.workers}")
    extra = result.credits_charged - facts.distinct_queries
    result.expect(extra == 0, f"the emulator charged {result.credits_charged:,} credits; the table has "
                              f"{facts.distinct_queries:,} distinct valid queries ({extra:+,})")
    usage = deployment.usage_of(ENRICH_TASK)
    tries = len([t for t in result.tries if t.task_id == ENRICH_TASK])
    result.extra.update({"credits_in_usage_records": usage["credits_used"], "tries_in_usage_records": usage["tries"]})
    result.expect(usage["credits_used"] == result.credits_charged and usage["tries"] == tries,
                  f"the credits view reports {usage['credits_used']:,} credits over {usage['tries']} tries of "
                  f"{ENRICH_TASK}; the emulator charged {result.credits_charged:,} over {tries} tries")
    return result


def run_kill(deployment: Deployment, *, rows: int, shards: int, seed: int, timeout: float,
             log: Callable[[str], None] = print) -> ScenarioResult:
    """Scenario **kill**: see the module's docstring."""
    victim, survivors = deployment.workers[0], deployment.workers[1:]
    deployment.server.drop(deployment.warehouse_db)  # a fresh warehouse: no answer is known yet
    deployment.server.create(deployment.warehouse_db)
    facts = deployment.warehouse.fill(rows, seed=seed)
    result = ScenarioResult("kill", rows, shards, facts)
    log(f"[kill] {rows:,} rows, {facts.distinct_queries:,} distinct valid queries; emulator latency "
        f"{KILL_LATENCY_MS[0]}-{KILL_LATENCY_MS[1]} ms; {victim} gets SIGKILL mid-run")
    deployment.reset_emulator_stats()
    usage_before = deployment.usage_of(ENRICH_TASK)
    deployment.set_emulator_faults({"latency_ms": list(KILL_LATENCY_MS)})
    started = time.monotonic()
    try:
        result.run_id = deployment.trigger({"table": "customers", "shards": shards})

        def victim_is_looking_up() -> list[int]:
            """Shards running on the victim that have logged their plan: their lookups are under way."""
            running = [t for t in deployment.task_tries(result.run_id)
                       if t.task_id == ENRICH_TASK and t.state == "running" and t.hostname == victim]
            return [t.map_index for t in running if PLAN_LOGGED in read_log(deployment.task_log(result.run_id, t))]

        running = wait_for(victim_is_looking_up, timeout=timeout / 2, interval=0.3,
                           what=f"a shard on {victim} to start its lookups")
        time.sleep(KILL_DELAY)
        at_kill = deployment.emulator_stats()
        deployment.processes.kill(victim)
        killed_at = time.monotonic() - started
        after_kill = deployment.emulator_stats()
        log(f"[kill] SIGKILL to {victim} (its whole session) {killed_at:.0f} s into the run, "
            f"{KILL_DELAY} s after shards {running} logged their plan; {at_kill['credits_charged']:,} credits "
            f"charged so far")
        result.state = deployment.wait_for_run(result.run_id, timeout - killed_at)
    finally:
        deployment.set_emulator_faults({})
    result.seconds = time.monotonic() - started
    collect(deployment, result)
    _expect_complete(deployment, result)

    enrich = [t for t in result.tries if t.task_id == ENRICH_TASK]
    killed = [t for t in enrich if t.hostname == victim and t.state != "success"]
    retried_on = {t.hostname for t in enrich if any(k.map_index == t.map_index and k.try_number < t.try_number
                                                   for k in killed)}
    retry_work = [deployment.xcom(result.run_id, ENRICH_TASK, index) or {}
                  for index in sorted({t.map_index for t in killed})]
    retry_rows = sum(int(summary.get("rows_enriched") or 0) for summary in retry_work)
    recorded = result.check.credits_recorded if result.check else 0
    lost = result.credits_charged - recorded
    open_requests = _open_requests(at_kill)
    open_after_kill = _open_requests(after_kill)
    bound = (open_after_kill + len(killed) * STORE_UNDER_WAY) * BATCH_SIZE
    result.extra.update({
        "killed_worker": victim, "killed_after_seconds": round(killed_at, 1),
        "killed_tries": len(killed), "retries": sum(1 for t in enrich if t.try_number > 1),
        "retried_on": sorted(h or "?" for h in retried_on),
        "answers_lost_in_flight": lost, "lost_in_flight_bound": bound,
        "requests_open_at_kill": open_requests, "requests_open_after_kill": open_after_kill,
        "rows_enriched_by_retries": retry_rows,
        "lookups_by_retries": sum(int(summary.get("lookups") or 0) for summary in retry_work),
        # A SIGKILLed try cannot write its record: the view shows what the surviving tries spent.
        "credits_in_usage_records": deployment.usage_of(ENRICH_TASK)["credits_used"] - usage_before["credits_used"],
    })
    result.expect(bool(killed), f"no try of {ENRICH_TASK} on {victim} was lost: the kill missed the shards")
    result.expect(retry_rows > 0, "the retries found their shards already enriched: the kill came after the "
                                  "killed tries had finished their work, so it proves nothing about losing it")
    result.expect(bool(retried_on) and retried_on <= set(survivors),
                  f"the lost tries were retried on {sorted(h or '?' for h in retried_on)}, expected {survivors}")
    result.expect(0 <= lost <= bound,
                  f"{lost:,} credits were charged for answers never written (charged {result.credits_charged:,}, "
                  f"recorded {recorded:,}): more than the {len(killed)} killed tries could have had in flight "
                  f"({bound:,} = ({open_after_kill} requests open after the kill + {len(killed)} tries × "
                  f"{STORE_UNDER_WAY} requests in a store under way) × {BATCH_SIZE} queries)")
    return result


def _open_requests(stats: dict[str, Any]) -> int:
    """Requests the emulator has received and not yet answered."""
    return int(stats["requests"]) - sum(int(n) for n in stats["responses_by_status"].values())


def read_log(path: Path) -> str:
    """The text of a task try's log, ``""`` while it does not exist."""
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def collect(deployment: Deployment, result: ScenarioResult) -> None:
    """Read the run's tries, the emulator's counters and the target into ``result``."""
    result.tries = deployment.task_tries(result.run_id, dag_id=result.dag_id)
    result.stats = deployment.emulator_stats()
    result.check = deployment.warehouse.check()


def _expect_complete(deployment: Deployment, result: ScenarioResult) -> None:
    """The run succeeded over enough shards and left every row enriched exactly once."""
    check, facts = result.check, result.facts
    assert check is not None
    result.expect(result.state == "success", f"the DAG run ended {result.state!r}")
    final = {(t.task_id, t.map_index): t for t in result.tries}  # the last try of each task instance
    shards = [t for (task, _), t in final.items() if task == ENRICH_TASK]
    result.expect(len(shards) >= min(result.shards, 8), f"{len(shards)} mapped task instances ran, expected "
                                                        f"{result.shards}")
    result.expect(all(t.state == "success" for t in shards),
                  "shards not successful: " + ", ".join(f"{t.map_index}={t.state}" for t in shards
                                                         if t.state != "success"))
    result.expect(check.missing_rows == 0 and check.stray_rows == 0 and check.target_rows == check.source_rows,
                  f"target rows: {check.target_rows:,} for {check.source_rows:,} source rows "
                  f"({check.missing_rows:,} missing, {check.stray_rows:,} stray)")
    expected_status = {"ok": facts.rows - facts.invalid_rows, "error": facts.invalid_rows}
    result.expect(check.rows_by_status == expected_status,
                  f"rows by status {check.rows_by_status}, expected {expected_status}")
    result.expect(check.credits_recorded == facts.distinct_queries,
                  f"answers paid more than once: the target records {check.credits_recorded:,} credits "
                  f"(SUM(credits_used)) for {facts.distinct_queries:,} distinct valid queries")
