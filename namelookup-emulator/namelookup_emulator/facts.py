"""The service's published tables and numbers, as the emulator reads them.

They come from ``service_facts.json``, shipped in this package: the spec's country and
ethnic-group tables and the numbers it publishes (name lengths, credits per query, the
free monthly allowance, the 100-query batch of the wire notes). It is the same file the
provider reads (one copy in the repository); the emulator shares that data with the
client and nothing else, so its reading of the rules is its own.

Example::

    >>> COUNTRIES["DE"].name, COUNTRIES["DE"].statistical_region
    ('Germany', 'Western Europe')
    >>> NAME_LENGTHS["email"], GENDER_CREDITS, ORIGIN_CREDITS
    ((3, 100), 1, 2)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from types import MappingProxyType
from typing import Any

_PUBLISHED: dict[str, Any] = json.loads((files(__package__) / "service_facts.json").read_text(encoding="utf-8"))
_NUMBERS: dict[str, Any] = _PUBLISHED["numbers"]


@dataclass(frozen=True)
class Country:
    """One row of the spec's country table."""

    code: str
    name: str
    statistical_region: str
    continental_region: str

    def origin_record(self, probability: float) -> dict[str, Any]:
        """This country as an element of ``country_of_origin``."""
        return {"country_name": self.name, "country": self.code, "probability": probability,
                "continental_region": self.continental_region, "statistical_region": self.statistical_region}


COUNTRIES: Mapping[str, Country] = MappingProxyType({
    code: Country(code, name, region["statistical_region"], region["continental_region"])
    for region in _PUBLISHED["countries"] for code, name in region["countries"].items()})
"""Country code → :class:`Country`: the spec's table."""

GENDER_PATHS: Mapping[str, str | None] = MappingProxyType(dict(_PUBLISHED["gender_paths"]))
"""Gender endpoint path (``/v2/gender`` and its aliases) → the name field it reads (None: the first set one)."""

ETHNIC_GROUPS: Mapping[str, str] = MappingProxyType(dict(_PUBLISHED["ethnic_groups"]))
"""Ethnic-group id → name: the spec's table."""

NAME_LENGTHS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {field: (low, high) for field, (low, high) in _NUMBERS["name_length"].items()})
"""Name field → (fewest, most) characters."""
ID_STRING_MAX_LENGTH: int = _NUMBERS["id_string_max_length"]
QUERIES_PER_REQUEST: int = _NUMBERS["queries_per_request"]
LOOKUPS_PER_KEY_REQUEST: int = _NUMBERS["lookups_per_key_request"]
FREE_REQUESTS_PER_MONTH: int = _NUMBERS["free_requests_per_month"]
GENDER_CREDITS: int = _NUMBERS["credits_per_query"]["gender"]
ORIGIN_CREDITS: int = _NUMBERS["credits_per_query"]["country_of_origin"]
COUNTRY_OF_ORIGIN_RECORDS: int = _NUMBERS["country_of_origin_records"]
