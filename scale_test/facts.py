"""What a correct enrichment of a table must pay for, counted without the table operator.

Each ``(name, country)`` pair is validated with the spec's rules
(:func:`~airflow_provider_namelookup.validation.validate_query`, the same code the
emulator applies) and identified by the normalised query's ``cache_key``: the distinct
valid keys are the credits a gender run must spend, however many task instances share
the work.

Example::

    >>> facts = count_queries([("Anna", "DE"), ("anna ", "de"), ("", None), ("Anna", None)])
    >>> facts.rows, facts.invalid_rows, facts.distinct_queries
    (4, 1, 2)
    >>> query_key("anna ", "de") == query_key("Anna", "DE"), query_key("", None)
    (True, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.validation import validate_query


@dataclass(frozen=True)
class QueryFacts:
    """The rows of a table as the service sees them.

    :param rows: rows counted.
    :param invalid_rows: rows breaking a rule (they cost nothing).
    :param distinct_queries: distinct valid gender queries: the credits a run must spend.
    """

    rows: int
    invalid_rows: int
    distinct_queries: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def query_key(name: Any, country: Any) -> str | None:
    """The normalised gender query's ``cache_key`` of one row, None when the row breaks a rule."""
    try:
        return validate_query({"first_name": name, "country": country}).cache_key
    except NameLookupValidationError:
        return None


def count_queries(pairs: Iterable[tuple[Any, Any]]) -> QueryFacts:
    """Count the rows, invalid rows and distinct valid gender queries of ``(name, country)`` pairs."""
    rows = invalid = 0
    keys: set[str] = set()
    verdicts: dict[tuple[Any, Any], str | None] = {}
    for pair in pairs:
        rows += 1
        if pair not in verdicts:
            verdicts[pair] = query_key(*pair)
        key = verdicts[pair]
        if key is None:
            invalid += 1
        else:
            keys.add(key)
    return QueryFacts(rows=rows, invalid_rows=invalid, distinct_queries=len(keys))
