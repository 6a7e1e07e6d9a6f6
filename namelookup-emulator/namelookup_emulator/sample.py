"""Realistic customer rows for demos and benchmarks, drawn from the emulator's name data.

Names are drawn per country in proportion to how many people bear them there (the
data's real frequencies), so a table shows the heavy repetition of real customer
bases: a few names are very common, most are rare. A small share of rows is made
invalid on purpose (empty, overlong, a bad country code) to show how they are kept.

Example::

    >>> rows = list(customer_rows(1000, seed=7))
    >>> len(rows), len({name for _, name, _ in rows}) < 800
    (1000, True)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from functools import cache

from namelookup_emulator.names import load_names

COUNTRY_MIX: dict[str, float] = {
    "US": 0.22, "DE": 0.14, "GB": 0.10, "FR": 0.08, "IT": 0.08, "ES": 0.07, "PL": 0.06, "TR": 0.05,
    "NL": 0.05, "SE": 0.04, "IN": 0.04, "PT": 0.03, "GR": 0.02, "JP": 0.02,
}
"""Where the sample's customers live (shares of rows)."""

INVALID_NAMES = ("", "   ", "x" * 60, None, "Maria-Magdalena-Anna-Katharina-Theresia-Josephina-Louisa")


@cache
def _names_by_country(country: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Names borne in ``country`` and cumulative weights by their bearers there."""
    pairs = sorted(((entry.name, people) for entry in load_names().entries()
                    if (people := entry.bearers_by_country().get(country, 0.0)) > 0),
                   key=lambda pair: -pair[1])
    names = tuple(name for name, _ in pairs)
    return names, tuple(itertools.accumulate(people for _, people in pairs))


def customer_rows(count: int, *, seed: int = 0, invalid_share: float = 0.01, with_country: float = 0.7,
                  start_id: int = 1) -> Iterator[tuple[int, str | None, str | None]]:
    """Yield ``(customer_id, first_name, country)`` rows.

    :param count: rows to produce.
    :param seed: makes the table repeatable.
    :param invalid_share: share of rows given a name or country that breaks a rule.
    :param with_country: share of valid rows whose country column is filled.
    :param start_id: the first customer_id.
    """
    rng = random.Random(seed)
    countries = list(COUNTRY_MIX)
    country_weights = list(itertools.accumulate(COUNTRY_MIX.values()))
    for offset in range(count):
        country = rng.choices(countries, cum_weights=country_weights)[0]
        names, weights = _names_by_country(country)
        name: str | None = rng.choices(names, cum_weights=weights)[0]
        hint: str | None = country if rng.random() < with_country else None
        if rng.random() < invalid_share:
            if rng.random() < 0.8:
                name = rng.choice(INVALID_NAMES)
            else:
                hint = "XX"
        yield start_id + offset, name, hint
