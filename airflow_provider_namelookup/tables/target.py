"""The target table: created if missing, filled from the source with set-based statements.

All I/O goes through the run's :class:`WarehouseSession` (a common-sql ``DbApiHook``
connection). Rows are never sent through Python: :meth:`TargetTable.fill` upserts
``source ⋈ raw-value map ⋈ answers`` in one statement per shape (``INSERT ... ON CONFLICT
DO UPDATE`` on SQLite and PostgreSQL, ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL/MariaDB),
and puts each query's price on the one row the map names for it (``charge_key``, the
lowest key holding a query this run paid for), so that ``SUM(credits_used)`` is what the
table cost. Values always travel as bind parameters.

Example::

    target = TargetTable(session, "customers_gender", "customer_id", LookupKind.GENDER)
    target.ensure(key_sample=1)
    target.fill(source, value_map, stamp=now)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.schema import (
    BOOKKEEPING,
    STATUS_ERROR,
    STATUS_OK,
    column_type,
    key_column_for,
    result_columns,
)
from airflow_provider_namelookup.tables.session import WarehouseSession, is_duplicate_key

if TYPE_CHECKING:
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

    def ensure(self, key_sample: Any) -> bool:
        """Create the table if missing (keyed by the source's key; no other index: the engine
        only ever finds target rows by key); check its columns if it exists. Safe when several
        runs (mapped shards) try at once.

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
        return False

    def fill(self, source: TableSource, value_map: ValueMap, *, stamp: Any, stale_before: Any = None,
             new_table: bool = False) -> None:
        """Upsert every source row whose raw value is in the resolved map and whose stored hash
        differs (new, changed, or enriched before ``stale_before``), plus the rows that carry a
        query's price (``charge_key``): they get ``credits_used`` = the price, every other row 0.

        A row rewritten with the hash it already had keeps the larger of its old and new
        ``credits_used``, so runs that write the same rows in any order never lose a charge.

        :param new_table: this run created the table: no row of it can be unchanged, so the
            statement neither reads it back nor checks for conflicts (a plain ``INSERT``, about
            1.5x faster on PostgreSQL); if another run wrote some of the same rows meanwhile,
            the insert fails whole and the fill is done again as an upsert.
        """
        if new_table:
            try:
                self._fill(source, value_map, stamp=stamp, stale_before=None, mode="insert")
                self._analyze()
                return
            except Exception as err:
                self.session.rollback()
                if not is_duplicate_key(err):
                    raise
        self._fill(source, value_map, stamp=stamp, stale_before=stale_before,
                   mode="upsert-new" if new_table else "upsert")

    def _analyze(self) -> None:
        """Statistics for a table just bulk-filled (PostgreSQL), so that the next run's distinct
        pass is planned on them instead of on an empty table's (autovacuum comes later)."""
        if self.dialect == "postgresql":
            self.session.execute(f"ANALYZE {self.quoted}")
            self.session.commit()

    def _fill(self, source: TableSource, value_map: ValueMap, *, stamp: Any, stale_before: Any,
              mode: Literal["insert", "upsert-new", "upsert"]) -> None:
        p, q = self.placeholder, self._q
        key = f"s.{q(source.key_column)}"
        results = ", ".join(f"m.{q(c.name)}" for c in result_columns(self.lookup))
        charged = f"{key} = m.charge_key"
        changed = f"t.{q(self.key_column)} IS NULL OR t.{q('query_hash')} <> m.query_hash OR {charged}"
        params: list[Any] = [STATUS_ERROR, STATUS_OK, self.lookup.credits_per_query, stamp]
        joined = mode == "upsert"
        if stale_before is not None and joined:
            changed += f" OR t.{q('enriched_at')} < {p}"
        stale = [stale_before] if stale_before is not None and joined else []
        fields = ", ".join(q(f) for f in self.fields)
        shapes = [False, True] if value_map.has_null_name else [False]
        for null_names in shapes:
            target_join = f"LEFT JOIN {self.quoted} t ON t.{q(self.key_column)} = {key} " if joined else ""
            select = (
                f"SELECT {key}, {results}, CASE WHEN m.error IS NOT NULL THEN {p} ELSE {p} END, m.error, "
                f"CASE WHEN {charged} THEN {p} ELSE 0 END, m.query_hash, {p} "
                f"FROM {source.relation(with_params=True)} s "
                f"JOIN {value_map.resolved} m ON {value_map.join_conditions(null_names=null_names)} {target_join}"
                f"WHERE {f'({changed})' if joined else '1 = 1'}")
            statement = (f"INSERT INTO {self.quoted} ({fields}) {select}" if mode == "insert"
                         else self.session.dialect.upsert_from_select(
                             self.quoted, [q(f) for f in self.fields], q(self.key_column), select,
                             keep_larger_if_same=(q("credits_used"), q("query_hash"))))
            self.session.execute(statement, [*params, *stale])
        self.session.commit()
