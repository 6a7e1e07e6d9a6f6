"""Erasure of people and retention of answers, on any warehouse the table operators support.

A person is named by the source key of their rows (``keys``) and/or by a value they were looked
up by (``values``: a first name, a full name or an e-mail address, as ``name_kind`` says). An
erasure, in this order:

1. finds their rows: in each target, the rows with one of the keys, and the rows whose
   ``source_name`` (with ``source_last_name``: the two as a full name) is one of the values once
   normalised as a query is (or its pseudonym, in a pseudonymised table); and their questions: the
   ``query_hash`` of those rows, and (by value, whatever hints the queries carried) the answers
   whose echoed name columns hold the value;
2. turns those answers into tombstones (:mod:`.dialects.erasure`), so that a run in flight neither
   stores them again nor fills a row from them;
3. deletes the rows from the targets.

It is idempotent (a second erasure of the same people finds and erases nothing) and reports
counts only: no key or value is logged, raised or returned. With ``older_than``, answers stored
longer ago are deleted too (retention), and tombstones older than a day in any case.

Example::

    counts = erase(session, Erasure(answers_table="namelookup_answers", target_tables=("customers_gender",),
                                    key_column="customer_id", keys=(17, 42), values=("anna@example.com",),
                                    name_kind="email"))
    counts.as_dict()   # {'target_rows': {'customers_gender': 3}, 'answers_erased': 3, 'answers_expired': 0, ...}
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow_provider_namelookup.contract import NAME_KINDS
from airflow_provider_namelookup.personal.pseudonym import pseudonym
from airflow_provider_namelookup.validation import normalise_text
from airflow_provider_namelookup.warehouse.dialects.engine_traits import ClaimProtocol
from airflow_provider_namelookup.warehouse.dialects.erasure import STATE_ERASED, TOMBSTONE_SECONDS
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.schema import ANSWER_RESULTS, SOURCE_LAST_NAME, SOURCE_NAME
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.writer_lease import WriterLease

MAX_KEYS = 10_000
"""Most keys or values one erasure takes (a request names people, not tables)."""
_DURATION = re.compile(r"P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?"
                       r"(?:T(?!$)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")
_DAYS_PER = {"Y": 365, "M": 30, "W": 7, "D": 1}


def period(value: Any, argument: str) -> timedelta | None:
    """A positive period from a ``timedelta``, a number of seconds or an ISO-8601 duration (``P30D``,
    ``PT12H``, ``P1Y6M``: a year counts 365 days and a month 30); None stays None.

    >>> period("P1W", "retention"), period(90, "retention")
    (datetime.timedelta(days=7), datetime.timedelta(seconds=90))
    >>> period("30 days", "retention")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: retention must be a positive timedelta, ... ISO-8601 duration such as 'P30D', got '30 days'
    """
    if value is None:
        return None
    rule = f"{argument} must be a positive timedelta, number of seconds or ISO-8601 duration such as 'P30D'"
    found: timedelta | None = None
    if isinstance(value, timedelta):
        found = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found = timedelta(seconds=value)
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value.strip().upper())):
        years, months, weeks, days, hours, minutes, seconds = match.groups()
        whole = sum(int(n or 0) * _DAYS_PER[unit] for n, unit in ((years, "Y"), (months, "M"), (weeks, "W"),
                                                                  (days, "D")))
        found = timedelta(days=whole, hours=int(hours or 0), minutes=int(minutes or 0), seconds=float(seconds or 0))
    if found is None or found <= timedelta(0):
        shown = value if isinstance(value, timedelta | int | float | str) and len(repr(value)) < 40 else type(value)
        raise ValueError(f"{rule}, got {shown!r}")
    return found


@dataclass(frozen=True)
class Erasure:
    """What one erasure removes.

    :param answers_table: the answers table the targets were enriched through.
    :param target_tables: the target tables holding the people's rows.
    :param keys: source keys of the people's rows (needs ``key_column``).
    :param values: values they were looked up by (``name_kind``).
    :param name_kind: what the values are: ``first_name``, ``full_name`` or ``email``.
    :param key_column: the targets' key column (the source's key).
    :param older_than: also delete answers stored longer ago than this (retention: a ``timedelta``,
        seconds or an ISO-8601 duration, see :func:`period`).
    :param pseudonym_key: the key of pseudonymised tables: their value columns hold pseudonyms.
    """

    answers_table: str
    target_tables: tuple[str, ...] = ()
    keys: tuple[Any, ...] = field(default=(), repr=False)
    values: tuple[str, ...] = field(default=(), repr=False)
    name_kind: str = "first_name"
    key_column: str | None = None
    older_than: timedelta | float | str | None = None
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "older_than", period(self.older_than, "older_than"))
        check_identifier(self.answers_table, "answers_table", qualified=True)
        for table in self.target_tables:
            check_identifier(table, "target_tables", qualified=True)
        if self.name_kind not in NAME_KINDS:
            raise ValueError(f"name_kind must be one of {', '.join(NAME_KINDS)}, got {self.name_kind!r}")
        if (self.keys or self.values) and self.key_column is None:
            raise ValueError("key_column is required with keys or values: the targets' column holding the source key")
        if self.key_column is not None:
            check_identifier(self.key_column, "key_column")
        if (self.keys or self.values) and not self.target_tables:
            raise ValueError("target_tables is required with keys or values: the tables holding the people's rows")
        if not (self.keys or self.values or self.older_than):
            raise ValueError("give keys, values or older_than: there is nothing to erase")
        for argument, given in (("keys", self.keys), ("values", self.values)):
            if len(given) > MAX_KEYS:
                raise ValueError(f"{argument} must hold at most {MAX_KEYS} items, got {len(given)}")
        for number, key in enumerate(self.keys, start=1):
            if key is None or isinstance(key, bool) or not isinstance(key, str | int | float):
                raise ValueError(f"keys must be strings or numbers: item {number} is {type(key).__name__}")
        for number, value in enumerate(self.values, start=1):
            if not isinstance(value, str) or not normalise_text(value):
                raise ValueError(f"values must be non-blank strings: item {number} is "
                                 f"{'blank' if isinstance(value, str) else type(value).__name__}")

    def normalised(self, value: Any) -> str | None:
        """What a stored value is compared by: its pseudonym where the tables hold pseudonyms, else
        the value normalised as a query's cache key is (None: no text)."""
        if not isinstance(value, str):
            return None
        if self.pseudonym_key is not None:
            return value.lower()
        return normalise_text(value).casefold()

    def wanted(self) -> set[str]:
        """The values as :meth:`normalised` stored values must equal."""
        if self.pseudonym_key is not None:
            return {pseudonym(self.pseudonym_key, v) for v in self.values}
        return {normalise_text(v).casefold() for v in self.values}

    def said(self, first: Any, last: Any) -> str | None:
        """A stored first name and last name (each a pseudonym in a pseudonymised table) as one of
        :meth:`wanted`'s values, or None: no such value was asked for."""
        if not isinstance(first, str) or not isinstance(last, str) or not last.strip():
            return None
        if self.pseudonym_key is None:
            return self.normalised(f"{first} {last}")
        return self._pseudonymised_pairs.get((first.lower(), last.lower()))

    @cached_property
    def _pseudonymised_pairs(self) -> dict[tuple[str, str], str]:
        """Each value split at each blank into a first and a last name, as the pair of pseudonyms a
        pseudonymised table keeps of the two (a first name's and a last name's column), and the value's
        own pseudonym: the table does not keep where the value was split."""
        assert self.pseudonym_key is not None
        pairs: dict[tuple[str, str], str] = {}
        for value in self.values:
            words = normalise_text(value).split(" ")
            for cut in range(1, len(words)):
                first, last = " ".join(words[:cut]), " ".join(words[cut:])
                pairs[(pseudonym(self.pseudonym_key, first), pseudonym(self.pseudonym_key, last))] = \
                    pseudonym(self.pseudonym_key, value)
        return pairs


@dataclass
class ErasureCounts:
    """What an erasure removed, as counts."""

    target_rows: dict[str, int] = field(default_factory=dict)
    answers_erased: int = 0
    answers_expired: int = 0
    tombstones_removed: int = 0
    keys_asked: int = 0
    values_asked: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"target_rows": dict(self.target_rows), "target_rows_erased": sum(self.target_rows.values()),
                "answers_erased": self.answers_erased, "answers_expired": self.answers_expired,
                "tombstones_removed": self.tombstones_removed,
                "keys_asked": self.keys_asked, "values_asked": self.values_asked}


def erase(session: WarehouseSession, request: Erasure) -> ErasureCounts:
    """Carry out ``request`` on ``session``'s warehouse (on the session's thread); its counts."""
    d = session.dialect
    answers = d.quote(request.answers_table)
    counts = ErasureCounts(keys_asked=len(request.keys), values_asked=len(request.values))
    rows: dict[str, set[Any]] = {}
    hashes: set[str] = set()
    _require(session, answers, "answers_table", request.answers_table)
    if request.keys or request.values:
        for table in request.target_tables:
            quoted = d.quote(table)
            _require(session, quoted, "target_tables", table)
            rows[table], found = _rows_of(session, quoted, request)
            hashes |= found
        hashes |= _answers_by_value(session, answers, request)
        counts.answers_erased = _tombstone(session, answers, sorted(hashes), table=request.answers_table)
        for table, keys in rows.items():
            counts.target_rows[table] = _delete(session, d.quote(table), d.quote(request.key_column or ""), keys)
    if isinstance(request.older_than, timedelta):
        counts.answers_expired = _delete_before(session, answers, [time.time() - request.older_than.total_seconds(),
                                                                   0.0])
    counts.tombstones_removed = _delete_before(session, answers, [0.0, time.time() - TOMBSTONE_SECONDS])
    return counts


def _delete_before(session: WarehouseSession, answers: str, params: list[float]) -> int:
    """Delete what :meth:`~.dialects.erasure.ErasureStatements.delete_answers_before` selects; how many
    rows, counted before (a ``DELETE``'s row count is not one on every engine: Spark's says 0). Rows that
    match cannot appear in between: answers and tombstones are written with the time they are written."""
    statements = session.dialect.erasure
    before = int(session.fetchall(statements.delete_answers_before(answers, count=True), params, commit=False)[0][0]
                 or 0)
    session.execute(statements.delete_answers_before(answers), params)
    session.commit()
    return before


def _require(session: WarehouseSession, quoted: str, argument: str, name: str) -> None:
    if session.probe(session.dialect.no_rows("*", quoted)) is not None:
        raise ValueError(f"{argument}: table {name} does not exist (or cannot be read) on this connection")


def _rows_of(session: WarehouseSession, target: str, request: Erasure) -> tuple[set[Any], set[str]]:
    """The keys and query hashes of a target's rows of the requested people."""
    d = session.dialect
    present = {c.lower() for c in session.column_names(target)}
    key_column = str(request.key_column)
    if key_column.lower() not in present:
        raise ValueError(f"key_column: {key_column} is not a column of target table {target}")
    key = d.quote(key_column)
    keys: set[Any] = set()
    hashes: set[str] = set()
    for part in _parts(list(request.keys), d.tuning.max_in_list):
        found = session.fetchall(d.erasure.rows_of_keys(target, key, len(part)), part)
        keys |= {r[0] for r in found}
        hashes |= {r[1] for r in found if r[1]}
    if request.values and SOURCE_NAME in present:
        wanted = request.wanted()
        last = SOURCE_LAST_NAME if SOURCE_LAST_NAME in present else None
        for row_key, name, last_name, query_hash in session.fetchall(d.erasure.rows_with_values(target, key, last)):
            said = {request.normalised(name), request.said(name, last_name)}
            if said & wanted:
                keys.add(row_key)
                if query_hash:
                    hashes.add(query_hash)
    return keys, hashes


def _answers_by_value(session: WarehouseSession, answers: str, request: Erasure) -> set[str]:
    """The hashes of answers whose echoed names hold one of the values, whatever hints their queries
    carried: a first name's answers (no last name split off) by ``first_name``; a full name's by
    ``first_name`` and ``last_name`` joined. An e-mail address is held by no column of the answers
    table: its answers are found through the target rows that asked it."""
    if not request.values or request.name_kind == "email":
        return set()
    wanted = request.wanted()
    found: set[str] = set()
    for query_hash, first, last in session.fetchall(session.dialect.erasure.echoed_names(answers)):
        if request.name_kind == "first_name":
            said = request.normalised(first) if not last else None
        else:
            said = request.said(first, last)
        if said is not None and said in wanted:
            found.add(query_hash)
    return found


def _tombstone(session: WarehouseSession, answers: str, hashes: Sequence[str], *, table: str) -> int:
    """Make tombstones of the answers of ``hashes`` (a new row for a hash without one, which a run may be
    about to claim); how many answers or claims were erased. Where claims take the answers table's writer
    lease (``SINGLE_WRITER``: no key refuses a second row), so do the tombstones."""
    single_writer = session.dialect.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER
    with WriterLease(session, table, owner=f"erasure-{uuid.uuid4().hex}", seconds=60) if single_writer \
            else contextlib.nullcontext():
        return sum(_tombstone_part(session, answers, part)
                   for part in _parts(list(hashes), session.dialect.tuning.max_in_list))


def _tombstone_part(session: WarehouseSession, answers: str, part: list[str]) -> int:
    d = session.dialect
    for _ in range(3):
        now = time.time()
        counted = None if d.engine.counts_rows else len(session.fetchall(
            f"{d.erasure.existing_hashes(answers, len(part))} AND state <> '{STATE_ERASED}'", part, commit=False))
        changed = session.execute(d.erasure.erase_answers(answers, [c.name for c in ANSWER_RESULTS], len(part)),
                                  [now, *part])
        erased = max(changed, 0) if counted is None else counted
        there = {r[0] for r in session.fetchall(d.erasure.existing_hashes(answers, len(part)), part, commit=False)}
        try:
            if missing := [(h, now) for h in part if h not in there]:
                session.executemany(d.erasure.insert_tombstone(answers), missing)
            session.commit()
            return erased
        except Exception as err:  # a run claimed one of them meanwhile: erase the part again
            session.rollback()
            if not d.errors.is_duplicate_key(err):
                raise
    raise RuntimeError("answers kept being claimed while they were erased: run the erasure again")


def _delete(session: WarehouseSession, target: str, key: str, keys: Iterable[Any]) -> int:
    d = session.dialect
    deleted = 0
    for part in _parts(list(keys), d.tuning.max_in_list):
        counted = None if d.engine.counts_rows else int(session.fetchall(
            d.erasure.delete_where_in(target, key, len(part), count_only=True), part, commit=False)[0][0])
        removed = session.execute(d.erasure.delete_where_in(target, key, len(part)), part)
        deleted += max(removed, 0) if counted is None else counted
    session.commit()
    return deleted


def _parts(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
