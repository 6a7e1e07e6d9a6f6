"""The name distributions the benchmarks enrich: how many distinct names a table holds, and how often each comes.

Two kinds, both drawn from the emulator's own name data by how many people bear each name:

- ``sample``: :func:`~namelookup_emulator.sample.customer_rows`, each row's name drawn in its
  country by frequency (so a few names repeat very often, most are rare; 1,000,000 rows hold
  about 56,000 distinct queries), about 70 % of rows with a country hint and 1 % invalid on
  purpose;
- ``first``: first names only, no hint: each row's name drawn by how many people bear it in every
  country of the data, the country column left empty (1,000,000 rows hold about 43,000 distinct
  queries: the distinct names);
- ``share5``, ``share35``: a set share of distinct names (5 % or 35 % of the rows): that many
  names drawn by frequency (bearers in every country of the data) without replacement, each
  once, and the other rows drawn among them by frequency; each name always with the country
  that bears it most (so distinct names are distinct queries).

Example::

    >>> rows = list(customer_rows_of("share35", 1_000, seed=3))
    >>> len(rows), len({name for _, name, _ in rows})
    (1000, 350)
    >>> sorted(DISTRIBUTIONS)
    ['first', 'sample', 'share35', 'share5']
    >>> {country for _, _, country in customer_rows_of("first", 1_000, seed=3)}
    {None}
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

from namelookup_emulator.names import load_names
from namelookup_emulator.sample import customer_rows

DISTRIBUTIONS: dict[str, float | None] = {"sample": None, "first": None, "share5": 0.05, "share35": 0.35}
"""A distribution's share of distinct names (None: the sample's own mix, or first names only)."""


@cache
def _names_by_frequency() -> tuple[tuple[tuple[str, str], ...], tuple[float, ...]]:
    """Every name of the data with the country that bears it most, and its bearers (all countries)."""
    weighted = []
    for entry in load_names().entries():
        borne = {country: people for country, people in entry.bearers_by_country().items() if people > 0}
        if borne:
            weighted.append(((entry.name, max(sorted(borne), key=borne.__getitem__)), sum(borne.values())))
    weighted.sort(key=lambda pair: (-pair[1], pair[0]))
    return tuple(name for name, _ in weighted), tuple(weight for _, weight in weighted)


def _draw_distinct(rng: random.Random, count: int) -> tuple[list[tuple[str, str]], list[float]]:
    """``count`` different names drawn by frequency without replacement (Efraimidis and Spirakis:
    the ``count`` largest ``u ** (1 / weight)``), with their weights."""
    names, weights = _names_by_frequency()
    if count > len(names):
        raise ValueError(f"the name data holds {len(names)} names, fewer than the {count} asked for")
    keys = sorted(range(len(names)), key=lambda i: rng.random() ** (1.0 / weights[i]), reverse=True)[:count]
    return [names[i] for i in keys], [weights[i] for i in keys]


def share_rows(count: int, share: float, *, seed: int) -> Iterator[tuple[int, str, str]]:
    """``(customer_id, first_name, country)`` rows holding ``round(count * share)`` distinct names."""
    rng = random.Random(seed)
    distinct, weights = _draw_distinct(rng, max(1, round(count * share)))
    rows = distinct + rng.choices(distinct, weights=weights, k=count - len(distinct))
    rng.shuffle(rows)
    for key, (name, country) in enumerate(rows, start=1):
        yield key, name, country


def first_name_rows(count: int, *, seed: int) -> Iterator[tuple[int, str, None]]:
    """``(customer_id, first_name, None)`` rows: names drawn by their bearers in every country, no hint."""
    rng = random.Random(seed)
    names, weights = _names_by_frequency()
    drawn = rng.choices(names, cum_weights=list(itertools.accumulate(weights)), k=count)
    for key, (name, _) in enumerate(drawn, start=1):
        yield key, name, None


def customer_rows_of(distribution: str, count: int, *, seed: int) -> Iterator[tuple[Any, ...]]:
    """The rows of ``distribution`` (see the module's docstring)."""
    share = DISTRIBUTIONS[distribution]
    if distribution == "first":
        return first_name_rows(count, seed=seed)
    if share is None:
        return customer_rows(count, seed=seed)
    return share_rows(count, share, seed=seed)
