"""The columns of the tables the engine writes, and rows of result values built from answers.

A **target table** has the source's key column, the result columns of its lookup, the
bookkeeping columns ``status`` (``ok`` or ``error``), ``error`` (the rule a row broke),
``credits_used`` (a query's price, carried by one row holding it), ``query_hash``,
``enriched_at``, and what the row was enriched from: ``source_name``, ``source_last_name``
(with ``last_name_column``) and ``source_country`` (the raw values as read, in the source's
own types) and ``query_spec``
(the operator settings that shaped the question, :attr:`QueryRules.fingerprint`). With
those a run finds the rows that changed by comparing raw values, without planning the
unchanged ones again.

The **answers table** holds one row per answered (or claimed) query, shared by every run
that uses it (and one row per run whose answers were lost after their request was sent, state
``lost``: what they may have cost).

Types are the dialect's (:mod:`~airflow_provider_namelookup.warehouse.dialects`).

Example::

    >>> [c.name for c in result_columns(LookupKind.GENDER)]
    ['gender', 'probability', 'result_found', 'samples', 'first_name', 'last_name', 'country']
    >>> result_values(LookupKind.GENDER, {"gender": "female", "probability": 0.98, "result_found": True})[:3]
    ('female', 0.98, 1)
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.errors import InvalidArgument
from airflow_provider_namelookup.models import result_view


@dataclass(frozen=True)
class Column:
    """A column the engine writes, with an engine-neutral kind (the dialect spells its type)."""

    name: str
    kind: Literal["text", "longtext", "float", "int", "bigint", "timestamp"]
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
    Column("query_hash", "text", 64), Column("enriched_at", "timestamp"), Column("query_spec", "text", 16),
)
"""Columns of every target after the result columns (the raw columns come from the source)."""
SOURCE_NAME = "source_name"
SOURCE_COUNTRY = "source_country"
SOURCE_LAST_NAME = "source_last_name"
LEGACY_RAW = Column(SOURCE_NAME, "longtext")
"""The type raw columns get when added to a target made by an earlier release."""
STATUS_OK = "ok"
STATUS_ERROR = "error"

ANSWER_KEY = Column("query_hash", "text", 64)
ANSWER_BOOKKEEPING = (
    Column("lookup", "text", 32), Column("state", "text", 16), Column("claimed_by", "text", 64),
    Column("lease_expires", "float"), Column("answered_by", "text", 64), Column("answered_at", "float"),
    Column("credits", "int"), Column("paid_for", "text", 255),
)
"""The answers table's own columns after its key; ``lease_expires`` and ``answered_at`` are UNIX
times (s); ``paid_for`` is the target table whose run paid for the answer (its rows carry the price)."""
ANSWER_RESULTS = tuple({c.name: c for c in (*_GENDER, *_ORIGIN)}.values())
"""Result columns of both lookups (a query's hash says which lookup it belongs to)."""
STATE_ANSWERED = "answered"
STATE_LOST = "lost"
"""The state of a run's row that keeps what its lost answers may have cost (no query's row)."""


def result_columns(lookup: LookupKind) -> tuple[Column, ...]:
    """The target table's result columns of ``lookup`` (gender, or country of origin)."""
    return _GENDER if lookup is LookupKind.GENDER else _ORIGIN


def chosen_result_columns(lookup: LookupKind, columns: Iterable[str] | None) -> tuple[Column, ...]:
    """The result columns a target of ``lookup`` holds when an operator's ``columns`` names them
    (in the table's order; None: every one). A name that is no answer field of ``lookup`` is
    refused with the valid names, and the likeliest one it was meant to be.

    >>> [c.name for c in chosen_result_columns(LookupKind.GENDER, ["probability", "gender"])]
    ['gender', 'probability']
    >>> chosen_result_columns(LookupKind.GENDER, ["gendr"])
    Traceback (most recent call last):
    ...
    airflow_provider_namelookup.errors.InvalidArgument: columns: 'gendr' is no answer field of the gender \
lookup (did you mean 'gender'?); give some of: gender, probability, result_found, samples, first_name, \
last_name, country
    """
    every = result_columns(lookup)
    if columns is None:
        return every
    names = [columns] if isinstance(columns, str) else list(columns)
    valid = [c.name for c in every]
    for name in names:
        if name not in valid:
            raise InvalidArgument(f"columns: {name!r} is no answer field of the {lookup.value} lookup"
                                  f"{_meant(name, valid)}; give some of: {', '.join(valid)}")
    if not names:
        raise InvalidArgument(f"columns must name at least one answer field; give some of: {', '.join(valid)}")
    return tuple(c for c in every if c.name in names)


def _meant(name: Any, valid: list[str]) -> str:
    """What a mistyped answer field was likely meant to be (or why it cannot be listed)."""
    if not isinstance(name, str):
        return f" (a {type(name).__name__}, not a column's name)"
    if name.lower() in {c.name for c in BOOKKEEPING} | {SOURCE_NAME, SOURCE_COUNTRY, SOURCE_LAST_NAME}:
        return " (it is the provider's own, in every target)"
    close = difflib.get_close_matches(name.lower(), valid, n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
    if lookup is LookupKind.GENDER and type(result) is dict and type(details := result.get("details")) is dict:
        return _gender_values(result, details)
    return _values_of_view(lookup, result)


def _text(value: Any, length: int) -> str | None:
    return value[:length] if isinstance(value, str) else None


_GENDER_TEXT = {c.name: c.length or 0 for c in _GENDER if c.kind == "text"}


def _gender_values(result: dict[str, Any], details: dict[str, Any]) -> tuple[Any, ...]:
    """:func:`_values_of_view` of a gender answer as the service sends it (plain dicts), without
    building the whole view: a run stores tens of thousands of them on the thread its warehouse
    statements wait for."""
    probability, found, samples = result.get("probability"), result.get("result_found"), details.get("samples")
    probability = (float(probability) if isinstance(probability, int | float) and not isinstance(probability, bool)
                   else None)
    text = _GENDER_TEXT
    return (_text(result.get("gender"), text["gender"]), probability,
            None if found is None else int(bool(found)),
            int(samples) if isinstance(samples, int) and not isinstance(samples, bool) else None,
            _text(result.get("first_name"), text["first_name"]), _text(result.get("last_name"), text["last_name"]),
            _text(details.get("country"), text["country"]))


def _values_of_view(lookup: LookupKind, result: Mapping[str, Any]) -> tuple[Any, ...]:
    """The result columns' values read through :func:`~airflow_provider_namelookup.models.result_view`."""
    view = result_view(result)
    if view["result_found"] is not None:
        view["result_found"] = int(view["result_found"])
    if lookup is LookupKind.ORIGIN:
        view["result_json"] = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return tuple(_fit(view.get(c.name), c) for c in result_columns(lookup))
