"""The target table: created if missing, filled from the source with set-based statements.

Rows never pass through Python: the fill writes ``source ⋈ resolved map`` (see
:mod:`.valuemap`) in one statement per row shape, and only the source rows that are new
or changed (their raw values or the operator's settings differ from what the target row
was enriched from, or it is older than ``max_age``).

- A target the run **creates** is filled with a plain insert (PostgreSQL: ``CREATE TABLE
  ... AS`` and then its primary key, in one transaction); the price of each query paid for
  this target goes on the lowest key holding it.
- An **existing** target gets an upsert, then a **fix-up**: for every query the fill wrote,
  and every query whose price sat on a row the fill rewrote, exactly one row holding it
  (the lowest key) carries its price if the answer was paid for this target, and the
  others 0. So ``SUM(credits_used)`` is what the answers its rows hold cost, after any
  sequence of runs. The query's answers row is locked while its price is fixed, so
  concurrent runs fix one query one after another.

A target holds the result columns an operator's ``columns`` names (default: every one) and,
always, the columns the provider keeps its books in: the key, ``status``, ``error``,
``credits_used``, ``query_hash``, ``enriched_at``, ``query_spec`` and the raw columns
(``source_name``, ``source_last_name``, ``source_country``), which are what a rerun compares
and prices by. An existing target must hold exactly the result columns asked for: one that lacks
some, or holds others (which the fill would leave stale), is refused before anything is spent.

Example::

    target = TargetTable(session, "customers_gender", source, value_map, answers, rules, stamp=now)
    await target.prepare(create=True)
    await target.fill(outcome)
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.ports import RunOutcome
from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError, connection_of, warehouse_says
from airflow_provider_namelookup.warehouse.dialects import Names
from airflow_provider_namelookup.warehouse.dialects.engine_traits import ClaimProtocol
from airflow_provider_namelookup.warehouse.dialects.fill import PriceFixUps
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.schema import (
    BOOKKEEPING,
    LEGACY_RAW,
    SOURCE_COUNTRY,
    SOURCE_LAST_NAME,
    SOURCE_NAME,
    Column,
    result_columns,
)
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import FirstRow, TableSource
from airflow_provider_namelookup.warehouse.valuemap import PSEUDONYM, ValueMap
from airflow_provider_namelookup.warehouse.writer_lease import WriterLease

_CREATE_WAIT_SECONDS = 30.0
FILL_LEASE_SECONDS = 300.0
"""How long a fill holds its target's writer lease on an engine without row-level transactions
(``SINGLE_WRITER``): a fill must end within it; a run waiting for it gives up after twice as long."""
"""How long a run waits for a target another run is creating (where DDL commits statement by statement)."""
_COMPLETE_WAIT_SECONDS = 1.0
"""How long a run gives an incomplete target to be completed before it adds the columns itself."""


def explain_target_error(session: WarehouseSession, table: str, columns: list[str], err: Any) -> WarehouseInputError:
    """An existing target table that lacks a column the operator writes."""
    return WarehouseInputError(f"target table {table} exists{connection_of(session.hook)} but lacks columns the "
                               f"operator writes ({', '.join(columns)}): {warehouse_says(err)}")


def other_answer_columns(session: WarehouseSession, table: str, missing: list[str],
                         extra: list[str]) -> WarehouseInputError:
    """An existing target table whose result columns are not the ones ``columns`` asks for."""
    said = [*([f"lacks {', '.join(missing)}"] if missing else []),
            *([f"holds {', '.join(extra)}, which columns does not list"] if extra else [])]
    return WarehouseInputError(
        f"target table {table} exists{connection_of(session.hook)} with other answer columns than columns asks "
        f"for: it {' and '.join(said)}. Give columns the table's answer columns, add or drop those columns "
        f"in the table, or write to another target_table (filled from the answers already paid for, at no credit)")


class TargetTable:
    """One target table of a table operator.

    :param session: the run's warehouse session.
    :param name: table name (``table`` or ``schema.table``).
    :param source: the source it mirrors (its key is the target's primary key).
    :param value_map: the run's raw-value map.
    :param answers: the answers table (quoted) the map is resolved against.
    :param rules: the run's query rules (its fingerprint marks each row's settings).
    :param stamp: ``enriched_at`` of the rows written (the dialect's timestamp value).
    :param stale_rows_before: with ``max_age``: rows enriched before this are rewritten.
    :param first_row: the source's first key, once read (engines that type the key column after it).
    :param log: where the fill says what it did.
    :param erased_since: when the run began: a row the fill wrote from an answer erased since then
        (:mod:`~.dialects.erasure`) is deleted after the fill, so that an erasure beside a run in
        flight holds.
    :param results: the result columns the target holds (an operator's ``columns``, see
        :func:`~.schema.chosen_result_columns`); None: every one of the lookup's.
    """

    def __init__(self, session: WarehouseSession, name: str, source: TableSource, value_map: ValueMap,
                 answers: str, rules: QueryRules, *, stamp: Any, stale_rows_before: Any = None,
                 first_row: FirstRow | None = None, log: Any = None, erased_since: float | None = None,
                 results: Sequence[Column] | None = None) -> None:
        self.erased_since = erased_since
        self.session = session
        self.dialect = session.dialect
        self.name = check_identifier(name, "target_table", qualified=True)
        self.quoted = self.dialect.quote(self.name)
        self.source = source
        self.map = value_map
        self.answers = answers
        self.rules = rules
        self.lookup = rules.lookup
        self.results = result_columns(self.lookup) if results is None else tuple(results)
        self.stamp = stamp
        self.stale_rows_before = stale_rows_before
        self.first_row = first_row or FirstRow()
        self.log = log
        clashes = {c.name for c in (*result_columns(self.lookup), *BOOKKEEPING)} | {SOURCE_NAME, SOURCE_COUNTRY,
                                                                                   SOURCE_LAST_NAME}
        if source.key_column.lower() in clashes:
            raise ValueError(f"key_column {source.key_column!r} clashes with a column of the target table")
        self.joinable = False
        """The table exists with every column the run compares and writes."""
        self.created = False
        """This run created the table (no row of it can be unchanged)."""
        self.create_at_fill = False
        """It is missing and the fill creates it (``CREATE TABLE ... AS``)."""
        self._found: str | None = None
        """What the first probe found: ``complete``, ``key only`` (an earlier release's table) or ``missing``."""
        self._present: set[str] | None = None
        """The existing table's column names in lower case, where the first probe read them."""

    @property
    def names(self) -> Names:
        return self.source.names(with_params=False)

    @property
    def pseudonymised(self) -> bool:
        """The run keeps pseudonyms of the raw name and last name, not the values (``pseudonymise``)."""
        return self.map.pseudonymiser is not None

    def raw_columns(self) -> list[tuple[str, str]]:
        """``(expression, target column)`` of the raw values a filled row keeps: the source's, or
        (pseudonymised) the map's pseudonyms of its name and last name, its country as it is."""
        raw = self.names.raw_columns()
        if not self.pseudonymised:
            return raw
        hidden = {SOURCE_NAME: "m.pseudo_name", SOURCE_LAST_NAME: "m.pseudo_last_name"}
        return [(hidden.get(column, expression), column) for expression, column in raw]

    def _created_names(self) -> Names:
        """The names a new target is made after: a pseudonymised run's name and last name columns
        typed as pseudonyms, not like the source's."""
        names = self.names
        if not self.pseudonymised:
            return names
        typed = self.dialect.cast_null(PSEUDONYM)
        return replace(names, name=typed, last_name=typed if names.last_name else None)

    @property
    def typed(self) -> tuple[Column, ...]:
        """The target's columns of its own type (all but the key and the raw columns)."""
        return (*self.results, *BOOKKEEPING)

    @property
    def _resolved_results(self) -> tuple[Column, ...]:
        """The result columns the fill reads: those it writes, and what an abstaining ``gender`` is
        decided by."""
        if self.rules.abstain is None or "gender" not in {c.name for c in self.results}:
            return self.results
        decided_by = [c for c in result_columns(self.lookup) if c.name in ("probability", "samples")]
        return (*self.results, *(c for c in decided_by if c not in self.results))

    @property
    def fields(self) -> list[str]:
        """The columns a fill writes, in order."""
        return [self.names.key_column, *(c.name for c in self.typed), *(c for _, c in self.names.raw_columns())]

    # Creation ---------------------------------------------------------------------------------------------
    async def prepare(self, *, create: bool) -> bool:
        """Find the table (``create=False``: nothing is written) or make it (``create=True``); whether it is
        there with every column the run writes, so that nothing is left to create or alter. The probe is
        made once: a run that looks first and creates after sends it once."""
        await self.session.run(self._prepare, create)
        return self.joinable

    def _has_columns(self, columns: list[str]) -> Exception | None:
        return self.session.probe(self.dialect.no_rows(", ".join(columns), self.quoted))

    def _prepare(self, create: bool) -> None:
        if self.joinable or self.create_at_fill:
            return
        if self._found is None:
            self._found = self._look()
        if self._found == "complete":
            if self._some_results:  # it may hold answer columns not asked for
                self._check_answer_columns()
            self.joinable = True
            return
        if self._found == "key only":  # exists: an earlier release's table, or wrong
            if self._made_by_another_run(wait=_COMPLETE_WAIT_SECONDS):  # or one another run is making now
                self.joinable = True
                return
            self._present = None  # as it is now, after the wait
            self._check_answer_columns()  # before any column is added to it
            if create:
                self._add_raw_columns()
            if (missing := self._has_columns(self.fields)) is not None:
                if create:
                    raise explain_target_error(self.session, self.name, self.fields, missing)
                return
            self.joinable = True
            return
        if not create:
            return
        if self.dialect.engine.creates_target_at_fill:
            self.create_at_fill = True
            return
        try:
            for statement in self.dialect.create_like_source(self.quoted, self._created_names(), self.typed,
                                                             self.first_row.key):
                self.session.execute(statement)
            self.session.commit()
            self.created = True
            self._log("Created target table %s", self.name)
        except Exception as err:
            self.session.rollback()
            if not self.dialect.errors.is_duplicate_key(err) or not self._made_by_another_run():
                raise
        self.joinable = True

    @property
    def _some_results(self) -> bool:
        """The target holds only some of the lookup's result columns (``columns``)."""
        return len(self.results) < len(result_columns(self.lookup))

    def _look(self) -> str:
        """What the table is: ``complete``, ``key only`` or ``missing``. A target of some result columns
        reads the table's columns instead, in as many statements (one, for an existing target), so that
        :meth:`_check_answer_columns` costs a rerun none."""
        if not self._some_results:
            return "complete" if self._has_columns(self.fields) is None else \
                "key only" if self._has_columns([self.names.key_column]) is None else "missing"
        try:
            self._present = {name.lower() for name in self.session.column_names(self.quoted)}
        except Exception:  # as a probe: no table to read
            return "missing"
        written = {self.source.key_column, *(c.name for c in self.typed), *(c for _, c in self.names.raw_columns())}
        return "complete" if {name.lower() for name in written} <= self._present else \
            "key only" if self.source.key_column.lower() in self._present else "missing"

    def _check_answer_columns(self) -> None:
        """Refuse an existing table whose result columns are not :attr:`results`: one it lacks would
        stay missing; one it holds beyond them would keep the answer of a name since changed."""
        if self._present is None:
            self._present = {name.lower() for name in self.session.column_names(self.quoted)}
        present = self._present
        asked = {c.name for c in self.results}
        every = [c.name for c in result_columns(self.lookup)]
        missing = [name for name in every if name in asked and name not in present]
        extra = [name for name in every if name not in asked and name in present]
        if missing or extra:
            raise other_answer_columns(self.session, self.name, missing, extra)

    def _made_by_another_run(self, columns: list[str] | None = None, wait: float = _CREATE_WAIT_SECONDS) -> bool:
        """Whether another run has made the table (its columns may come a statement after it)."""
        deadline = time.monotonic() + wait
        while self._has_columns(columns or self.fields) is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def _add_raw_columns(self) -> None:
        """Columns a target made by an earlier release (or by runs that read no last name) lacks; its
        rows are rewritten once."""
        names = [column for _, column in self.names.raw_columns()]
        raw = [Column(name, LEGACY_RAW.kind) for name in names]
        for column in (*raw, *BOOKKEEPING):
            if self._has_columns([column.name]) is not None:
                try:
                    self.session.execute(self.dialect.add_column(self.quoted, column))
                    self.session.commit()
                except Exception:
                    self.session.rollback()
                    if not self._made_by_another_run([column.name]):  # a run creating the table added it
                        raise

    # The fill ------------------------------------------------------------------------------------------
    def _select(self, *, null_names: bool | None, joined: bool, typed: bool = False) -> str:
        """Source rows joined to their resolved values, as the target's rows (only the new and
        changed ones when ``joined``: the target's own rows compared)."""
        return self.dialect.fill_rows(self.names, self.typed, self.raw_columns(), resolved=self.map.resolved,
                                      null_names=null_names, stamp=self.stamp, spec=self.rules.fingerprint,
                                      abstain=self.rules.abstain, cast_typed=typed,
                                      target=self.quoted if joined else None, stale_before=self.stale_rows_before)

    async def fill(self, outcome: RunOutcome) -> None:
        """Write the rows of every answered or invalid question (nothing when there is none)."""
        if not outcome.questions or not self.map.created:
            return
        if self.session.lost:  # the map went with the connection; the answers are stored: the next run fills
            self._log("Not filled: %s; the answers paid for are stored in the answers table, and the next run fills "
                      "%s from it without paying again", self.session.lost, self.name)
            raise self.session.lost
        started = time.monotonic()
        await self.session.run(self.map.resolve, self.answers, self.lookup, paid_for=self.name,
                               key_sample=self.first_row.key, results=self._resolved_results)
        if self.create_at_fill:
            await self.session.run_retrying(self._one_writer, self._fill_by_creating)
        elif self.created and self.dialect.engine.enforces_keys:
            await self.session.run_retrying(self._one_writer, self._fill_new)
        else:
            await self.session.run_retrying(self._one_writer, self._fill_existing)
        if self.erased_since is not None:
            await self.session.run_retrying(self._drop_erased, self.erased_since)
        self._log("Filled %s from %d distinct values in %.1f s", self.name, len(outcome.questions),
                  time.monotonic() - started)

    def _one_writer(self, fill: Callable[[], None]) -> None:
        """Run ``fill``; on an engine without row-level transactions (``SINGLE_WRITER``), holding the
        target's writer lease, so that two runs' upserts (a delete, then an insert) and price fix-ups
        cannot interleave into a row written twice or a price carried by two rows."""
        single = self.dialect.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER
        with WriterLease(self.session, self.name, owner=f"fill-{uuid.uuid4().hex}", seconds=FILL_LEASE_SECONDS) \
                if single else contextlib.nullcontext():
            fill()

    def _drop_erased(self, since: float) -> None:
        """Delete the rows this fill wrote from answers erased since ``since`` (it read them before). The
        answers table is asked first: the delete reads the whole target (1M rows: 0.28 s on SQLite), and
        a run during which nothing was erased, nearly every run, has nothing to delete. Asked after the
        fill's commit, the answer holds for the rows written (an erasure that comes later deletes them)."""
        d = self.dialect
        if not int(self.session.fetchall(d.erasure.count_erased_since(self.answers), [since])[0][0] or 0):
            return
        self.session.execute(d.erasure.delete_erased_rows(self.quoted, self.answers, d.literal(self.stamp)), [since])
        self.session.commit()

    @property
    def _compared_columns(self) -> list[str]:
        """What the next run's anti-join compares (the key, the raw values, the settings): the
        statistics it needs, a third of the time of the whole table's."""
        return [self.names.key_column, *(column for _, column in self.names.raw_columns()), "query_spec"]

    def _fill_by_creating(self) -> None:
        """``CREATE TABLE ... AS`` the filled rows, then the primary key, in one transaction; if
        another run created the table first, an upsert like any existing table's."""
        def create() -> None:
            selects = [self._select(null_names=shape, joined=False, typed=True) for shape in self.map.row_shapes()]
            for statement in self.dialect.before_fill_by_creating():
                self.session.execute(statement)
            for statement in self.dialect.fill_new(self.quoted, self.fields, selects, create=True):
                self.session.execute(statement)
            for statement in self.dialect.add_primary_key(self.quoted, self.names.key_column):
                self.session.execute(statement)
            for statement in self.dialect.analyze(self.quoted, self._compared_columns):
                self.session.execute(statement)

        if self._committed_or_upserted(create):
            self.created, self.create_at_fill, self.joinable = True, False, True
            self._log("Created target table %s", self.name)

    def _fill_new(self) -> None:
        """A plain insert into the table this run created; if another run wrote some of the same
        rows meanwhile, it fails whole and becomes an upsert. Prices are fixed up when other
        runs wrote rows of their own (they may hold the same queries)."""
        written = 0

        def insert() -> None:
            nonlocal written
            selects = [self._select(null_names=shape, joined=False) for shape in self.map.row_shapes()]
            for statement in self.dialect.fill_new(self.quoted, self.fields, selects, create=False):
                written += self.session.execute(statement)
            for statement in self.dialect.analyze(self.quoted, self._compared_columns):
                self.session.execute(statement)

        if not self._committed_or_upserted(insert):
            return
        rows = self.session.fetchall(self.dialect.select_rows(self.quoted, count=True))[0][0]
        if int(rows) > written:
            self._fix_prices(leaving=False)

    def _committed_or_upserted(self, write: Callable[[], None]) -> bool:
        """Run ``write`` in one transaction and commit it (True); if another run wrote some of the
        same rows first (a duplicate key), roll it back and fill by upsert instead (False). A table
        this run was creating that another run is creating too is waited for: where the engine does
        not make the second ``CREATE`` wait (DuckDB's catalog conflict), it may not be committed yet."""
        try:
            write()
            self.session.commit()
        except Exception as err:
            self.session.rollback()
            if not self.dialect.errors.is_duplicate_key(err):
                raise
            if self.create_at_fill and not self._made_by_another_run():  # not made within the wait: retried
                raise
            self._fill_existing()
            return False
        return True

    def _fill_existing(self) -> None:
        """An upsert of the new and changed rows, then the fix-up of their queries' prices."""
        fix_ups = self._collect_fixes(leaving=True)
        for shape in self.map.row_shapes():
            upsert = self.dialect.upsert(self.quoted, self.fields, self.names.key_column,
                                         self._select(null_names=shape, joined=True))
            for statement in [upsert] if isinstance(upsert, str) else upsert:  # a list: run in order
                self.session.execute(statement)
        self.session.execute(fix_ups.update)
        self.session.commit()

    def _fix_prices(self, *, leaving: bool) -> None:
        self.session.execute(self._collect_fixes(leaving=leaving).update)
        self.session.commit()

    def _collect_fixes(self, *, leaving: bool) -> PriceFixUps:
        """Collect the queries whose price may have to move: those the fill writes and (``leaving``)
        those whose price sits on a row the fill rewrites with another query; lock their answers
        rows. The fix-up's update is left to run."""
        d = self.dialect
        if self.map.fixes in self.map.made:  # a step run again after a lock conflict
            self.session.execute(d.drop_table(self.map.fixes))
        self.map.made.append(self.map.fixes)
        fix_ups = d.price_fix_ups(self.quoted, self.names, fixes=self.map.fixes, resolved=self.map.resolved,
                                  answers=self.answers, paid_for=self.name, key_sample=self.first_row.key,
                                  leaving=self.map.row_shapes() if leaving and self.joinable else ())
        for statement in fix_ups.collect:
            self.session.execute(statement)
        if fix_ups.lock:
            self.session.fetchall(fix_ups.lock, commit=False)
        return fix_ups

    def _log(self, message: str, *args: Any) -> None:
        if self.log is not None:
            self.log.info(message, *args)
