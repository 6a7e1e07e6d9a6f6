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

from airflow_provider_namelookup.contract import HINT_FIELDS, LookupKind
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, NameKind, Query
from airflow_provider_namelookup.token_guard import validate_query_without_secrets


@dataclass(frozen=True)
class RowSpec:
    """How to read rows for one run.

    :param lookup: gender or country of origin.
    :param name_kind: what a bare name value is: ``first_name``, ``full_name`` or ``email``.
    :param default_country: hint for rows that carry none (likewise locale and ip).
    :param secrets: values no query may contain (the connection's token): a row holding
        one is refused instead of sending the secret to the service and into results
        (the rule of :mod:`airflow_provider_namelookup.token_guard`).
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

    @property
    def default_hints(self) -> dict[str, str | None]:
        """Hint field → the value rows without one get (country of origin takes none)."""
        if not self.lookup.takes_hints:
            return {}
        return {"country": self.default_country, "locale": self.default_locale, "ip": self.default_ip}

    @property
    def fingerprint(self) -> str:
        """What, besides a row's own values, shapes its question (lookup, name kind, default hints).

        A table target keeps it beside each row's raw values, so that a row is known to be
        unchanged without planning it again, and a changed default hint re-asks every row.

        >>> RowSpec(LookupKind.GENDER).fingerprint == RowSpec(LookupKind.GENDER, default_country="DE").fingerprint
        False
        """
        parts = [self.lookup.value, self.name_kind, *(f"{k}={v or ''}" for k, v in self.default_hints.items())]
        return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class PlannedRow:
    """One input row after planning: a query to answer, or the rule it broke."""

    ref: Any
    query: Query | None
    query_hash: str
    error: NameLookupValidationError | None = None


def query_hash(lookup: LookupKind, query: Query) -> str:
    """Stable identity of a question: endpoint plus the query's normalised cache key
    (:meth:`Query.identity`)."""
    return query.identity(lookup.value)


def _invalid_hash(lookup: LookupKind, raw: Any) -> str:
    text = json.dumps(raw, sort_keys=True, default=repr, ensure_ascii=False)
    return "invalid:" + hashlib.sha256(f"{lookup.value}\x1e{text}".encode("utf-8", "replace")).hexdigest()[:32]


def build_query_object(name: Any, spec: RowSpec, *, country: Any = None, locale: Any = None,
                       ip: Any = None, id: Any = None) -> dict[str, Any]:
    """A query object from a bare name plus per-row hints, falling back on the spec's defaults."""
    raw: dict[str, Any] = {spec.name_kind: name}
    given = dict(zip(HINT_FIELDS, (country, locale, ip), strict=True))
    for hint, default in spec.default_hints.items():
        value = given[hint]
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
        for field, default in spec.default_hints.items():
            if default is not None and raw.get(field) in (None, ""):
                raw[field] = default
    try:
        query = validate_query_without_secrets(raw, hints=spec.lookup.takes_hints, secrets=spec.secrets)
    except NameLookupValidationError as err:
        return PlannedRow(ref, None, _invalid_hash(spec.lookup, raw), err)
    return PlannedRow(ref, query, query_hash(spec.lookup, query))


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
