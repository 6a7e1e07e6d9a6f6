"""Which dialect method built each statement a run sends: what the compliance suite's failures name.

:class:`DialectTrace` is a copy of a dialect whose statement-building methods remember what they
built; :class:`TracedSession` is a run's session over it that counts each statement it sends by
the method that built it, and adds to a statement's error a note naming that method (and whether
the dialect wrote it or inherited it). A statement no dialect method built whole (one the engine
still writes around the dialect's parts) is counted as :data:`OUTSIDE`.

Example::

    trace = DialectTrace(house.dialect)
    session = TracedSession(house.hook, trace)
    ...                                  # a run on the session
    trace.sent                           # Counter({'claim': 2, 'store_answers': 1, ...})
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession

__all__ = ["OUTSIDE", "DialectTrace", "TracedSession", "written_by"]

GROUPS = ("erasure",)
"""The dialect's attributes that are objects of statements of one job (:class:`~.dialects.erasure.ErasureStatements`):
their methods are recorded as ``group.method``."""

OUTSIDE = "(no dialect method: written by the engine)"
"""What :attr:`DialectTrace.sent` counts a statement under when no dialect method built it whole."""


class DialectTrace:
    """A dialect whose methods remember the statements they build.

    :param dialect: the dialect under test; :attr:`dialect` is a copy of it that records.
    """

    def __init__(self, dialect: WarehouseDialect) -> None:
        self.original = dialect
        self.built: dict[str, str] = {}
        """Each statement built, and the method that built it (the outermost, where one calls another)."""
        self.sent: Counter[str] = Counter()
        """Statements sent, by the method that built them."""
        self.dialect = copy.copy(dialect)
        for name in _methods(type(dialect)):
            self.dialect.__dict__[name] = self._recording(name, getattr(self.dialect, name))
        for group in GROUPS:  # the copy's own group of statements, spelled by the copy, recording too
            statements = copy.copy(getattr(dialect, group))
            statements.dialect = self.dialect
            for name in _methods(type(statements)):
                statements.__dict__[name] = self._recording(f"{group}.{name}", getattr(statements, name))
            self.dialect.__dict__[group] = statements

    def _recording(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def record(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            for statement in [result] if isinstance(result, str) else result if isinstance(result, list) else []:
                if isinstance(statement, str):
                    self.built[statement] = name
            return result
        return record

    def method_of(self, sql: str) -> str:
        """The method that built ``sql``, or :data:`OUTSIDE`."""
        return self.built.get(sql, OUTSIDE)

    def blame(self, sql: str) -> str:
        """A note for the error of ``sql``: the method that built it, and where that method is written."""
        method = self.method_of(sql)
        shown = " ".join(sql.split())[:300]
        if method == OUTSIDE:
            return f"the statement that failed was not built whole by a dialect method (the engine wrote it): {shown}"
        return f"the statement that failed was built by {written_by(type(self.original), method)}: {shown}"


def written_by(cls: type[WarehouseDialect], method: str) -> str:
    """``method`` (``erasure.delete_where_in`` for one of a group's) named with the class that writes
    it for ``cls``: the dialect's own, or what it inherits.

    >>> from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
    >>> written_by(SqliteDialect, "claim")
    'SqliteDialect.claim (inherited from OnConflictDialect)'
    >>> written_by(SqliteDialect, "on_connect")
    'SqliteDialect.on_connect'
    >>> written_by(SqliteDialect, "erasure.delete_where_in")
    'SqliteDialect.erasure.delete_where_in (inherited from ErasureStatements)'
    """
    group, _, name = method.rpartition(".")
    holder = type(getattr(cls(None), group)) if group else cls  # a group is built from the dialect, not its hook
    owner = next(klass for klass in holder.__mro__ if name in vars(klass))
    shared = type(getattr(WarehouseDialect(None), group)) if group else None
    where = "" if owner is holder and holder is not shared else f" (inherited from {owner.__qualname__})"
    return f"{cls.__qualname__}.{method}{where}"


def _methods(cls: type) -> list[str]:
    """The public methods (and static methods) of a dialect class: what may build a statement."""
    return [name for name in dir(cls) if not name.startswith("_")
            and (inspect.isfunction(raw := inspect.getattr_static(cls, name)) or isinstance(raw, staticmethod))]


class TracedSession(WarehouseSession):
    """A run's session over a :class:`DialectTrace`'s dialect: each statement sent counted by the method
    that built it, and its error noted with that method. Its siblings are traced likewise."""

    def __init__(self, hook: Any, trace: DialectTrace) -> None:
        super().__init__(hook, trace.dialect)
        self.trace = trace

    def sibling(self) -> WarehouseSession:
        return TracedSession(self.hook, self.trace)

    def _sent(self, sql: str, send: Callable[[], Any]) -> Any:
        self.trace.sent[self.trace.method_of(sql)] += 1
        try:
            return send()
        except Exception as err:
            err.add_note(self.trace.blame(sql))
            raise

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> int:
        return int(self._sent(sql, lambda: super(TracedSession, self).execute(sql, params)))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        return int(self._sent(sql, lambda: super(TracedSession, self).executemany(sql, rows)))

    def fetchall(self, sql: str, params: Sequence[Any] | None = None, *, commit: bool = True) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._sent(sql, lambda: super(TracedSession, self).fetchall(sql, params,
                                                                                                commit=commit))
        return rows

    def stream(self, sql: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        self.trace.sent[self.trace.method_of(sql)] += 1
        try:
            yield from super().stream(sql, size)
        except Exception as err:
            err.add_note(self.trace.blame(sql))
            raise
