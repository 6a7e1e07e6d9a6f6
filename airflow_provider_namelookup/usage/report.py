"""The credits view's numbers, from usage records and the accounts' statistics (no I/O here).

:func:`usage_report` builds the answer of ``GET /namelookup/api/usage``:

* ``connections``: each connection the user may read, with its live statistic (or the error
  that kept it from us) and its account's burn rate and days left;
* ``daily``: credits per UTC day and DAG over the period (only days and DAGs that spent);
* ``tasks``: credits, requests and tries per task, most credits first;
* ``forecast``: the days until the remaining credits of those accounts run out at the recent
  burn rate;
* ``tries``: the latest task instance tries (the executions of a try added up, see
  :func:`merge_tries`), newest first, with a link to their task instance.

Who sees what: ``daily``, ``tasks`` and ``tries`` hold only DAGs the user may read. A connection's
statistic and forecast are shown to users who may read that connection, and its burn rate counts
every DAG that spent on it (the account's burn, which such a user may see anyway); a try's
``remaining_credits`` (what the try read of its account) only to users who may read its connection.

The burn rate is the credits spent in the last :data:`FORECAST_DAYS` days (fewer when the
period asked for is shorter, or when the first record in it is younger; at least one day),
per day. Connections that reach the same account (same service and token) share one
forecast, so their credits are not counted twice.

Example::

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 11, 23, 12, tzinfo=timezone.utc)
    >>> report = usage_report([], [], days=30, now=now, readable_dags=None, readable_connections=())
    >>> report["daily"], report["tasks"], report["forecast"]
    ([], [], {'burn_per_day': 0.0, 'days_left': None, 'remaining_credits': None, 'window_days': 0.0})
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_namelookup.usage.record import UsageRecord

FORECAST_DAYS = 7
LATEST_TRIES = 50
_SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class ConnectionState:
    """A connection's live statistic, or why there is none.

    :param account: an opaque identity of the account (equal for connections with the same
        service and token); never sent to a browser.
    """

    conn_id: str
    remaining_credits: int | None = None
    is_limit_reached: bool | None = None
    usage_last_month: Mapping[str, Any] | None = None
    error: str | None = None
    account: str = field(default="", repr=False)

    @classmethod
    def from_statistic(cls, conn_id: str, statistic: Mapping[str, Any], account: str = "") -> ConnectionState:
        remaining = statistic.get("remaining_credits")
        limit = statistic.get("is_limit_reached")
        last_month = statistic.get("usage_last_month")
        return cls(conn_id, remaining if isinstance(remaining, int) else None,
                   limit if isinstance(limit, bool) else None,
                   dict(last_month) if isinstance(last_month, Mapping) else None, None, account or conn_id)


@dataclass
class _Burn:
    credits: int = 0
    first: datetime | None = None


def _burn(records: Iterable[UsageRecord], accounts: Mapping[str, str], now: datetime, window_days: float
          ) -> dict[str, tuple[float, float]]:
    """Burn per day and the days it was measured over, per account."""
    window_start = now - timedelta(days=window_days)
    burns: dict[str, _Burn] = defaultdict(_Burn)
    for record in records:
        account = accounts.get(record.conn_id)
        if account is None or record.start < window_start:
            continue
        burn = burns[account]
        burn.credits += record.credits_used
        burn.first = record.start if burn.first is None else min(burn.first, record.start)
    rates = {}
    for account, burn in burns.items():
        observed = (now - burn.first).total_seconds() / _SECONDS_PER_DAY if burn.first else window_days
        days = min(window_days, max(1.0, observed))
        rates[account] = (burn.credits / days, days)
    return rates


def _days_left(remaining: int | None, burn_per_day: float) -> float | None:
    if remaining is None or burn_per_day <= 0:
        return None
    return round(remaining / burn_per_day, 1)


def merge_tries(records: Iterable[UsageRecord]) -> list[UsageRecord]:
    """One record per task instance try: the executions of a try (the pokes of a rescheduled sensor,
    the two halves of a deferred one) added up, from the first start to the last end, ending as the
    last one ended.

    >>> from datetime import datetime, timedelta, timezone
    >>> t = datetime(2026, 11, 23, tzinfo=timezone.utc)
    >>> poke = dict(dag_id="d", task_id="wait", run_id="r", map_index=-1, try_number=1, ti_id="u", conn_id="c",
    ...             lookup="statistic", credits_used=0, requests=1, retries=0, cache_hits=None, lookups=None)
    >>> [merged] = merge_tries([
    ...     UsageRecord(**poke, state="up_for_reschedule", remaining_credits=3, start=t, end=t),
    ...     UsageRecord(**poke, state="success", remaining_credits=50, start=t + timedelta(minutes=5),
    ...                 end=t + timedelta(minutes=5))])
    >>> merged.state, merged.requests, merged.remaining_credits, merged.end - merged.start
    ('success', 2, 50, datetime.timedelta(seconds=300))
    """
    tries: dict[tuple[Any, ...], list[UsageRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.start):
        tries[record.try_key].append(record)
    merged = []
    for executions in tries.values():
        first, last = executions[0], executions[-1]
        merged.append(replace(
            last, start=first.start,
            credits_used=sum(e.credits_used for e in executions), requests=sum(e.requests for e in executions),
            retries=sum(e.retries for e in executions),
            credits_maybe_charged=sum(e.credits_maybe_charged for e in executions),
            cache_hits=_sum_known(e.cache_hits for e in executions), lookups=_sum_known(e.lookups for e in executions),
            remaining_credits=next((e.remaining_credits for e in reversed(executions)
                                    if e.remaining_credits is not None), None)))
    return merged


def _sum_known(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _shown_try(record: UsageRecord, link: Callable[[UsageRecord], str] | None,
               readable_connections: Collection[str] | None) -> dict[str, Any]:
    """A try as the user may see it: its account's figure only with read access to its connection;
    never ``ti_id`` (the view's proof of the record, of no use to a reader)."""
    hidden = {"v", "ti_id"}
    if readable_connections is not None and record.conn_id not in readable_connections:
        hidden.add("remaining_credits")
    return {**{k: v for k, v in record.as_dict().items() if k not in hidden}, "url": link(record) if link else None}


def usage_report(records: Iterable[UsageRecord], connections: Iterable[ConnectionState], *, days: int,
                 now: datetime, readable_dags: Collection[str] | None, readable_connections: Collection[str] | None,
                 link: Callable[[UsageRecord], str] | None = None) -> dict[str, Any]:
    """The view's JSON (see the module's docstring).

    :param records: every record of the period, all DAGs (the burn rates need them).
    :param connections: the connections the user may read, with their statistics.
    :param days: the period, ending ``now``.
    :param readable_dags: DAG ids the user may read; None for all.
    :param readable_connections: conn_ids the user may read (a try on another shows no
        ``remaining_credits``); None for all.
    :param link: the URL of a try's task instance in the Airflow UI.
    """
    records = sorted(records, key=lambda r: r.start)
    connections = list(connections)
    since = now - timedelta(days=days)
    visible = [r for r in records if r.start >= since and (readable_dags is None or r.dag_id in readable_dags)]

    daily: dict[tuple[str, str], int] = defaultdict(int)
    tasks: dict[tuple[str, str], dict[str, Any]] = {}
    tries: dict[tuple[str, str], set[tuple[Any, ...]]] = defaultdict(set)
    for record in visible:
        if record.credits_used:
            daily[(record.start.date().isoformat(), record.dag_id)] += record.credits_used
        task = tasks.setdefault((record.dag_id, record.task_id), {
            "dag_id": record.dag_id, "task_id": record.task_id, "credits_used": 0, "requests": 0, "tries": 0})
        task["credits_used"] += record.credits_used
        task["requests"] += record.requests
        tries[(record.dag_id, record.task_id)].add(record.try_key)
    for key, task in tasks.items():
        task["tries"] = len(tries[key])

    window_days = float(min(FORECAST_DAYS, days))
    accounts = {c.conn_id: c.account or c.conn_id for c in connections}
    rates = _burn(records, accounts, now, window_days)
    remaining_by_account = {accounts[c.conn_id]: c.remaining_credits for c in connections
                            if c.remaining_credits is not None}
    shown = []
    for c in connections:
        burn_per_day, _ = rates.get(accounts[c.conn_id], (0.0, window_days))
        shown.append({"conn_id": c.conn_id, "remaining_credits": c.remaining_credits,
                      "is_limit_reached": c.is_limit_reached, "usage_last_month": c.usage_last_month,
                      "error": c.error, "burn_per_day": round(burn_per_day, 2),
                      "days_left": _days_left(c.remaining_credits, burn_per_day)})

    total_remaining = sum(remaining_by_account.values()) if remaining_by_account else None
    total_burn = sum(rate for account, (rate, _) in rates.items() if account in remaining_by_account)
    measured = max((d for account, (_, d) in rates.items() if account in remaining_by_account), default=0.0)
    latest = sorted(merge_tries(visible), key=lambda r: r.start, reverse=True)[:LATEST_TRIES]
    return {
        "days": days,
        "since": since.isoformat(),
        "generated_at": now.isoformat(),
        "connections": shown,
        "daily": [{"date": date, "dag_id": dag_id, "credits_used": credits}
                  for (date, dag_id), credits in sorted(daily.items())],
        "tasks": sorted(tasks.values(), key=lambda t: (-t["credits_used"], -t["requests"], t["dag_id"],
                                                       t["task_id"])),
        "forecast": {"burn_per_day": round(float(total_burn), 2), "days_left": _days_left(total_remaining, total_burn),
                     "remaining_credits": total_remaining, "window_days": round(measured, 2)},
        "tries": [_shown_try(r, link, readable_connections) for r in latest],
    }
