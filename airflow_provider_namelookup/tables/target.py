"""The target table: created if missing, read for what is already enriched, upserted by key.

All I/O goes through the connection's common-sql ``DbApiHook``: ``get_records`` for
reads, ``run`` for DDL and ``insert_rows(replace=True)`` for upserts (``REPLACE INTO``
on SQLite and MySQL/MariaDB, ``INSERT ... ON CONFLICT`` on PostgreSQL). Values always
travel as bind parameters.

Example::

    target = TargetTable(SqliteHook("warehouse"), "customers_gender", "customer_id", LookupKind.GENDER)
    target.ensure(key_sample=1)
    target.known_hashes()               # {query_hash: a key whose row holds that answer}
    target.upsert([row_tuple, ...])     # one transaction
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.schema import (
    BOOKKEEPING,
    STATUS_OK,
    column_type,
    key_column_for,
    result_columns,
)

_IN_CHUNK = 500


class TargetTable:
    """One target table of a table operator.

    :param hook: a common-sql ``DbApiHook`` for the warehouse.
    :param name: table name (``table`` or ``schema.table``).
    :param key_column: the source's key column, the target's primary key.
    :param lookup: which lookup's result columns the table holds.
    """

    def __init__(self, hook: Any, name: str, key_column: str, lookup: LookupKind) -> None:
        self.hook = hook
        self.name = check_identifier(name, "target_table", qualified=True)
        self.key_column = check_identifier(key_column, "key_column")
        self.lookup = lookup
        clashes = {c.name for c in (*result_columns(lookup), *BOOKKEEPING)} & {key_column.lower()}
        if clashes:
            raise ValueError(f"key_column {key_column!r} clashes with a result column of the target table")
        self.dialect = hook.dialect_name
        self.placeholder = hook.placeholder

    @property
    def fields(self) -> list[str]:
        """Column names in the order of the row tuples given to :meth:`upsert`."""
        return [self.key_column, *(c.name for c in result_columns(self.lookup)), *(c.name for c in BOOKKEEPING)]

    @property
    def quoted(self) -> str:
        return quote(self.hook, self.name)

    def _q(self, column: str) -> str:
        return quote(self.hook, column)

    def exists(self) -> bool:
        try:
            self.hook.get_records(f"SELECT {self._q(self.key_column)} FROM {self.quoted} WHERE 1 = 0")
        except Exception:
            return False
        return True

    def ensure(self, key_sample: Any) -> bool:
        """Create the table (and its ``query_hash`` index) if missing; check its columns if not.

        :returns: True when the table was created.
        :raises ValueError: when an existing table lacks a column the operator writes.
        """
        if self.exists():
            columns = ", ".join(self._q(f) for f in self.fields)
            try:
                self.hook.get_records(f"SELECT {columns} FROM {self.quoted} WHERE 1 = 0")
            except Exception as err:
                raise ValueError(
                    f"target table {self.name} exists but lacks columns the operator writes "
                    f"({', '.join(self.fields)}): {err}") from None
            return False
        key = key_column_for(self.key_column, key_sample)
        definitions = [f"{self._q(key.name)} {column_type(key, self.dialect)} NOT NULL PRIMARY KEY"]
        definitions += [f"{self._q(c.name)} {column_type(c, self.dialect)}"
                        for c in (*result_columns(self.lookup), *BOOKKEEPING)]
        index = f"{self.name.replace('.', '_')[:45]}_query_hash_idx"
        self.hook.run([
            f"CREATE TABLE {self.quoted} ({', '.join(definitions)})",
            f"CREATE INDEX {quote(self.hook, index)} ON {self.quoted} ({self._q('query_hash')})",
        ])
        return True

    def known_hashes(self) -> dict[str, Any]:
        """Every answered query hash with one key whose row holds the answer (cross-run cache)."""
        rows = self.hook.get_records(
            f"SELECT {self._q('query_hash')}, MIN({self._q(self.key_column)}) FROM {self.quoted} "
            f"WHERE {self._q('status')} = {self.placeholder} GROUP BY {self._q('query_hash')}", [STATUS_OK])
        return {h: k for h, k in rows}

    def fetch_results(self, keys: Iterable[Any]) -> dict[Any, tuple[Any, ...]]:
        """The result columns of the rows with these keys."""
        wanted = list(keys)
        columns = ", ".join(self._q(c.name) for c in result_columns(self.lookup))
        found: dict[Any, tuple[Any, ...]] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start:start + _IN_CHUNK]
            marks = ", ".join([self.placeholder] * len(chunk))
            for row in self.hook.get_records(
                    f"SELECT {self._q(self.key_column)}, {columns} FROM {self.quoted} "
                    f"WHERE {self._q(self.key_column)} IN ({marks})", chunk):
                found[row[0]] = tuple(row[1:])
        return found

    def upsert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert or replace rows by key, in one transaction."""
        if rows:
            self.hook.insert_rows(self.quoted, rows,
                                  target_fields=self.fields, commit_every=len(rows), replace=True,
                                  executemany=True, replace_index=[self.key_column])
