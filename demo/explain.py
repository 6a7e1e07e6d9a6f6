"""What the demo's report says beside its numbers: why a row was kept with an error, and why the
service saw fewer requests than lookups.

A gender lookup reads the row's country hint, a country-of-origin lookup the name alone: a row
whose hint breaks a rule (the demo's ``XX``) is an error in the gender table only. Gender goes
up to 100 queries a request; country of origin has no batch form, one name a request.

Example::

    >>> rule_of("invalid-country-code [country]: country must be a two-letter code ..., got 'XX'")
    'invalid-country-code [country]'
    >>> print("\\n".join(request_lines(requests=265, lookups=544, gender=286, origin=258)))
    Service requests in all: 265, answering 544 lookups (286 gender, 258 country of origin):
      country of origin: one name a request (the service has no batch form for it): 258 requests
      gender: up to 100 queries a request: 286 lookups in 3 requests at the least
      the other 4: credit checks (GET /v2/statistic), gender batches split smaller, retries
"""

from __future__ import annotations

import math

from airflow_provider_namelookup.contract import MAX_QUERIES_PER_REQUEST

WHY = {
    "mandatory-parameter-missing": "no first name at all (NULL): refused by both lookups",
    "parameter-first-name-invalid": "a first name empty, blank or over 50 characters: refused by both lookups",
    "invalid-country-code": "a country hint not in the country table (the demo's 'XX'): only the gender "
                            "lookup reads the hint, so the same rows are enriched by country of origin",
}
"""Why a row breaks each rule the demo's customers break, and which lookups refuse it."""


def rule_of(error: str) -> str:
    """The rule an error column names: its identifier and field, without the detail."""
    return error.split(":", 1)[0].strip()


def error_lines(counts: dict[str, dict[str, int]], tables: tuple[str, ...]) -> list[str]:
    """Rows kept with an error, counted by rule for each table, each rule with why it is broken,
    and what makes the tables' totals differ.

    :param counts: rows per rule per table, e.g. ``{"invalid-country-code [country]": {"customers_gender": 2}}``.
    :param tables: the tables, in the columns' order.

    >>> print("\\n".join(error_lines({"parameter-first-name-invalid [first_name]": {"g": 3, "o": 3},
    ...                               "invalid-country-code [country]": {"g": 2}}, ("g", "o"))))
      parameter-first-name-invalid [first_name]: g 3, o 3
        a first name empty, blank or over 50 characters: refused by both lookups
      invalid-country-code [country]: g 2, o 0
        a country hint not in the country table (the demo's 'XX'): only the gender lookup reads the hint, ...
      in all: g 5, o 3; they differ by the rows of invalid-country-code [country]
    """
    lines = []
    for rule, by_table in counts.items():
        lines.append(f"  {rule}: " + ", ".join(f"{table} {by_table.get(table, 0):,}" for table in tables))
        why = WHY.get(rule.split(" ", 1)[0])
        if why:
            lines.append(f"    {why}")
    totals = [sum(by_table.get(table, 0) for by_table in counts.values()) for table in tables]
    uneven = [rule for rule, by_table in counts.items() if len({by_table.get(table, 0) for table in tables}) > 1]
    if uneven:
        lines.append("  in all: " + ", ".join(f"{table} {total:,}" for table, total in zip(tables, totals, strict=True))
                     + f"; they differ by the rows of {' and '.join(uneven)}")
    return lines


def request_lines(*, requests: int, lookups: int, gender: int, origin: int) -> list[str]:
    """Why the service saw fewer requests than lookups: gender is batched, country of origin is not.

    :param requests: the service's requests of every kind.
    :param lookups: the queries it answered.
    :param gender: gender queries answered (one lookup each).
    :param origin: country-of-origin queries answered (one request each).
    """
    gender_requests = math.ceil(gender / MAX_QUERIES_PER_REQUEST)
    lines = [
        f"Service requests in all: {requests:,}, answering {lookups:,} lookups "
        f"({gender:,} gender, {origin:,} country of origin):",
        f"  country of origin: one name a request (the service has no batch form for it): {origin:,} requests",
        f"  gender: up to {MAX_QUERIES_PER_REQUEST} queries a request: {gender:,} lookups in "
        f"{gender_requests:,} request{'' if gender_requests == 1 else 's'} at the least",
    ]
    other = requests - origin - gender_requests
    if other > 0:
        lines.append(f"  the other {other:,}: credit checks (GET /v2/statistic), gender batches split smaller, "
                     "retries")
    return lines
