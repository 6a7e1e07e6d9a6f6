"""The target table's columns, their SQL types per dialect, and rows built from results.

Every target table has the source's key column, the result columns of its lookup, and
the bookkeeping columns ``status`` (``ok`` or ``error``), ``error`` (the rule a row
broke), ``credits_used`` (credits this row caused to be spent: the first row of a
distinct query carries them, repeats and cache hits 0), ``query_hash`` and ``enriched_at``.

Example::

    >>> [c.name for c in result_columns(LookupKind.GENDER)]
    ['gender', 'probability', 'result_found', 'samples', 'first_name', 'last_name', 'country']
    >>> column_type(Column("gender", "text", 16), "postgresql")
    'VARCHAR(16)'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.models import result_view


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # text | longtext | float | int | bigint | timestamp
    length: int | None = None


_GENDER = (
    Column("gender", "text", 16), Column("probability", "float"), Column("result_found", "int"),
    Column("samples", "bigint"), Column("first_name", "text", 255), Column("last_name", "text", 255),
    Column("country", "text", 8),
)
_ORIGIN = (
    Column("gender", "text", 16), Column("probability", "float"), Column("result_found", "int"),
    Column("samples", "bigint"), Column("first_name", "text", 255), Column("top_country", "text", 8),
    Column("top_country_probability", "float"), Column("language_of_origin", "text", 255),
    Column("ethnicity", "text", 64), Column("meaning", "longtext"), Column("result_json", "longtext"),
)
BOOKKEEPING = (
    Column("status", "text", 16), Column("error", "longtext"), Column("credits_used", "int"),
    Column("query_hash", "text", 64), Column("enriched_at", "timestamp"),
)
STATUS_OK = "ok"
STATUS_ERROR = "error"

ANSWER_BOOKKEEPING = (
    Column("query_hash", "text", 64), Column("lookup", "text", 32), Column("state", "text", 16),
    Column("claimed_by", "text", 64), Column("lease_expires", "float"), Column("answered_by", "text", 64),
    Column("answered_at", "float"), Column("credits", "int"),
)
"""The answers table's own columns; ``lease_expires`` and ``answered_at`` are UNIX times (s)."""
ANSWER_RESULTS = tuple({c.name: c for c in (*_GENDER, *_ORIGIN)}.values())
"""Result columns of both lookups (a query's hash says which lookup it belongs to)."""
STATE_CLAIMED = "claimed"
STATE_ANSWERED = "answered"

_TYPES: dict[str, dict[str, str]] = {
    "sqlite": {"text": "TEXT", "longtext": "TEXT", "float": "REAL", "int": "INTEGER",
               "bigint": "INTEGER", "timestamp": "TEXT"},
    "postgresql": {"text": "VARCHAR({n})", "longtext": "TEXT", "float": "DOUBLE PRECISION", "int": "INTEGER",
                   "bigint": "BIGINT", "timestamp": "TIMESTAMP WITH TIME ZONE"},
    "mysql": {"text": "VARCHAR({n})", "longtext": "MEDIUMTEXT", "float": "DOUBLE", "int": "INT",
              "bigint": "BIGINT", "timestamp": "DATETIME(6)"},
    "default": {"text": "VARCHAR({n})", "longtext": "VARCHAR(8000)", "float": "DOUBLE PRECISION",
                "int": "INTEGER", "bigint": "BIGINT", "timestamp": "TIMESTAMP"},
}


def result_columns(lookup: LookupKind) -> tuple[Column, ...]:
    return _GENDER if lookup is LookupKind.GENDER else _ORIGIN


def column_type(column: Column, dialect: str) -> str:
    return _TYPES.get(dialect, _TYPES["default"])[column.kind].format(n=column.length)


def key_column_for(name: str, sample: Any) -> Column:
    """The target's key column, typed after a sample key from the source."""
    if isinstance(sample, bool) or not isinstance(sample, (int, str)):
        raise ValueError(f"key column {name!r} must hold integers or text, got {type(sample).__name__}")
    return Column(name, "bigint") if isinstance(sample, int) else Column(name, "text", 255)


def _fit(value: Any, column: Column) -> Any:
    if value is None:
        return None
    if column.kind in ("text", "longtext"):
        text = value if isinstance(value, str) else str(value)
        return text[: column.length] if column.length else text
    if column.kind == "float":
        return float(value)
    if column.kind in ("int", "bigint"):
        return int(value)
    return value


def result_values(lookup: LookupKind, result: Mapping[str, Any]) -> tuple[Any, ...]:
    """The result columns' values for one answer, trimmed to fit their columns."""
    view = result_view(result)
    if view["result_found"] is not None:
        view["result_found"] = int(view["result_found"])
    if lookup is LookupKind.ORIGIN:
        view["result_json"] = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return tuple(_fit(view.get(c.name), c) for c in result_columns(lookup))


def timestamp_value(moment: datetime, dialect: str) -> Any:
    """``enriched_at`` as the driver wants it: aware for PostgreSQL, naive UTC for MySQL, ISO text else."""
    if dialect == "postgresql":
        return moment
    if dialect == "mysql":
        return moment.replace(tzinfo=None)
    return moment.isoformat()
