"""The raw-value map: a temporary table from each raw (name, country) to its query hash or error.

Python plans each distinct raw value once; the map carries those decisions back into the
warehouse, where the target is filled by joining source rows to the map on their raw
values. Its raw columns are created from the source itself (``CREATE TABLE ... AS
SELECT ... WHERE 1 = 0``), so they have the source's types and the join compares like
with like. It lives in the run's connection and disappears with it.

Example::

    value_map = ValueMap(session, source)
    value_map.create()
    value_map.load([("Anna", "DE", "<hash>", None), ("", None, "invalid:...", "parameter-...")])
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.tables.identifiers import quote
from airflow_provider_namelookup.tables.schema import Column, column_type
from airflow_provider_namelookup.tables.session import WarehouseSession
from airflow_provider_namelookup.tables.source import TableSource

MapEntry = tuple[Any, Any, str, str | None]
"""``(raw name, raw country or None, query hash, error text or None)``"""


class ValueMap:
    """The run's temporary map table.

    :param session: the run's warehouse session.
    :param source: the source whose name and country columns the map mirrors.
    """

    def __init__(self, session: WarehouseSession, source: TableSource) -> None:
        self.session = session
        self.source = source
        self.name = f"namelookup_map_{uuid.uuid4().hex[:12]}"
        self.has_null_name = False

    @property
    def quoted(self) -> str:
        return quote(self.session.hook, self.name)

    @property
    def columns(self) -> list[str]:
        return ["raw_name", *(["raw_country"] if self.source.country_column else []), "query_hash", "error"]

    def create(self) -> None:
        dialect = self.session.dialect
        raw = f"{self.source.name_expr} AS raw_name"
        if self.source.country_expr:
            raw += f", {self.source.country_expr} AS raw_country"
        self.session.execute(f"CREATE {dialect.temporary} TABLE {self.quoted} AS SELECT {raw} "
                             f"FROM {self.source.relation(with_params=False)} s WHERE 1 = 0")
        for column in (Column("query_hash", "text", 64), Column("error", "longtext")):
            self.session.execute(f"ALTER TABLE {self.quoted} ADD {column.name} {column_type(column, dialect.name)}")
        self.session.commit()

    def load(self, entries: Sequence[MapEntry]) -> None:
        """Insert the entries and index them for the join."""
        with_country = bool(self.source.country_column)
        rows = [(n, c, h, e) if with_country else (n, h, e) for n, c, h, e in entries]
        self.has_null_name = any(entry[0] is None for entry in entries)
        self.session.executemany(
            f"INSERT INTO {self.quoted} ({', '.join(self.columns)}) "
            f"VALUES ({self.session.dialect.marks(len(self.columns))})", rows)
        self._index()
        self.session.commit()

    def _index(self) -> None:
        dialect = self.session.dialect.name
        index = quote(self.session.hook, f"{self.name}_idx")
        if dialect == "postgresql":
            self.session.execute(f"ANALYZE {self.quoted}")  # the planner then hashes the map
            return
        if dialect == "mysql":
            try:  # text columns need a prefix length; numeric ones refuse one
                self.session.execute(f"CREATE INDEX {index} ON {self.quoted} (raw_name(191))")
            except Exception:
                self.session.execute(f"CREATE INDEX {index} ON {self.quoted} (raw_name)")
            return
        self.session.execute(f"CREATE INDEX {index} ON {self.quoted} (raw_name)")

    def join_conditions(self, *, null_names: bool) -> str:
        """How a source row ``s`` finds its map entry ``m`` (the rows with a NULL name apart,
        so that the common case stays a plain equality the database can hash or index)."""
        dialect = self.session.dialect
        name = (f"{self.source.name_expr} IS NULL AND m.raw_name IS NULL" if null_names
                else dialect.exact_equal(self.source.name_expr, "m.raw_name"))
        if self.source.country_expr:
            name += f" AND {dialect.null_safe_equal(self.source.country_expr, 'm.raw_country')}"
        return name

    def drop(self) -> None:
        self.session.execute(f"DROP {self.session.dialect.temporary} TABLE IF EXISTS {self.quoted}"
                             if self.session.dialect.name == "mysql" else f"DROP TABLE IF EXISTS {self.quoted}")
        self.session.commit()
