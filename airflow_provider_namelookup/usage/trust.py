"""Which usage records the credits view counts: those a try of one of the provider's operators wrote.

A record is an Airflow Variable, and any task may write any Variable: a task of one DAG could
write records naming another DAG, a task that never ran, a connection of its choice or a date
in 2099. :mod:`.store` already skips records not stored under their own key and those dated
in the future; :func:`trusted` then keeps a record only when the metadata database agrees:

1. a try of a task instance with the record's ``dag_id``, ``task_id``, ``run_id``,
   ``map_index`` and ``try_number`` exists (``task_instance``, or ``task_instance_history``
   for an earlier try) and has the record's ``ti_id`` (Airflow gives every try its own UUID,
   which a task of another DAG does not get to see);
2. that try ran the provider's operator of the record's ``lookup``
   (:data:`OPERATORS_OF`): a task of another kind wrote nothing;
3. the record's start and end lie within the try's run (from its start to its end, or now
   while it runs, give or take :data:`~.store.CLOCK_SKEW`);
4. a sensor's record (``statistic``) spent nothing: the statistic is free;
5. a lookup operator's try has one record (a try killed by SIGTERM rewrites its own, under
   the same key): when several claim one try, none counts, since all but one were written by
   someone else and nothing tells which.

What it cannot catch: code running in a try (the DAG author's own) can rewrite that try's own
record; see the docs' security page (docs/security.md), "What a DAG author can and cannot make the
credits view show".

Example (the api-server's side)::

    with create_session() as session:
        records = trusted(session, store.read(session, since), now=datetime.now(timezone.utc))
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_namelookup.usage.record import UsageRecord
from airflow_provider_namelookup.usage.store import CLOCK_SKEW

log = logging.getLogger(__name__)

OPERATORS_OF: Mapping[str, frozenset[str]] = {
    "gender": frozenset({"GenderLookupOperator", "SqlGenderLookupOperator"}),
    "country_of_origin": frozenset({"CountryOfOriginOperator", "SqlCountryOfOriginOperator"}),
    "statistic": frozenset({"NameLookupCreditsSensor"}),
}
"""The operators (Airflow's ``operator`` column: the class name) that write each kind of record."""
_OPERATORS = frozenset().union(*OPERATORS_OF.values())
_CHUNK = 500
"""Run ids per query (bind parameters stay well under every database's limit)."""

TryKey = tuple[str, str, str, int, int]


@dataclass(frozen=True)
class TaskTry:
    """A task instance try as the metadata database knows it."""

    ti_id: str
    operator: str | None
    start: datetime | None
    end: datetime | None


def _rows(session: Any, model: Any, id_column: Any, run_ids: list[str], dag_ids: set[str]) -> Iterable[Any]:
    from sqlalchemy import select

    for start in range(0, len(run_ids), _CHUNK):
        yield from session.execute(
            select(model.dag_id, model.task_id, model.run_id, model.map_index, model.try_number, id_column,
                   model.operator, model.start_date, model.end_date)
            .where(model.run_id.in_(run_ids[start:start + _CHUNK]), model.dag_id.in_(dag_ids),
                   model.operator.in_(_OPERATORS)))


def task_tries(session: Any, records: Iterable[UsageRecord]) -> dict[TryKey, TaskTry]:
    """The tries of the provider's operators in the DAG runs the records name, by try key."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancehistory import TaskInstanceHistory

    records = list(records)
    run_ids = sorted({r.run_id for r in records})
    dag_ids = {r.dag_id for r in records}
    tries: dict[TryKey, TaskTry] = {}
    if not records:
        return tries
    for model, id_column in ((TaskInstanceHistory, TaskInstanceHistory.task_instance_id),
                             (TaskInstance, TaskInstance.id)):
        for dag_id, task_id, run_id, map_index, try_number, ti_id, operator, start, end in _rows(
                session, model, id_column, run_ids, dag_ids):
            tries[(dag_id, task_id, run_id, map_index, try_number)] = TaskTry(str(ti_id), operator, start, end)
    return tries


def why_not_counted(record: UsageRecord, task_try: TaskTry | None, now: datetime) -> str | None:
    """Why the view does not count ``record`` (None: it does), by the rules above."""
    if task_try is None or task_try.ti_id != record.ti_id:
        return "no try of a Name Lookup operator has its task instance, try number and id"
    if task_try.operator not in OPERATORS_OF[record.lookup]:
        return f"its try ran {task_try.operator}, which writes no {record.lookup} records"
    if task_try.start is None or record.start < task_try.start - CLOCK_SKEW \
            or record.end > (task_try.end or now) + CLOCK_SKEW:
        return "it did not run while its try ran"
    if record.lookup == "statistic" and record.credits_used:
        return "a sensor's statistic costs nothing"
    return None


def trusted(session: Any, records: Iterable[UsageRecord], *, now: datetime) -> list[UsageRecord]:
    """The records the view counts (see the module's docstring); the others are counted in one warning."""
    records = list(records)
    tries = task_tries(session, records)
    refused: Counter[str] = Counter()
    kept = []
    for record in records:
        reason = why_not_counted(record, tries.get(record.try_key), now)
        if reason is None:
            kept.append(record)
        else:
            refused[reason] += 1
    per_try = Counter(r.try_key for r in kept if r.lookup != "statistic")
    claimed_twice = {key for key, count in per_try.items() if count > 1}
    if claimed_twice:
        refused["several records claim one lookup try"] += sum(per_try[key] for key in claimed_twice)
        kept = [r for r in kept if r.try_key not in claimed_twice]
    if refused:
        log.warning("Not counted: %d usage records no try of a Name Lookup operator wrote (%s)", sum(refused.values()),
                    "; ".join(f"{count}: {reason}" for reason, count in refused.most_common()))
    return kept
