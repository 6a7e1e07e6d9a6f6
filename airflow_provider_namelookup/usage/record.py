"""The usage record of one execution of a lookup task: what it spent, and on what account.

One record is written per execution of ``execute``: a try of a lookup operator, a try of a
sensor in ``poke`` mode, each poke of a sensor in ``reschedule`` mode, and each half of a
deferred sensor (before and after the triggerer). It holds no name, no value and no token;
``ti_id``, the task instance try's id, ties it to the try that wrote it (the credits view
counts a record only when a try of one of the provider's operators has that id:
:mod:`airflow_provider_namelookup.usage.trust`).

Example::

    >>> from datetime import datetime, timezone
    >>> record = UsageRecord(dag_id="enrich", task_id="genders", run_id="manual__1", map_index=-1,
    ...                      try_number=1, ti_id="0199a3c2-7c1e-7d55-9a57-6a3f1f0c2b11",
    ...                      conn_id="namelookup_default", lookup="gender", state="success",
    ...                      credits_used=40, requests=1, retries=0, cache_hits=2, lookups=40,
    ...                      remaining_credits=960, start=datetime(2026, 11, 23, 8, 0, tzinfo=timezone.utc),
    ...                      end=datetime(2026, 11, 23, 8, 0, 3, tzinfo=timezone.utc))
    >>> UsageRecord.from_dict(record.as_dict()) == record
    True
    >>> record.as_dict()["start"]
    '2026-11-23T08:00:00+00:00'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

FORMAT_VERSION = 2
"""2 added ``ti_id``; records of format 1 (unreleased builds) are not read."""

STATES = ("success", "failed", "killed", "deferred", "up_for_reschedule", "skipped")
"""How an execution ended: ``killed`` is SIGTERM (``on_kill``); an ``execution_timeout`` is
``failed`` with the error ``AirflowTaskTimeout``."""

LOOKUPS = ("gender", "country_of_origin", "statistic")
"""What a task asks: a lookup operator's kind, or ``statistic`` for the credit sensor."""


def _as_utc(value: Any, field_name: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{field_name} must be an ISO 8601 date and time, got {value!r}") from None
    if not isinstance(value, datetime):
        raise ValueError(f"{field_name} must be an ISO 8601 date and time, got {value!r}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _count(value: Any, field_name: str, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{field_name} must be a whole number of at least 0, got {value!r}")
    return value


@dataclass(frozen=True)
class UsageRecord:
    """What one execution of a lookup task spent.

    :param dag_id: the task instance's DAG.
    :param task_id: the task.
    :param run_id: the DAG run.
    :param map_index: the mapped index, -1 when not mapped.
    :param try_number: Airflow's try number (the same for every poke of a rescheduled try).
    :param ti_id: the task instance try's id (Airflow gives each try its own UUID).
    :param conn_id: the ``namelookup`` connection (the account) it used.
    :param lookup: ``gender``, ``country_of_origin`` or ``statistic`` (the sensor).
    :param state: how the execution ended (see :data:`STATES`).
    :param credits_used: credits charged for the answers received.
    :param requests: HTTP requests sent (each retry counts).
    :param retries: attempts repeated after a failure.
    :param cache_hits: answered without a lookup (the run summary's ``cache_hits``); None when
        the try ended before its summary.
    :param lookups: queries looked up; None when the run did not say.
    :param remaining_credits: the account's remaining credits as the try last read them
        (a statistic call), less what it spent after; None when it read none.
    :param start: when the execution started (UTC).
    :param end: when it ended (UTC).
    :param error: the exception's class when it did not succeed (never its message).
    :param status_id: the service's error identifier, e.g. ``limit-exceeded``.
    :param credits_maybe_charged: credits of answers lost after their request was sent, which the
        service may have charged beside ``credits_used`` (0 in records written before it was counted).
    """

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    try_number: int
    ti_id: str
    conn_id: str
    lookup: str
    state: str
    credits_used: int
    requests: int
    retries: int
    cache_hits: int | None
    lookups: int | None
    remaining_credits: int | None
    start: datetime
    end: datetime
    error: str | None = None
    status_id: str | None = None
    credits_maybe_charged: int = 0

    def __post_init__(self) -> None:
        for name in ("dag_id", "task_id", "run_id", "ti_id", "conn_id"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")
        if self.lookup not in LOOKUPS:
            raise ValueError(f"lookup must be one of {', '.join(LOOKUPS)}, got {self.lookup!r}")
        if self.state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}, got {self.state!r}")
        if isinstance(self.map_index, bool) or not isinstance(self.map_index, int) or self.map_index < -1:
            raise ValueError(f"map_index must be -1 or a whole number of at least 0, got {self.map_index!r}")
        for name in ("try_number", "credits_used", "requests", "retries", "credits_maybe_charged"):
            _count(getattr(self, name), name)
        for name in ("cache_hits", "lookups", "remaining_credits"):
            _count(getattr(self, name), name, optional=True)
        object.__setattr__(self, "start", _as_utc(self.start, "start"))
        object.__setattr__(self, "end", _as_utc(self.end, "end"))

    @property
    def try_key(self) -> tuple[str, str, str, int, int]:
        """The task instance try this execution belongs to."""
        return self.dag_id, self.task_id, self.run_id, self.map_index, self.try_number

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``v`` (the format version) and ISO 8601 times."""
        data = asdict(self)
        data["start"] = self.start.isoformat()
        data["end"] = self.end.isoformat()
        return {"v": FORMAT_VERSION, **data}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageRecord:
        """Read a stored record.

        :raises ValueError: naming the field and the rule it breaks.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a usage record must be a JSON object, got {type(data).__name__}")
        if data.get("v") != FORMAT_VERSION:
            raise ValueError(f"v must be {FORMAT_VERSION} (the record format), got {data.get('v')!r}")
        names = _FIELD_NAMES
        missing = sorted(n for n in names - set(data) if n not in _OPTIONAL)
        if missing:
            raise ValueError(f"a usage record needs {', '.join(missing)}")
        return cls(**{k: v for k, v in data.items() if k in names})


_FIELD_NAMES = frozenset(f.name for f in fields(UsageRecord))
_OPTIONAL = frozenset({"error", "status_id", "credits_maybe_charged"})
"""Fields a stored record may lack (they have defaults)."""
