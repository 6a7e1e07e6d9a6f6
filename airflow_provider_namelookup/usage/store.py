"""Where usage records live: one Airflow Variable per execution, in the metadata database.

Why a Variable: a task writes it through the Task SDK (the execution API), so the worker
needs no database access; it survives the worker, the task's retries and a cleared task
instance; the api-server reads it from the metadata database; and Airflow 3.1, 3.2 and 3.3
all offer it. An XCom does not survive: when a task instance starts a new try (or a
rescheduled sensor pokes again), Airflow deletes every XCom of that task instance, whatever
its key. ``context["task_state_store"]`` survives retries but exists only from 3.3.

Keys sort by time, so a period is one range scan of the Variable table's unique key::

    namelookup_usage__20261123T080000123456Z__<dag_id[:80]>__<task_id[:80]>__<digest>

(``digest``: 8 hex digits of the whole task instance try and its id, so truncated ids cannot
collide, and only a writer that knows the try's id can write to a record's key; at most 250
characters in all). The value is the record as JSON
(:meth:`UsageRecord.as_dict`), encrypted like any Variable when a Fernet key is set.

Any task can write any Variable, so :func:`read` yields only records stored under their own
key and not dated in the future (beyond :data:`CLOCK_SKEW`), and :func:`delete_before` also
deletes records dated in the future, which no execution wrote; whether a try of the
provider's operators wrote a record is :mod:`.trust`'s question.

Example::

    >>> from datetime import datetime, timezone
    >>> record_key("enrich", "genders", "manual__1", -1, 1, "0199a3c2-7c1e-7d55-9a57-6a3f1f0c2b11",
    ...            datetime(2026, 11, 23, 8, tzinfo=timezone.utc))
    'namelookup_usage__20261123T080000000000Z__enrich__genders__...'
    >>> key_floor(datetime(2026, 11, 1, tzinfo=timezone.utc))
    'namelookup_usage__20261101T000000000000Z'
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_namelookup.third_party import variable_value_column
from airflow_provider_namelookup.usage.record import UsageRecord

KEY_PREFIX = "namelookup_usage__"
_KEY_END = KEY_PREFIX + "~"  # sorts after every timestamp
_ID_CHARS = 80
CLOCK_SKEW = timedelta(minutes=5)
"""How far a worker's clock may run ahead of the api-server's: a record that started later than
this after now is dated in the future."""
DESCRIPTION = ("Name Lookup usage of one execution of a lookup task (credits, requests, remaining credits); "
               "written by the provider, read by its 'Name Lookup credits' view")

log = logging.getLogger(__name__)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def record_key(dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int, ti_id: str,
               start: datetime) -> str:
    """The Variable key of the execution of a task instance try (whose id is ``ti_id``) that started at ``start``."""
    try_of = f"{dag_id}\0{task_id}\0{run_id}\0{map_index}\0{try_number}\0{ti_id}"
    digest = hashlib.sha256(try_of.encode()).hexdigest()[:8]
    return f"{KEY_PREFIX}{_stamp(start)}__{dag_id[:_ID_CHARS]}__{task_id[:_ID_CHARS]}__{digest}"


def key_floor(moment: datetime) -> str:
    """The smallest key of a record that started at or after ``moment``."""
    return f"{KEY_PREFIX}{_stamp(moment)}"


def key_of(record: UsageRecord) -> str:
    """The Variable key ``record`` is stored under (see :func:`record_key`)."""
    return record_key(record.dag_id, record.task_id, record.run_id, record.map_index, record.try_number, record.ti_id,
                      record.start)


def write(record: UsageRecord) -> str:
    """Store ``record`` through the Task SDK (inside a running task); the same record's key again
    overwrites it. Returns the key.

    :raises Exception: whatever the Task SDK raises; callers treat writing as best effort.
    """
    from airflow.providers.common.compat.sdk import Variable

    key = key_of(record)
    Variable.set(key, record.as_dict(), description=DESCRIPTION, serialize_json=True)
    return key


# The api-server's side: the metadata database, through Airflow's Variable model.

def _variable_model() -> Any:
    from airflow.models.variable import Variable

    return Variable


def read(session: Any, since: datetime, until: datetime | None = None) -> Iterator[UsageRecord]:
    """Records of executions that started in ``[since, until)`` (``until``: at most now plus
    :data:`CLOCK_SKEW`), oldest first.

    Reads the Variable table's columns, not ``Variable`` objects: loading a ``Variable`` adds
    its value to the process's secrets masker, which would grow by every record read. A
    Variable that is not a readable record (edited by hand, say) or that is not stored under
    its own key (a copy, or a record another execution's key points to) is skipped, counted
    in one warning.
    """
    from sqlalchemy import select

    variable = _variable_model()
    latest = datetime.now(UTC) + CLOCK_SKEW
    upper = key_floor(min(until, latest) if until is not None else latest)
    rows = session.execute(select(variable.key, variable_value_column(variable), variable.is_encrypted)
                           .where(variable.key >= key_floor(since), variable.key < upper).order_by(variable.key))
    fernet = None
    skipped: dict[str, str] = {}
    for key, value, encrypted in rows:
        try:
            if encrypted:
                if fernet is None:
                    from airflow.models.crypto import get_fernet

                    fernet = get_fernet()
                value = fernet.decrypt(value.encode()).decode()
            record = UsageRecord.from_dict(json.loads(value))
        except Exception as err:
            skipped[key] = type(err).__name__ if encrypted else str(err)
            continue
        if key_of(record) != key:
            skipped[key] = "not stored under its own key"
            continue
        yield record
    if skipped:
        first, why = next(iter(skipped.items()))
        log.warning("Skipped %d Variables that are not readable Name Lookup usage records (e.g. %s: %s)",
                    len(skipped), first, why)


def delete_before(session: Any, cutoff: datetime) -> int:
    """Delete the records of executions that started before ``cutoff``, and those dated in the
    future (after now plus :data:`CLOCK_SKEW`: no execution wrote them); returns how many."""
    from sqlalchemy import delete, or_

    variable = _variable_model()
    old = variable.key < key_floor(cutoff)
    future = variable.key >= key_floor(datetime.now(UTC) + CLOCK_SKEW)
    result = session.execute(delete(variable).where(variable.key >= KEY_PREFIX, variable.key < _KEY_END,
                                                    or_(old, future)))
    return int(result.rowcount or 0)
