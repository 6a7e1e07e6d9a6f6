"""Where each distinct query of a run stands: one map from query hash to its state.

A query enters as ``NEW`` when the plan first meets its hash. The answer cache says it is
``CACHED`` (answered before this run), or a claim says it is this run's to ask
(``CLAIMED``), another run's (``HELD``: waited for) or answered meanwhile (``ANSWERED``
by another run). What this run asks is ``ASKED``, then ``PAID`` once its answer is stored;
the budget leaves some ``DEFERRED``; a claim given back unanswered is ``RELEASED``, and an
answer that came after its claim was taken over by another run is ``TAKEN_OVER``.

Example::

    >>> ledger = Ledger()
    >>> ledger.add("h1", Query("first_name", "Anna"), rows=3), ledger.add("h1", Query("first_name", "Anna"), rows=2)
    (True, False)
    >>> ledger.move(["h1"], QueryState.CLAIMED)
    ['h1']
    >>> ledger.state("h1"), ledger.rows(QueryState.CLAIMED)
    (<QueryState.CLAIMED: 'claimed'>, 5)
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from airflow_provider_namelookup.models import Query


class QueryState(enum.Enum):
    """Where one query stands in a run."""

    NEW = "new"
    CACHED = "cached"
    HELD = "held"
    CLAIMED = "claimed"
    ASKED = "asked"
    PAID = "paid"
    ANSWERED = "answered"
    DEFERRED = "deferred"
    RELEASED = "released"
    TAKEN_OVER = "taken_over"


ANSWERED_STATES = frozenset({QueryState.CACHED, QueryState.ANSWERED, QueryState.PAID})
"""States whose rows the sink fills with an answer."""
TO_CLAIM = frozenset({QueryState.NEW, QueryState.HELD})
"""States a claim may still change (nobody's answer is known to this run)."""
HOLDING = frozenset({QueryState.CLAIMED, QueryState.ASKED})
"""States in which this run holds the query's claim without having stored its answer."""


class _Entry:
    __slots__ = ("query", "rows", "state")

    def __init__(self, query: Query, rows: int) -> None:
        self.query = query
        self.rows = rows
        self.state = QueryState.NEW


class Ledger:
    """Every distinct query of a run, with its rows and state."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, query_hash: str, query: Query, *, rows: int) -> bool:
        """Count ``rows`` more rows for a query; True when the hash is new to the run."""
        entry = self._entries.get(query_hash)
        if entry is None:
            self._entries[query_hash] = _Entry(query, rows)
            return True
        entry.rows += rows
        return False

    def query(self, query_hash: str) -> Query:
        return self._entries[query_hash].query

    def state(self, query_hash: str) -> QueryState:
        return self._entries[query_hash].state

    def move(self, hashes: Iterable[str], to: QueryState, *,
             only_from: frozenset[QueryState] | None = None) -> list[str]:
        """Put ``hashes`` in state ``to`` (those in one of ``only_from``, when given); the hashes moved."""
        moved = []
        for h in hashes:
            entry = self._entries[h]
            if only_from is None or entry.state in only_from:
                entry.state = to
                moved.append(h)
        return moved

    def hashes(self, *states: QueryState) -> list[str]:
        """The hashes in any of ``states``, in the order the run met them."""
        return [h for h, entry in self._entries.items() if entry.state in states]

    def count(self, *states: QueryState) -> int:
        return sum(1 for entry in self._entries.values() if entry.state in states)

    def rows(self, *states: QueryState) -> int:
        """Rows holding a query in any of ``states``."""
        return sum(entry.rows for entry in self._entries.values() if entry.state in states)
