"""The spec's reference tables: countries (with their regions) and ethnic groups.

The tables are read from ``service_facts.json`` (:mod:`~airflow_provider_namelookup.facts`),
the one copy the provider and the emulator share.

Example::

    >>> from airflow_provider_namelookup.countries import COUNTRIES, ETHNIC_GROUPS
    >>> COUNTRIES["DE"].name, COUNTRIES["DE"].statistical_region
    ('Germany', 'Western Europe')
    >>> ETHNIC_GROUPS["GERMANIC"]
    'Germanic (German, Austrian, Swiss)'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from airflow_provider_namelookup.facts import PUBLISHED


@dataclass(frozen=True)
class Country:
    """One row of the spec's country table: a code, its English name, and the two regions the
    service names in a ``country_of_origin`` element (statistical, such as Western Europe, and continental)."""

    code: str
    name: str
    statistical_region: str
    continental_region: str



def _build_countries() -> Mapping[str, Country]:
    return MappingProxyType({
        code: Country(code, name, region["statistical_region"], region["continental_region"])
        for region in PUBLISHED["countries"] for code, name in region["countries"].items()})


COUNTRIES: Mapping[str, Country] = _build_countries()
"""Country code → :class:`Country`, exactly the spec's table ("AustraliaandNew Zealand" is
spelled as the spec publishes it)."""

ETHNIC_GROUPS: Mapping[str, str] = MappingProxyType(dict(PUBLISHED["ethnic_groups"]))
"""Ethnic-group id → name, exactly the spec's table (the ``ethnicity`` object's values)."""
