"""What differs between warehouses as data, not statements: how rows are bulk-loaded
(:class:`BulkLoad`), how a driver's errors are sorted (:class:`DriverErrors`), how often a
warehouse is written (:class:`Tuning`), the quoted names a statement about a source is written
with (:class:`Names`), when a source row is unchanged since its target row was written
(:class:`Unchanged`), and the JSON shape of a bulk load (:func:`json_rows`, :func:`value_kinds`).

A dialect (:class:`~.base.WarehouseDialect`) holds one of each as a class attribute.

Example::

    >>> DriverErrors(lock_conflict_words=("database is locked",)).is_lock_conflict(RuntimeError("database is locked"))
    True
    >>> cloud_tuning().store_every_seconds
    30.0
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from airflow_provider_namelookup.warehouse.schema import SOURCE_COUNTRY, SOURCE_LAST_NAME, SOURCE_NAME


def value_kinds(rows: Sequence[Sequence[Any]], width: int) -> list[str]:
    """The kind of each column's values, read from the first value that is not None: ``bool``,
    ``int``, ``float``, ``decimal``, ``datetime``, ``date`` or ``text`` (anything else).

    >>> value_kinds([(None, 1, "a"), (2.5, 3, None)], 3)
    ['float', 'int', 'text']
    """
    kinds = ["text"] * width
    for i in range(width):
        value = next((row[i] for row in rows if row[i] is not None), None)
        for kind, types in _KINDS:
            if isinstance(value, types):
                kinds[i] = kind
                break
    return kinds


_KINDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("bool", bool), ("int", int), ("float", float), ("decimal", Decimal), ("datetime", datetime), ("date", date),
    ("text", str))


def json_rows(rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a JSON array of arrays of text (or null): what :meth:`~.base.WarehouseDialect.insert_json` binds.

    >>> json_rows([("Anna", 1, None, True, 0.5)])
    '[["Anna","1",null,"true","0.5"]]'
    """
    def text(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        return str(value)
    return json.dumps([[text(v) for v in row] for row in rows], ensure_ascii=False, separators=(",", ":"))


class BulkLoad(enum.Enum):
    """How many rows go into a (temporary) table at once, as the warehouse takes them best.

    :attr:`EXECUTEMANY`: one ``executemany`` of an ``INSERT`` (drivers that send its rows as one
    statement). :attr:`COPY`: ``COPY ... FROM STDIN`` (psycopg). :attr:`UNNEST`: one ``INSERT ...
    SELECT UNNEST(?), ...`` binding one list per column. :attr:`JSON`: one ``INSERT ... SELECT``
    binding one JSON document (:meth:`~.base.WarehouseDialect.json_select`), for drivers whose
    ``executemany`` sends a statement per row. :attr:`LITERALS`: multi-row ``INSERT ... VALUES`` of
    literals, a few megabytes a statement (:meth:`~.base.WarehouseDialect.insert_literals`).
    :attr:`ARROW`: the rows as an Arrow table the warehouse reads in place
    (:meth:`~.base.WarehouseDialect.insert_arrow`; :mod:`~airflow_provider_namelookup.warehouse.arrow_rows`),
    else as :attr:`UNNEST` (no ``pyarrow``, a column of values of more than one type, or a process
    that has not imported the installed pandas, which converting would import first).
    """

    EXECUTEMANY = "executemany"
    COPY = "copy"
    UNNEST = "unnest"
    JSON = "json"
    LITERALS = "literals"
    ARROW = "arrow"


def error_code(err: BaseException) -> int | None:
    """The driver's numeric error code (``errno``, or the first argument), if it has one."""
    code = getattr(err, "errno", None)
    if not isinstance(code, int):
        code = err.args[0] if err.args and isinstance(err.args[0], int) else None
    return code


@dataclass(frozen=True)
class DriverErrors:
    """How a warehouse's driver says what went wrong: by SQLSTATE, numeric code, or words of its message.

    Example::

        >>> DriverErrors().is_lock_conflict(RuntimeError("deadlock detected"))
        True
    """

    lock_conflict_states: frozenset[str] = frozenset({"40001", "40P01"})
    lock_conflict_codes: frozenset[int] = frozenset()
    lock_conflict_words: tuple[str, ...] = ("deadlock", "lock wait timeout", "could not serialize",
                                            "serialization failure", "conflict")
    connection_lost_codes: frozenset[int] = frozenset()
    connection_lost_words: tuple[str, ...] = (
        "server closed the connection", "connection already closed", "connection not available", "lost connection",
        "server has gone away", "connection was killed", "terminating connection", "broken pipe",
        "connection reset", "connection is closed", "connection refused")
    duplicate_key_codes: frozenset[int] = frozenset()
    duplicate_key_words: tuple[str, ...] = ("duplicate key", "unique constraint", "already exists",
                                            "duplicate entry", "duplicate column", "primary key")

    @staticmethod
    def _state(err: BaseException) -> str | None:
        return getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)

    def _says(self, err: BaseException, words: tuple[str, ...]) -> bool:
        text = str(err).lower()
        return any(word in text for word in words)

    def is_lock_conflict(self, err: BaseException) -> bool:
        """The engine failed this statement to resolve a lock conflict: run the step again."""
        return (self._state(err) in self.lock_conflict_states or error_code(err) in self.lock_conflict_codes
                or self._says(err, self.lock_conflict_words))

    def is_connection_lost(self, err: BaseException) -> bool:
        """The connection is gone (the server ended it, the network broke): its temporary
        tables with it. A statement that needs none may run again on a new connection."""
        state = self._state(err)
        if state and (state.startswith("08") or state in ("57P01", "57P02", "57P03")):
            return True
        return error_code(err) in self.connection_lost_codes or self._says(err, self.connection_lost_words)

    def is_duplicate_key(self, err: BaseException) -> bool:
        """A unique key (or a table or column name) is taken: another run got there first."""
        return (self._state(err) in ("23505", "42P07") or error_code(err) in self.duplicate_key_codes
                or self._says(err, self.duplicate_key_words))


@dataclass(frozen=True)
class Tuning:
    """How often a warehouse is written, and how lock conflicts are retried.

    :param store_every_seconds: most seconds an answer waits before it is stored; 0 stores
        continuously (a store begins whenever answers wait and none runs), where a statement costs
        milliseconds. On a cloud warehouse, where each costs a second and money, answers wait and
        go together: a task killed outright loses that long's answers.
    :param store_batch: with a wait, a store also starts once this many answers wait.
    :param conflict_attempts: how often a step the engine failed to resolve a lock conflict is run.
    :param conflict_backoff_seconds: the first wait before it is run again (doubled each time).
    :param max_in_list: most values bound in one ``IN (...)`` list.
    :param asks_while_reading: a run may look a page's queries up before the next page is read
        (each page then costs two statements of its own: its map rows and what is answered).
    """

    store_every_seconds: float = 0.0
    store_batch: int = 10_000
    conflict_attempts: int = 6
    conflict_backoff_seconds: float = 0.05
    max_in_list: int = 1_000
    asks_while_reading: bool = True


def cloud_tuning(**more: Any) -> Tuning:
    """The tuning of a warehouse whose every statement costs a second and money: answers stored
    together at most every 30 s, and the source read whole before anything is asked (no
    statements of a page's own)."""
    return Tuning(**{"store_every_seconds": 30.0, "store_batch": 50_000, "asks_while_reading": False, **more})


@dataclass(frozen=True)
class Names:
    """The quoted names a statement about a source ``s`` is written with.

    :param relation: the filtered source as a derived table (``(SELECT ...)``).
    :param key_column: the key column's name (quoted), which the target shares.
    :param key: ``s.<key column>``; ``name`` / ``country``: the name and country columns
        (``country`` None when the run reads no country).
    :param last_name: the last-name column, whose value the run joins to the first name (None
        when the run reads no last name).
    """

    relation: str
    key_column: str
    key: str
    name: str
    country: str | None
    last_name: str | None = None

    def raw_columns(self) -> list[tuple[str, str]]:
        """``(expression, target column)`` of the raw values a target keeps."""
        raw = [(self.name, SOURCE_NAME)]
        if self.last_name:
            raw.append((self.last_name, SOURCE_LAST_NAME))
        if self.country:
            raw.append((self.country, SOURCE_COUNTRY))
        return raw


@dataclass(frozen=True)
class Unchanged:
    """When a source row ``s`` is unchanged since its target row ``t`` was written: the rows a
    rerun leaves alone. A dialect writes the distinct pass's filter from it, as a correlated
    ``NOT EXISTS`` (:meth:`exists`) or as an outer join whose unmatched rows are the ones to enrich.

    :param target: the target table (quoted), aliased ``t``.
    :param condition: on ``t`` and ``s``: the same key, the same raw values, the same query spec
        (and enriched since ``max_age``); the engine's own values as literals, nothing bound.
    :param matched: a column of ``t`` that is never NULL where the condition holds (an outer join's
        unmatched rows have it NULL).

    Example::

        >>> Unchanged("tgt", "t.id = s.id AND t.query_spec = 'ab12'", "t.query_spec").exists()
        "SELECT 1 FROM tgt t WHERE t.id = s.id AND t.query_spec = 'ab12'"
    """

    target: str
    condition: str
    matched: str

    def exists(self) -> str:
        """The correlated subquery that finds ``s``'s unchanged target row."""
        return f"SELECT 1 FROM {self.target} t WHERE {self.condition}"
