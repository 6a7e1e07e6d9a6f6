"""The scale test's third scenario, **approval**: an approved spend holds across a retry and a clear.

The ``namelookup_approved_enrichment`` example DAG (plan → review → approve → enrich, its
``enrich`` a ``SqlGenderLookupOperator(max_credits=<the plan>, max_credits_scope="dag_run")``)
runs on the deployment, on a fresh warehouse whose ``customers`` table asks ``D`` distinct
valid queries:

1. The run is triggered through the REST API; its plan (``D`` credits) is above the
   deployment's auto-approve ceiling (``NAMELOOKUP_AUTO_APPROVE_CEILING``), so ``approve``
   waits for a person. Nothing is charged before the answer; the request names ``D``.
2. A person approves through the REST API (``PATCH .../taskInstances/approve/-1/hitlDetails``,
   as the Required Actions page does).
3. ``enrich``'s first try starts its lookups over a WAN-like latency; once the emulator has
   charged a quarter of ``D`` (its ``after_credits`` fault setting, set before the run), it
   answers every request with HTTP 500, so the try fails (its client
   gives up after its retries) with part of ``D`` spent. New rows with names nobody asked
   about yet are added, the errors switched off, and Airflow's retry (``[core]
   default_task_retries``) needs more than the approval has left: it must spend only that,
   and finish the run. The emulator must have charged at most ``D`` in all (exactly ``D``:
   nothing is lost in this scenario); a per-try budget would have charged more.
4. More new rows are added and ``enrich`` is cleared through the REST API
   (``POST /api/v2/dags/{dag_id}/clearTaskInstances``). The cleared task runs again and
   succeeds without charging anything: the approved amount is used up, the new rows wait
   for the next run. ``task_instance`` shows the three tries (the first failed).

The target then records ``D`` credits over ``D`` distinct paid queries, no row twice, and
the rows of the queries added after the plan are left for the next run; the credits view
(the usage records of the three tries) reports what the emulator charged.

Example::

    result = run_approval(deployment, rows=12_000, seed=2028, timeout=180)
    result.failures                    # [] when everything held
    result.extra["credits_after_clear"] == result.facts.distinct_queries
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from scale_test.deployment import APPROVAL_DAG_ID, Deployment, TaskTry, wait_for
from scale_test.scenarios import ScenarioResult, collect, read_log

ENRICH = "enrich"
APPROVE = "approve"
LATENCY_MS = (200, 500)
"""The emulator's added latency while the first try looks up: its requests meet the fault draw spread over
300 ms rather than at once, so few pass it before the charges reach the errors' gate (:data:`ERRORS_FROM`),
and the first try stops well short of the whole."""
ERRORS_FROM = 4
"""The first try meets HTTP 500 once the emulator has charged a quarter of ``D`` (the fault setting
``after_credits``): a point the emulator holds itself, where switching the errors on after a poll saw the
first charge was a race a loaded machine lost (the whole of ``D`` charged before the switch)."""
ADDED_BEFORE_RETRY = 300
"""Rows with new names added after the first try failed: the retry needs more than the approval has left."""
ADDED_BEFORE_CLEAR = 200
"""Rows with new names added before the clear: the cleared task must leave them for the next run."""
WAITING_FOR_PERSON = ("awaiting_input", "deferred")
ENDED = ("success", "failed", "up_for_retry", "upstream_failed", "skipped")


def run_approval(deployment: Deployment, *, rows: int, seed: int, timeout: float,
                 log: Callable[[str], None] = print) -> ScenarioResult:
    """Scenario **approval**: see the module's docstring."""
    deployment.server.drop(deployment.warehouse_db)  # a fresh warehouse: no answer is known yet
    deployment.server.create(deployment.warehouse_db)
    facts = deployment.warehouse.fill(rows, seed=seed)
    result = ScenarioResult("approval", rows, 1, facts, dag_id=APPROVAL_DAG_ID, enrich_task=ENRICH)
    log(f"[approval] {rows:,} rows, {facts.distinct_queries:,} distinct valid queries (D); auto-approve ceiling "
        f"{deployment.options.auto_approve_ceiling}; emulator latency {LATENCY_MS[0]}-{LATENCY_MS[1]} ms")
    deployment.reset_emulator_stats()
    # Held back by after_credits: nothing fails before the first try has been charged a quarter of D.
    deployment.set_emulator_faults({"latency_ms": list(LATENCY_MS), "error_500": 1.0,
                                    "after_credits": facts.distinct_queries // ERRORS_FROM})
    started = time.monotonic()
    finished = False
    try:
        finished = _drive(deployment, result, deadline=started + timeout, log=log)
    finally:
        deployment.set_emulator_faults({})
        result.seconds = time.monotonic() - started
        if result.run_id:
            collect(deployment, result)
    if finished:
        _expect_final(deployment, result)
    return result


def _drive(deployment: Deployment, result: ScenarioResult, *, deadline: float, log: Callable[[str], None]) -> bool:
    """Trigger, approve, fail the first try, retry, clear; each step's figures into ``result.extra``.
    False when nobody was asked to approve (the rest cannot happen)."""
    dag, approved = APPROVAL_DAG_ID, result.facts.distinct_queries
    started = time.monotonic()

    def left() -> float:
        return max(5.0, deadline - time.monotonic())

    def last_tries() -> dict[str, TaskTry]:
        return {t.task_id: t for t in deployment.task_tries(result.run_id, dag_id=dag)}  # ordered by try

    def charged() -> int:
        return int(deployment.emulator_stats()["credits_charged"])

    result.run_id = deployment.trigger({}, dag_id=dag)

    def asked() -> dict[str, Any] | None:
        tries = last_tries()
        approve = tries.get(APPROVE)
        if approve is not None and approve.state in WAITING_FOR_PERSON:
            return deployment.approval_request(result.run_id, APPROVE, dag_id=dag)
        if (approve is not None and approve.state in ENDED) or any(t.state in ("failed", "upstream_failed")
                                                                   for t in tries.values()):
            return {"not_asked": {t.task_id: t.state for t in tries.values()}}
        return None

    request = wait_for(asked, timeout=left(), what=f"{APPROVE} to wait for a person", interval=0.5)
    if "not_asked" in request:
        result.expect(False, f"nobody was asked to approve a plan of {approved:,} credits (ceiling "
                             f"{deployment.options.auto_approve_ceiling}): tasks {request['not_asked']}")
        return False
    plan = deployment.xcom(result.run_id, "plan", dag_id=dag) or {}
    before = charged()
    result.extra.update({"approval_asked_after_seconds": round(time.monotonic() - started, 1),
                         "credits_planned": plan.get("credits_needed"), "credits_before_approval": before})
    result.expect(plan.get("credits_needed") == approved,
                  f"the plan counted {plan.get('credits_needed')} credits; the table has {approved:,} distinct valid "
                  "queries")
    result.expect(f"Spend {approved} " in str(request.get("subject")),
                  f"the approval request does not name the {approved} credits: {request.get('subject')!r}")
    result.expect(before == 0, f"{before:,} credits were charged before anyone approved")

    answer = deployment.answer_approval(result.run_id, APPROVE, "Approve", dag_id=dag)
    result.extra["approved_by"] = (answer.get("responded_by") or {}).get("name")
    log(f"[approval] {APPROVE} asked {result.extra['approval_asked_after_seconds']:.0f} s into the run: "
        f"{request.get('subject')!r}; approved through the REST API")

    # The first try meets the errors once it has been charged part of D, so it fails with that part spent.
    at_switch, switched = approved // ERRORS_FROM, time.monotonic()

    def first_try_over() -> str | None:
        first = [t for t in deployment.task_tries(result.run_id, dag_id=dag)
                 if t.task_id == ENRICH and t.try_number == 1]
        return first[0].state if first and first[0].state in ENDED else None

    first_state = wait_for(first_try_over, timeout=left(), interval=0.2, what=f"{ENRICH}'s first try to end")
    first_charged = charged()
    first_log = read_log(deployment.task_log(result.run_id, TaskTry(ENRICH, -1, 1, first_state, None), dag_id=dag))
    added = deployment.warehouse.add_new_queries(ADDED_BEFORE_RETRY)  # before the retry (retry delay) starts
    deployment.set_emulator_faults({})
    log(f"[approval] HTTP 500 from {at_switch:,} credits charged on; the first try ended {first_state!r} "
        f"{time.monotonic() - switched:.0f} s after the approval with {first_charged:,} of {approved:,} credits "
        "charged; "
        f"{added.rows} rows of new names added, errors off")
    result.extra.update({"credits_at_error_switch": at_switch, "credits_charged_in_try_1": first_charged,
                         "try_1_state": first_state, "rows_added_before_retry": added.rows})
    result.expect(first_state in ("up_for_retry", "failed"),
                  f"{ENRICH}'s first try ended {first_state!r}, not failed: it did not meet the errors")
    result.expect("HTTP 500" in first_log, f"the log of {ENRICH}'s first try names no HTTP 500")
    result.expect(0 < first_charged < approved,
                  f"the first try was charged {first_charged:,} of {approved:,} credits: the errors did not come "
                  "while it was spending part of the approved amount")

    result.state = deployment.wait_for_run(result.run_id, left(), dag_id=dag)
    after_retry = charged()
    retry = deployment.xcom(result.run_id, ENRICH, dag_id=dag) or {}
    retry_try = last_tries()[ENRICH].try_number
    result.extra.update({"credits_after_retry": after_retry, "retry_credits_needed": retry.get("credits_needed"),
                         "retry_credits_used": retry.get("credits_used"), "state_after_retry": result.state})
    log(f"[approval] the retry (try {retry_try}) ended the run {result.state!r}: it needed "
        f"{retry.get('credits_needed')} credits, spent {retry.get('credits_used')}; {after_retry:,} charged in all")
    result.expect(result.state == "success", f"the run ended {result.state!r} after the retry")
    result.expect(int(retry.get("credits_needed") or 0) > approved - first_charged,
                  f"the retry needed {retry.get('credits_needed')} credits, not more than the "
                  f"{approved - first_charged:,} the approval had left: the rows added before it were not read, "
                  "so the scope was not tested")
    result.expect(after_retry <= approved, f"the emulator charged {after_retry:,} credits after the retry: more than "
                                           f"the {approved:,} approved")
    result.expect(after_retry >= approved, f"the emulator charged {after_retry:,} credits after the retry: less than "
                                           f"the {approved:,} approved (something was lost)")

    # The clear: the approved amount is used up, so the cleared task spends nothing.
    added_again = deployment.warehouse.add_new_queries(ADDED_BEFORE_CLEAR)
    cleared = deployment.clear_task(result.run_id, ENRICH, dag_id=dag)
    result.expect([t.get("task_id") for t in cleared] == [ENRICH],
                  f"clearing {ENRICH} cleared {[t.get('task_id') for t in cleared]}")

    def cleared_try_over() -> str | None:
        enrich = last_tries().get(ENRICH)
        if enrich is None or enrich.try_number <= retry_try or enrich.state not in ENDED:
            return None
        state = deployment.run_state(result.run_id, dag_id=dag)
        return state if state in ("success", "failed") else None

    result.state = wait_for(cleared_try_over, timeout=left(), interval=1, what=f"the cleared {ENRICH} to run")
    after_clear = charged()
    again = deployment.xcom(result.run_id, ENRICH, dag_id=dag) or {}
    result.extra.update({"rows_added_before_clear": added_again.rows, "credits_after_clear": after_clear,
                         "clear_credits_needed": again.get("credits_needed"),
                         "clear_credits_used": again.get("credits_used"),
                         "clear_rows_deferred": again.get("rows_deferred")})
    log(f"[approval] the cleared {ENRICH} ended the run {result.state!r}: it needed {again.get('credits_needed')} "
        f"credits, spent {again.get('credits_used')}; {after_clear:,} charged in all")
    result.expect(result.state == "success", f"the run ended {result.state!r} after the clear")
    result.expect(after_clear == after_retry, f"the cleared {ENRICH} was charged {after_clear - after_retry:,} "
                                              "credits more, though the approved amount was used up")
    result.expect(int(again.get("credits_needed") or 0) > 0,
                  f"the cleared {ENRICH} needed nothing: the rows added before the clear were not read")
    return True


def _expect_final(deployment: Deployment, result: ScenarioResult) -> None:
    """The tries in ``task_instance`` and what the target records, once everything ran."""
    approved, check = result.facts.distinct_queries, result.check
    assert check is not None
    enrich = [t for t in result.tries if t.task_id == ENRICH]
    usage = deployment.usage_of(ENRICH, dag_id=APPROVAL_DAG_ID)  # the failed try wrote its record too
    result.extra.update({"enrich_tries": [f"{t.try_number}:{t.state}" for t in enrich],
                         "credits_in_usage_records": usage["credits_used"], "tries_in_usage_records": usage["tries"],
                         "target": check.as_dict()})
    states = {t.try_number: t.state for t in enrich}
    result.expect(len(enrich) >= 3 and states.get(1) == "failed" and enrich[-1].state == "success",
                  f"{ENRICH}'s tries in the metadata database: {states}; expected try 1 failed, then a retry "
                  "and a clear, the last successful")
    result.expect(usage["credits_used"] == result.credits_charged and usage["tries"] == len(enrich),
                  f"the credits view reports {usage['credits_used']:,} credits over {usage['tries']} tries of "
                  f"{ENRICH}; the emulator charged {result.credits_charged:,} over {len(enrich)} tries")
    waiting = int(result.extra.get("rows_added_before_retry", 0)) + int(result.extra.get("rows_added_before_clear", 0))
    result.expect(check.credits_recorded == approved and check.distinct_hashes_paid == approved,
                  f"the target records {check.credits_recorded:,} credits over {check.distinct_hashes_paid:,} paid "
                  f"queries; {approved:,} were approved")
    result.expect(check.stray_rows == 0 and check.target_rows + check.missing_rows == check.source_rows,
                  f"target rows: {check.target_rows:,} for {check.source_rows:,} source rows "
                  f"({check.missing_rows:,} missing, {check.stray_rows:,} stray)")
    result.expect(check.missing_rows >= waiting,
                  f"{check.missing_rows:,} rows are left for the next run, fewer than the {waiting} queries added "
                  "after the plan (each a new name, beyond the approved amount)")
