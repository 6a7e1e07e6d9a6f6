"""Amazon Redshift (``apache-airflow-providers-amazon``: ``RedshiftSQLHook``, redshift_connector).

What differs from the base: no ``IS NOT DISTINCT FROM`` (null-safe equality is spelled
out); no indexes; keys declared but not enforced, so every fill is a ``MERGE``;
``MERGE`` has no ``WHEN MATCHED AND``, so a claim's condition moves into its ``CASE``
assignments; bulk loads as multi-row ``INSERT ... VALUES`` of literals (``COPY`` needs
S3, ``executemany`` sends a statement per row, and a statement binds at most 32,767
parameters), text as ``FROM_VARBYTE(FROM_HEX(...), 'utf8')`` so that no quote or
backslash of a name is read as SQL, up to 8 MB a statement (Redshift takes 16 MB).

Credits: Redshift runs transactions serialisably: of two runs' claims of one query, the
one that commits second fails with "Serializable isolation violation" (error 1023), and
the engine runs it again; it then finds the query claimed and waits for its answer.

Example::

    dialect = RedshiftDialect(RedshiftSQLHook("warehouse"))
    dialect.null_safe_equal("t.source_country", "s.country")
    # '(t.source_country = s.country OR (t.source_country IS NULL AND s.country IS NULL))'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    DriverErrors,
    EngineTraits,
    WarehouseDialect,
    cloud_tuning,
)

_STATEMENT_BYTES = 8_000_000


class RedshiftDialect(WarehouseDialect, name="redshift", proof="parsed only",
                      credit_promise=("serialisable transactions: of two runs' claims of one query "
                                      "the second fails with a serializable isolation violation and "
                                      "is run again, finding the query held")):
    """The spellings of Amazon Redshift: what differs from the base is in this module's docstring."""

    engine = EngineTraits(naive_timestamps=True, enforces_keys=False, bulk_load=BulkLoad.LITERALS)
    tuning = cloud_tuning(conflict_attempts=8, conflict_backoff_seconds=0.5)
    errors = DriverErrors(lock_conflict_words=("serializable isolation violation", "deadlock"))

    def null_safe_equal(self, left: str, right: str) -> str:
        return f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))"

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        return []

    def value(self, value: Any) -> str:
        """A value read from the source (or an answer) as a literal no text can break out of."""
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int | Decimal):
            return str(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"CAST('{value}' AS DOUBLE PRECISION)"
        if isinstance(value, datetime | date):
            return f"'{value.isoformat()}'"
        return f"FROM_VARBYTE(FROM_HEX('{str(value).encode().hex()}'), 'utf8')"

    def insert_literals(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
        """Multi-row ``INSERT`` statements of :meth:`value` literals, at most 8 MB each (Redshift takes 16)."""
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        statements: list[str] = []
        values: list[str] = []
        size = len(head)
        for row in rows:
            text = f"({', '.join(self.value(v) for v in row)})"
            if values and size + len(text) > _STATEMENT_BYTES:
                statements.append(head + ", ".join(values))
                values, size = [], len(head)
            values.append(text)
            size += len(text) + 2
        if values:
            statements.append(head + ", ".join(values))
        return statements

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        p = self.placeholder

        def taken(new: str, column: str) -> str:
            return f"{column} = CASE WHEN ({reclaimable}) THEN {new} ELSE a.{column} END"
        sets = ", ".join([taken("'claimed'", "state"), taken(p, "claimed_by"), taken(p, "lease_expires")])
        return self._merge_claim(answers, chosen, f"WHEN MATCHED THEN UPDATE SET {sets}")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return [*chosen, *reclaimable, *reclaimable, owner, *reclaimable, lease, lookup, owner, lease]


DIALECT = RedshiftDialect
