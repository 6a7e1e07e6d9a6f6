"""Recording what each execution of a lookup task spends, whatever way it ends.

An operator opts in with two things: the :class:`RecordsUsage` mixin (it supplies
``self.usage`` and an ``on_kill`` that writes the record) and the :func:`records_usage`
decorator on ``execute`` (and ``execute_complete``). The run then hands over what it
knows, in one line each where it has it:

* ``self.usage.watch(hook)``: the hook's counters (``hook.counters``, a
  :class:`~airflow_provider_namelookup.metrics.CallCounters`: requests, retries, credits, the
  remaining credits it read);
* ``self.usage.follow(progress)``: the run's counters (``cache_hits``, ``lookups``), read when the record is written;
* a ``dict`` returned by ``execute`` is taken as the run's summary (the table operators' XCom).

The record is written when ``execute`` returns or raises (``limit-exceeded``, a lost network,
``execution_timeout``, Ctrl-C/SIGINT, any exception), and from ``on_kill`` when Airflow sends
SIGTERM (then again, with the final numbers, if the task still gets to end: same key, one
Variable). Writing is best effort: a failure to write is logged, never a reason to fail the task.

Example::

    class MyLookupOperator(RecordsUsage, BaseOperator):
        @records_usage
        def execute(self, context):
            with self.usage.watch(NameLookupHook(self.namelookup_conn_id)) as hook:
                return hook.gender_batch(self.names)
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from airflow_provider_namelookup import metrics
from airflow_provider_namelookup.usage import store
from airflow_provider_namelookup.usage.record import UsageRecord
from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS

log = logging.getLogger(__name__)

H = TypeVar("H")
F = TypeVar("F", bound=Callable[..., Any])

_ENDED_BY = (  # exception class name (anywhere in its MRO) -> state
    ("TaskDeferred", "deferred"),
    ("AirflowRescheduleException", "up_for_reschedule"),
    ("AirflowSkipException", "skipped"),
)


def ending_of(error: BaseException | None) -> str:
    """The record's state for an execution that ended with ``error`` (None: it returned).

    >>> ending_of(None), ending_of(RuntimeError("boom"))
    ('success', 'failed')
    """
    if error is None:
        return "success"
    names = {cls.__name__ for cls in type(error).__mro__}
    return next((state for name, state in _ENDED_BY if name in names), "failed")


def _now() -> datetime:
    return datetime.now(UTC)


def _is_task_runtime(ti: Any) -> bool:
    """Whether ``ti`` is the task instance of a real run (a worker, ``dag.test()``), where the Task SDK
    (on Airflow 2, the metadata database) can write Variables; a bare ``execute()`` call gets no record."""
    if not AIRFLOW_V_3_0_PLUS:
        from airflow.models.taskinstance import TaskInstance

        return isinstance(ti, TaskInstance)
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance
    except ImportError:  # pragma: no cover - every supported Task SDK has it
        return False
    return isinstance(ti, RuntimeTaskInstance)


def _try_id(ti: Any) -> str:
    """The try's own id: Airflow 3 gives each try a UUID; Airflow 2 none, so there the try's key stands
    for it (only the credits view checks it, and it runs from Airflow 3.1 on)."""
    if AIRFLOW_V_3_0_PLUS:
        return str(ti.id)
    return f"{ti.dag_id}/{ti.task_id}/{ti.run_id}/{getattr(ti, 'map_index', -1)}/{ti.try_number}"


class TryUsage:
    """What one execution of a lookup task spent so far, and its record once written.

    :param ti: the running task instance (None: nothing is recorded).
    :param conn_id: the ``namelookup`` connection.
    :param lookup: ``gender``, ``country_of_origin`` or ``statistic``.
    """

    def __init__(self, ti: Any, conn_id: str, lookup: str, write: Callable[[UsageRecord], Any] = store.write) -> None:
        self.ti = ti
        self.conn_id = conn_id
        self.lookup = lookup
        self.start = _now()
        self.hooks: list[Any] = []
        self.progress: Any = None
        self.summary: Mapping[str, Any] | None = None
        self.statistic: Mapping[str, Any] | None = None
        self.record: UsageRecord | None = None
        self.finished = False
        self.killed = False
        self._write = write
        self._lock = threading.RLock()  # on_kill may run inside finish(), in a signal handler

    def watch(self, hook: H) -> H:
        """Count ``hook``'s requests, retries, credits and remaining credits in this record; returns the hook."""
        self.hooks.append(hook)
        return hook

    def follow(self, progress: Any) -> None:
        """Read ``cache_hits`` and ``lookups`` from ``progress`` (a ``RunProgress``) when the record is written."""
        self.progress = progress

    def note_statistic(self, statistic: Mapping[str, Any] | None) -> None:
        """A statistic the task received without a hook of its own (a trigger's event)."""
        if isinstance(statistic, Mapping):
            self.statistic = statistic

    def _remaining(self) -> int | None:
        if self.statistic is not None and isinstance(self.statistic.get("remaining_credits"), int):
            return self.statistic["remaining_credits"]
        known = [h.counters.remaining_now() for h in self.hooks if getattr(h, "counters", None) is not None]
        return next((r for r in reversed(known) if r is not None), None)

    def _run_counter(self, name: str) -> int | None:
        if self.summary is not None and isinstance(self.summary.get(name), int):
            return self.summary[name]
        if self.progress is not None and name == "lookups":
            return int(self.progress.lookups)
        return None

    def build(self, state: str, error: BaseException | None = None) -> UsageRecord:
        """The record of this execution as it stands, ending in ``state``."""
        ti = self.ti
        stats = [h.counters for h in self.hooks if getattr(h, "counters", None) is not None]
        cache_hits = self._run_counter("cache_hits")
        if cache_hits is None and state == "success" and self.progress is not None:
            cache_hits = int(self.progress.cache_hits)
        map_index = getattr(ti, "map_index", -1)
        return UsageRecord(
            dag_id=ti.dag_id, task_id=ti.task_id, run_id=ti.run_id,
            map_index=-1 if map_index is None else int(map_index), try_number=int(ti.try_number or 1),
            ti_id=_try_id(ti),
            conn_id=self.conn_id, lookup=self.lookup, state=state,
            credits_used=sum(s.credits_used for s in stats), requests=sum(s.requests for s in stats),
            credits_maybe_charged=sum(s.credits_maybe_charged for s in stats),
            retries=sum(s.retries for s in stats), cache_hits=cache_hits, lookups=self._run_counter("lookups"),
            remaining_credits=self._remaining(), start=self.start, end=_now(),
            error=None if error is None else type(error).__name__,
            status_id=getattr(error, "status_id", None) if error is not None else None,
        )

    def finish(self, error: BaseException | None = None, *, state: str | None = None) -> UsageRecord | None:
        """Write the record (once the execution ended; again after a kill, under the same key)."""
        if self.ti is None:
            return None
        with self._lock:
            if self.finished:
                return self.record
            state = "killed" if self.killed else (state or ending_of(error))
            try:
                record = self.build(state, error)
            except (ValueError, TypeError, AttributeError) as err:
                log.warning("No Name Lookup usage record for this try: %s", err)
                return None
            if self.record is None and record.cache_hits:
                metrics.count(metrics.CACHE_HITS, record.cache_hits, conn_id=self.conn_id, lookup=self.lookup)
            self.record = record
            try:
                key = self._write(record)
            except Exception as err:
                log.warning("Could not write the Name Lookup usage record of this try (%d credits): %s",
                            record.credits_used, err)
            else:
                log.debug("Name Lookup usage record %s written", key)
            self.finished = state not in ("killed",)
            return record

    def on_kill(self) -> None:
        """Airflow kills the task (SIGTERM): write the record now, as ``on_kill`` saves an XCom
        operator's answers (in the signal handler, through the Task SDK; a write that cannot be made
        there is logged, never waited for)."""
        if self.ti is None or self.finished:
            return
        self.killed = True
        self.finish()


class RecordsUsage:
    """Mixin of the lookup operators and the credit sensor: ``self.usage`` and a recording ``on_kill``.

    Put it before the Airflow base class; the operator must have ``namelookup_conn_id`` and
    either ``lookup`` (a :class:`~airflow_provider_namelookup.contract.LookupKind`) or be a sensor
    of the ``statistic``.
    """

    _usage: TryUsage | None = None
    usage_lookup_default: ClassVar[str] = "statistic"

    @property
    def usage_lookup(self) -> str:
        lookup = getattr(self, "lookup", None)
        return str(getattr(lookup, "value", lookup) or self.usage_lookup_default)

    @property
    def usage(self) -> TryUsage:
        """The current execution's usage (a detached one, recording nothing, outside ``execute``)."""
        if self._usage is None:
            self._usage = TryUsage(None, getattr(self, "namelookup_conn_id", ""), self.usage_lookup)
        return self._usage

    def on_kill(self) -> None:
        self.usage.on_kill()
        super().on_kill()  # type: ignore[misc]


def records_usage(execute: F) -> F:
    """Decorate ``execute`` (or ``execute_complete``) of a :class:`RecordsUsage` operator: one usage
    record per call, written however the call ends."""

    @functools.wraps(execute)
    def recorded(self: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        ti = context.get("ti") if isinstance(context, Mapping) else None
        usage = TryUsage(ti if _is_task_runtime(ti) else None, self.namelookup_conn_id, self.usage_lookup)
        self._usage = usage
        try:
            result = execute(self, context, *args, **kwargs)
        except BaseException as err:
            usage.finish(err)
            raise
        if isinstance(result, Mapping):
            usage.summary = result
        usage.finish()
        return result

    return recorded  # type: ignore[return-value]
