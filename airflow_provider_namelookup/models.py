"""Queries and results as plain, JSON-serialisable records.

A :class:`Query` is one validated, normalised lookup (build it with
:func:`airflow_provider_namelookup.validation.validate_query`). Results stay the
service's JSON objects as plain dicts; :func:`result_view` reads the few fields
the provider needs from them tolerantly, so a missing or null field never crashes.

Example::

    >>> q = Query(kind="first_name", name="Theresa", country="DE")
    >>> q.to_payload()
    {'first_name': 'Theresa', 'country': 'DE'}
    >>> result_view({"gender": "female", "probability": 0.98, "details": None})["credits_used"]
    0
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_provider_namelookup.contract import HINT_FIELDS, NAME_KINDS, NameKind

__all__ = ["HINT_FIELDS", "NAME_KINDS", "NameKind", "Query", "credits_used", "result_view"]

@dataclass(frozen=True, slots=True)
class Query:
    """One validated lookup: which name field, its normalised value, hints and id.

    :param kind: ``first_name``, ``full_name`` or ``email``.
    :param name: the normalised value (NFC, trimmed, inner whitespace collapsed).
    :param country: upper-case code from the spec's country table, or None.
    :param locale: ``xx_YY`` (normalised from ``xx-YY``), or None.
    :param ip: a canonical IPv4/IPv6 address, or None.
    :param id: the caller's id (int, or str of at most 50 characters), echoed back.
    """

    kind: NameKind
    name: str
    country: str | None = None
    locale: str | None = None
    ip: str | None = None
    id: int | str | None = None

    def to_payload(self) -> dict[str, Any]:
        """The JSON object sent on the wire (null fields left out)."""
        payload: dict[str, Any] = {self.kind: self.name}
        # HINT_FIELDS spelt out: a payload is built for every query a run sends
        if self.country is not None:
            payload["country"] = self.country
        if self.locale is not None:
            payload["locale"] = self.locale
        if self.ip is not None:
            payload["ip"] = self.ip
        if self.id is not None:
            payload["id"] = self.id
        return payload

    @property
    def cache_key(self) -> str:
        """What makes two queries the same question: kind, case-folded name and hints (not id)."""
        return "\x1f".join((self.kind, self.name.casefold(), self.country or "",
                            self.locale or "", self.ip or ""))

    def identity(self, lookup: str) -> str:
        """The question's hash for one lookup (``gender`` or ``country_of_origin``): what a run
        dedupes on, keys its cache by, and sends as the query's id when it has none.

        >>> Query("first_name", "Anna").identity("gender") == Query("first_name", "ANNA", id=7).identity("gender")
        True
        """
        return hashlib.sha256(f"{lookup}\x1e{self.cache_key}".encode()).hexdigest()[:40]

    def with_identity(self, lookup: str) -> Query:
        """This query with its :meth:`identity` as id, unless it has an id of its own."""
        return self if self.id is not None else replace(self, id=self.identity(lookup))

    def with_id(self, id: int | str | None) -> Query:
        if id is None and self.id is None:
            return self
        return replace(self, id=id)

    def without_hints(self) -> Query:
        """The country-of-origin form of this query, which takes no hints."""
        if self.country is None and self.locale is None and self.ip is None:
            return self
        return replace(self, country=None, locale=None, ip=None)

    @property
    def hint_country(self) -> str | None:
        """The country that localises this query by the precedence rule, except for ``ip``
        (which needs the emulator's address table)."""
        if self.country:
            return self.country
        if self.locale:
            return self.locale.split("_", 1)[1]
        return None


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def result_view(result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields the provider stores from a gender or country-of-origin result.

    Tolerant: anything missing, null or of the wrong type reads as None (0 for credits).

    :param result: a result object as the service returned it.
    """
    result = result if isinstance(result, Mapping) else {}
    details = result.get("details")
    details = details if isinstance(details, Mapping) else {}
    ethnicity = result.get("ethnicity")
    ethnicity = ethnicity if isinstance(ethnicity, Mapping) else {}
    origins = result.get("country_of_origin")
    top_origin = origins[0] if isinstance(origins, list) and origins and isinstance(origins[0], Mapping) else {}
    samples = details.get("samples")
    return {
        "result_found": bool(result.get("result_found")) if result.get("result_found") is not None else None,
        "gender": _as_str(result.get("gender")),
        "probability": _as_float(result.get("probability")),
        "first_name": _as_str(result.get("first_name")),
        "last_name": _as_str(result.get("last_name")),
        "samples": samples if isinstance(samples, int) and not isinstance(samples, bool) else None,
        "country": _as_str(details.get("country")),
        "credits_used": _as_int(details.get("credits_used")),
        "top_country": _as_str(top_origin.get("country")),
        "top_country_probability": _as_float(top_origin.get("probability")),
        "language_of_origin": _as_str(result.get("language_of_origin")),
        "meaning": _as_str(result.get("meaning")),
        "ethnicity": _as_str(ethnicity.get("id")),
    }


def credits_used(result: Mapping[str, Any] | None) -> int:
    """``details.credits_used`` of a result, 0 when absent or malformed."""
    if type(result) is dict and type(details := result.get("details")) is dict:  # as decoded: no ABC check
        return _as_int(details.get("credits_used"))
    details = result.get("details") if isinstance(result, Mapping) else None
    return _as_int(details.get("credits_used")) if isinstance(details, Mapping) else 0
