"""The plan step: turn input rows into validated queries, without any I/O.

A row becomes a :class:`PlannedRow` holding either a :class:`Query` and its
``query_hash`` (the identity used to deduplicate and to skip what was already
enriched) or the validation error that keeps it from costing anything.

Example::

    >>> spec = RowSpec(lookup=LookupKind.GENDER, name_kind="first_name", default_country="DE")
    >>> rows = [plan_row(1, "Anna", spec), plan_row(2, "anna ", spec), plan_row(3, "", spec)]
    >>> rows[0].query_hash == rows[1].query_hash, rows[2].error.status_id
    (True, 'parameter-first-name-invalid')
    >>> len(distinct_queries(rows)), spec.lookup.credits_per_query
    (1, 1)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LookupKind", "PlannedRow", "RowSpec", "distinct_queries", "plan_query_object", "plan_refused",
           "plan_row", "query_hash"]

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, NameKind, Query
from airflow_provider_namelookup.validation import NAME_STATUS, validate_query


@dataclass(frozen=True)
class RowSpec:
    """How to read rows for one run.

    :param lookup: gender or country of origin.
    :param name_kind: what a bare name value is: ``first_name``, ``full_name`` or ``email``.
    :param default_country: hint for rows that carry none (likewise locale and ip).
    :param secrets: values no query may contain (the connection's token): a row holding
        one is refused instead of sending the secret to the service and into results.
    """

    lookup: LookupKind
    name_kind: NameKind = "first_name"
    default_country: str | None = None
    default_locale: str | None = None
    default_ip: str | None = None
    secrets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name_kind not in NAME_KINDS:
            raise ValueError(f"name_kind must be one of {', '.join(NAME_KINDS)}, got {self.name_kind!r}")


@dataclass(frozen=True)
class PlannedRow:
    """One input row after planning: a query to answer, or the rule it broke."""

    ref: Any
    query: Query | None
    query_hash: str
    error: NameLookupValidationError | None = None


def query_hash(lookup: LookupKind, query: Query) -> str:
    """Stable identity of a question: endpoint plus the query's normalised cache key."""
    return hashlib.sha256(f"{lookup.value}\x1e{query.cache_key}".encode()).hexdigest()[:40]


def _invalid_hash(lookup: LookupKind, raw: Any) -> str:
    text = json.dumps(raw, sort_keys=True, default=repr, ensure_ascii=False)
    return "invalid:" + hashlib.sha256(f"{lookup.value}\x1e{text}".encode("utf-8", "replace")).hexdigest()[:32]


def build_query_object(name: Any, spec: RowSpec, *, country: Any = None, locale: Any = None,
                       ip: Any = None, id: Any = None) -> dict[str, Any]:
    """A query object from a bare name plus per-row hints, falling back on the spec's defaults."""
    raw: dict[str, Any] = {spec.name_kind: name}
    for hint, value, default in (("country", country, spec.default_country),
                                  ("locale", locale, spec.default_locale), ("ip", ip, spec.default_ip)):
        chosen = default if value is None or (isinstance(value, str) and not value.strip()) else value
        if chosen is not None:
            raw[hint] = chosen
    if id is not None:
        raw["id"] = id
    return raw


def plan_query_object(ref: Any, raw: Any, spec: RowSpec) -> PlannedRow:
    """Plan one query object (a dict with first_name / full_name / email and hints)."""
    if isinstance(raw, Mapping) and spec.lookup.takes_hints:
        raw = {**raw}
        for field, default in (("country", spec.default_country), ("locale", spec.default_locale),
                               ("ip", spec.default_ip)):
            if default is not None and raw.get(field) in (None, ""):
                raw[field] = default
    try:
        query = validate_query(raw, hints=spec.lookup.takes_hints)
    except NameLookupValidationError as err:
        return PlannedRow(ref, None, _invalid_hash(spec.lookup, raw), err)
    leaked = _field_holding_secret(query, spec.secrets)
    if leaked:
        status = "invalid-id" if leaked == "id" else NAME_STATUS[query.kind]
        error = NameLookupValidationError(status, f"{leaked} holds the connection's API token; it is never sent",
                                          field=leaked)
        return PlannedRow(ref, None, _invalid_hash(spec.lookup, raw), error)
    return PlannedRow(ref, query, query_hash(spec.lookup, query))


SECRET_MIN_LENGTH = 16
"""A token at least this long is refused anywhere inside a name or id; a shorter one (a
toy token such as ``dev``) only as the whole value, so that it never refuses a real
name such as Sukhdev or Peter. Service tokens are 32 characters and more."""


def _field_holding_secret(query: Query, secrets: frozenset[str]) -> str | None:
    """The field of a valid query that carries a secret (hints are too short to hold one)."""
    for field_name, value in ((query.kind, query.name), ("id", query.id)):
        if isinstance(value, str) and any(
                value == secret or (len(secret) >= SECRET_MIN_LENGTH and secret in value) for secret in secrets):
            return field_name
    return None


def plan_row(ref: Any, name: Any, spec: RowSpec, *, country: Any = None, locale: Any = None,
             ip: Any = None, id: Any = None) -> PlannedRow:
    """Plan one row given as a bare name (of ``spec.name_kind``) and optional hints."""
    return plan_query_object(ref, build_query_object(name, spec, country=country, locale=locale, ip=ip, id=id),
                             spec)


def plan_refused(ref: Any, raw: Any, spec: RowSpec, detail: str, field: str | None = None) -> PlannedRow:
    """A row that cannot even be read as a query (wrong shape), recorded as invalid."""
    error = NameLookupValidationError("mandatory-parameter-missing", detail, field=field)
    return PlannedRow(ref, None, _invalid_hash(spec.lookup, raw), error)


def distinct_queries(rows: Iterable[PlannedRow]) -> dict[str, Query]:
    """The distinct valid queries of some rows, by hash, in first-seen order."""
    found: dict[str, Query] = {}
    for row in rows:
        if row.query is not None and row.query_hash not in found:
            found[row.query_hash] = row.query.with_id(None)
    return found
