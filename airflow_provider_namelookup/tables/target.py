"""The target table: created if missing, filled from the source with set-based statements.

All I/O goes through the run's :class:`WarehouseSession` (a common-sql ``DbApiHook``
connection). Rows are never sent through Python: :meth:`TargetTable.fill` upserts
``source ⋈ raw-value map ⋈ answers`` in one statement per shape (``INSERT ... ON CONFLICT
DO UPDATE`` on SQLite and PostgreSQL, ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL/MariaDB),
and :meth:`TargetTable.charge` then puts each query's price on one row of the queries
this run paid for, so that ``SUM(credits_used)`` is what the table cost. Values always
travel as bind parameters.

Example::

    target = TargetTable(session, "customers_gender", "customer_id", LookupKind.GENDER)
    target.ensure(key_sample=1)
    target.fill(source, value_map, answers, stamp=now)
    target.charge(answers, owner="run-1")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.schema import (
    BOOKKEEPING,
    STATE_ANSWERED,
    STATUS_ERROR,
    STATUS_OK,
    column_type,
    key_column_for,
    result_columns,
)
from airflow_provider_namelookup.tables.session import WarehouseSession

if TYPE_CHECKING:
    from airflow_provider_namelookup.tables.answers import AnswersTable
    from airflow_provider_namelookup.tables.source import TableSource
    from airflow_provider_namelookup.tables.valuemap import ValueMap


class TargetTable:
    """One target table of a table operator.

    :param session: the run's warehouse session (methods run on its thread).
    :param name: table name (``table`` or ``schema.table``).
    :param key_column: the source's key column, the target's primary key.
    :param lookup: which lookup's result columns the table holds.
    """

    def __init__(self, session: WarehouseSession, name: str, key_column: str, lookup: LookupKind) -> None:
        self.session = session
        self.name = check_identifier(name, "target_table", qualified=True)
        self.key_column = check_identifier(key_column, "key_column")
        self.lookup = lookup
        clashes = {c.name for c in (*result_columns(lookup), *BOOKKEEPING)} & {key_column.lower()}
        if clashes:
            raise ValueError(f"key_column {key_column!r} clashes with a result column of the target table")
        self.dialect = session.dialect.name
        self.placeholder = session.dialect.placeholder

    @property
    def fields(self) -> list[str]:
        """The table's column names: key, result columns, bookkeeping."""
        return [self.key_column, *(c.name for c in result_columns(self.lookup)), *(c.name for c in BOOKKEEPING)]

    @property
    def quoted(self) -> str:
        return quote(self.session.hook, self.name)

    def _q(self, column: str) -> str:
        return quote(self.session.hook, column)

    def exists(self) -> bool:
        return self.session.has_table(self.quoted, self._q(self.key_column))

    @property
    def _index_name(self) -> str:
        return quote(self.session.hook, f"{self.name.replace('.', '_')[:45]}_query_hash_idx")

    def ensure(self, key_sample: Any) -> bool:
        """Create the table if missing (its ``query_hash`` index comes with :meth:`ensure_index`,
        after the first fill: building it once is much cheaper than updating it row by row);
        check its columns if it exists. Safe when several runs (mapped shards) try at once.

        :returns: True when the table was created.
        :raises ValueError: when an existing table lacks a column the operator writes.
        """
        if not self.exists():
            key = key_column_for(self.key_column, key_sample)
            definitions = [f"{self._q(key.name)} {column_type(key, self.dialect)} NOT NULL PRIMARY KEY"]
            definitions += [f"{self._q(c.name)} {column_type(c, self.dialect)}"
                            for c in (*result_columns(self.lookup), *BOOKKEEPING)]
            try:
                self.session.execute(f"CREATE TABLE {self.quoted} ({', '.join(definitions)})")
                self.session.commit()
                return True
            except Exception:
                self.session.rollback()
                if not self.exists():
                    raise
        columns = ", ".join(self._q(f) for f in self.fields)
        try:
            self.session.fetchall(f"SELECT {columns} FROM {self.quoted} WHERE 1 = 0")
        except Exception as err:
            raise ValueError(
                f"target table {self.name} exists but lacks columns the operator writes "
                f"({', '.join(self.fields)}): {err}") from None
        if self.dialect != "mysql":  # a run that died before indexing left none: a no-op otherwise
            self.ensure_index()
        return False

    def ensure_index(self) -> None:
        """Create the ``query_hash`` index if it is missing (another run may be creating it)."""
        if_not_exists = "" if self.dialect == "mysql" else "IF NOT EXISTS "  # MySQL 8 has no such clause
        try:
            self.session.execute(f"CREATE INDEX {if_not_exists}{self._index_name} ON {self.quoted} "
                                 f"({self._q('query_hash')})")
            self.session.commit()
        except Exception as err:
            self.session.rollback()
            if not any(word in str(err).lower() for word in ("duplicate", "already exists")):
                raise

    def fill(self, source: TableSource, value_map: ValueMap, answers: AnswersTable, *, stamp: Any,
             stale_before: Any = None, new_table: bool = False) -> None:
        """Upsert every source row whose raw value is in the map and whose stored hash differs
        (new, changed, or enriched before ``stale_before``), when its query is answered or invalid.

        :param new_table: this run created the table: no row of it can be unchanged, so the
            statement does not read it back (much faster on SQLite; a concurrent run's rows
            are still upserted safely).
        """
        p, q = self.placeholder, self._q
        key = f"s.{q(source.key_column)}"
        results = ", ".join(f"a.{q(c.name)}" for c in result_columns(self.lookup))
        changed = f"t.{q(self.key_column)} IS NULL OR t.{q('query_hash')} <> m.query_hash"
        params: list[Any] = [STATUS_ERROR, STATUS_OK, stamp]
        if stale_before is not None and not new_table:
            changed += f" OR t.{q('enriched_at')} < {p}"
        shapes = [False, True] if value_map.has_null_name else [False]
        for null_names in shapes:
            target_join = "" if new_table else f"LEFT JOIN {self.quoted} t ON t.{q(self.key_column)} = {key} "
            select = (
                f"SELECT {key}, {results}, CASE WHEN m.error IS NOT NULL THEN {p} ELSE {p} END, m.error, 0, "
                f"m.query_hash, {p} FROM {source.relation(with_params=True)} s "
                f"JOIN {value_map.quoted} m ON {value_map.join_conditions(null_names=null_names)} {target_join}"
                f"LEFT JOIN {answers.quoted} a ON a.{q('query_hash')} = m.query_hash AND a.{q('state')} = {p} "
                f"WHERE {'1 = 1' if new_table else f'({changed})'} "
                f"AND (m.error IS NOT NULL OR a.{q('query_hash')} IS NOT NULL)")
            stale = [stale_before] if stale_before is not None and not new_table else []
            statement_params = [*params, STATE_ANSWERED, *stale]
            self.session.execute(self.session.dialect.upsert_from_select(
                self.quoted, [q(f) for f in self.fields], q(self.key_column), select,
                keep_if_same=(q("credits_used"), q("query_hash"))), statement_params)
        self.session.commit()

    def charge(self, answers: AnswersTable, *, owner: str) -> int:
        """Put the price of each query ``owner`` paid for on one row holding it (the lowest key);
        the number of rows charged. (Another run over the same rows may have written them first:
        the rows are found by hash, not by who wrote them.)"""
        p, q = self.placeholder, self._q
        key = q(self.key_column)
        # The derived table is materialised first, so MySQL accepts reading the updated table.
        charged = self.session.execute(
            f"UPDATE {self.quoted} SET {q('credits_used')} = {p} WHERE {key} IN (SELECT k FROM ("
            f"SELECT MIN(t.{key}) AS k FROM {self.quoted} t "
            f"JOIN {answers.quoted} a ON a.{q('query_hash')} = t.{q('query_hash')} "
            f"WHERE a.{q('answered_by')} = {p} GROUP BY t.{q('query_hash')}) charged)",
            [self.lookup.credits_per_query, owner])
        self.session.commit()
        return charged
