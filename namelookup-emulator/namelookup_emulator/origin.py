"""Country of origin, language of origin and ethnicity of a first name.

All three come from one distribution: the estimated bearers of the name per country
(:meth:`~namelookup_emulator.names.NameEntry.bearers_by_country`, i.e.
the data's per-country frequencies weighted by population), normalised to 1.

* ``country_of_origin``: the 25 leading countries, probability descending, each with
  the regions of the spec's country table.
* ``language_of_origin``: the language of the leading country (:data:`LANGUAGES`).
* ``ethnicity``: the distribution pushed through :data:`ETHNIC_SHARES` (country → its
  main groups of the spec's ethnic-group table, with their shares of the population),
  as percentages; ``id``/``name`` are the leading group's.
* ``meaning``: no open source of name meanings was found, so the emulator answers null
  rather than invent one.

Example::

    >>> from namelookup_emulator.names import load_names
    >>> origin = origin_of(load_names().find("Giuseppe"))
    >>> origin.countries[0]["country"], origin.language, origin.ethnicity["id"]
    ('IT', 'Italian', 'ITALIAN')
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from namelookup_emulator.facts import COUNTRIES, COUNTRY_OF_ORIGIN_RECORDS, ETHNIC_GROUPS
from namelookup_emulator.names import POPULATION_MILLIONS, NameEntry

MAX_COUNTRIES = COUNTRY_OF_ORIGIN_RECORDS
"""Records in ``country_of_origin``, as the spec says (25)."""

LANGUAGES: Mapping[str, str] = MappingProxyType({
    "GB": "English", "IE": "English", "US": "English", "IT": "Italian", "MT": "Maltese",
    "PT": "Portuguese", "ES": "Spanish", "FR": "French", "BE": "Dutch", "LU": "Luxembourgish",
    "NL": "Dutch", "DE": "German", "AT": "German", "CH": "German", "IS": "Icelandic",
    "DK": "Danish", "NO": "Norwegian", "SE": "Swedish", "FI": "Finnish", "EE": "Estonian",
    "LV": "Latvian", "LT": "Lithuanian", "PL": "Polish", "CZ": "Czech", "SK": "Slovak",
    "HU": "Hungarian", "RO": "Romanian", "BG": "Bulgarian", "BA": "Bosnian", "HR": "Croatian",
    "MK": "Macedonian", "ME": "Montenegrin", "RS": "Serbian", "SI": "Slovenian",
    "AL": "Albanian", "GR": "Greek", "RU": "Russian", "BY": "Belarusian", "MD": "Romanian",
    "UA": "Ukrainian", "AM": "Armenian", "AZ": "Azerbaijani", "GE": "Georgian",
    "KZ": "Kazakh", "KG": "Kyrgyz", "TJ": "Tajik", "TM": "Turkmen", "UZ": "Uzbek",
    "TR": "Turkish", "SA": "Arabic", "IR": "Persian", "IQ": "Arabic", "YE": "Arabic",
    "SY": "Arabic", "JO": "Arabic", "AE": "Arabic", "LB": "Arabic", "PS": "Arabic",
    "OM": "Arabic", "KW": "Arabic", "QA": "Arabic", "BH": "Arabic", "EG": "Arabic",
    "DZ": "Arabic", "SD": "Arabic", "MA": "Arabic", "TN": "Arabic", "LY": "Arabic",
    "IL": "Hebrew", "CN": "Chinese", "IN": "Hindi", "LK": "Sinhala", "JP": "Japanese",
    "KR": "Korean", "VN": "Vietnamese",
})
"""Country code → main language, for every country the name data covers."""

_ARAB = (("ARAB", 1.0),)
ETHNIC_SHARES: Mapping[str, tuple[tuple[str, float], ...]] = MappingProxyType({
    "GB": (("ENGLISH", 0.84), ("SCOTTISH", 0.08), ("WELSH", 0.05), ("IRISH", 0.03)),
    "IE": (("IRISH", 1.0),), "US": (("ENGLISH", 1.0),), "IT": (("ITALIAN", 1.0),),
    "MT": (("ITALIAN", 1.0),), "PT": (("PORTUGUESE", 1.0),), "ES": (("SPANISH", 1.0),),
    "FR": (("FRENCH", 1.0),), "BE": (("DUTCH", 0.6), ("FRENCH", 0.4)),
    "LU": (("GERMANIC", 1.0),), "NL": (("DUTCH", 1.0),), "DE": (("GERMANIC", 1.0),),
    "AT": (("GERMANIC", 1.0),), "CH": (("GERMANIC", 0.67), ("FRENCH", 0.24), ("ITALIAN", 0.09)),
    "IS": (("ICELANDIC", 1.0),), "DK": (("SCANDINAVIAN", 1.0),), "NO": (("SCANDINAVIAN", 1.0),),
    "SE": (("SCANDINAVIAN", 1.0),), "FI": (("SCANDINAVIAN", 1.0),), "EE": (("ESTONIAN", 1.0),),
    "LV": (("LATVIAN", 1.0),), "LT": (("LITHUANIAN", 1.0),), "PL": (("POLISH", 1.0),),
    "CZ": (("CZECH", 1.0),), "SK": (("SLOVAK", 1.0),), "HU": (("HUNGARIAN", 1.0),),
    "RO": (("ROMANIAN", 1.0),), "BG": (("BULGARIAN", 1.0),), "BA": (("BOSNIAN", 1.0),),
    "HR": (("CROATIAN", 1.0),), "MK": (("MACEDONIAN", 1.0),), "ME": (("SERBIAN", 1.0),),
    "RS": (("SERBIAN", 1.0),), "SI": (("SLOVENIAN", 1.0),), "AL": (("ALBANIAN", 1.0),),
    "GR": (("GREEK", 1.0),), "RU": (("RUSSIAN", 1.0),), "BY": (("BELARUSIAN", 1.0),),
    "MD": (("ROMANIAN", 1.0),), "UA": (("UKRAINIAN", 1.0),), "AM": (("ARMENIAN", 1.0),),
    "AZ": (("TURKISH", 1.0),), "GE": (("GEORGIAN", 1.0),),
    "KZ": (("TURKISH", 0.8), ("RUSSIAN", 0.2)), "KG": (("TURKISH", 1.0),),
    "TJ": (("PERSIAN", 1.0),), "TM": (("TURKISH", 1.0),), "UZ": (("TURKISH", 1.0),),
    "TR": (("TURKISH", 0.8), ("KURDISH", 0.2)), "IR": (("PERSIAN", 0.9), ("KURDISH", 0.1)),
    "IQ": (("ARAB", 0.8), ("KURDISH", 0.2)), "SA": _ARAB, "YE": _ARAB, "SY": _ARAB,
    "JO": _ARAB, "AE": _ARAB, "LB": _ARAB, "PS": _ARAB, "OM": _ARAB, "KW": _ARAB, "QA": _ARAB,
    "BH": _ARAB, "EG": _ARAB, "DZ": _ARAB, "SD": _ARAB, "MA": _ARAB, "TN": _ARAB, "LY": _ARAB,
    "IL": (("HEBREW", 0.78), ("ARAB", 0.22)), "CN": (("CHINESE", 1.0),),
    "IN": (("INDIAN", 1.0),), "LK": (("SRI_LANKAN", 1.0),), "JP": (("JAPANESE", 1.0),),
    "KR": (("KOREAN", 1.0),), "VN": (("VIETNAMESE", 1.0),),
})
"""Country code → its main ethnic groups (ids of the spec's table) and their population shares.

Where the spec's table has no group of its own for a people, the nearest one is used:
Maltese → ITALIAN, Montenegrin → SERBIAN, the Turkic peoples of Central Asia and
Azerbaijan → TURKISH, Tajik → PERSIAN; the United States → ENGLISH (by language)."""

assert set(LANGUAGES) == set(POPULATION_MILLIONS) == set(ETHNIC_SHARES)
assert all(group in ETHNIC_GROUPS for shares in ETHNIC_SHARES.values() for group, _ in shares)
assert set(POPULATION_MILLIONS) <= set(COUNTRIES)


@dataclass(frozen=True)
class Origin:
    """The origin part of a country-of-origin answer.

    :param countries: ``country_of_origin`` records, probability descending (at most 25).
    :param language: ``language_of_origin``, or None when the name has no country data.
    :param ethnicity: ``{"id", "name", "distribution": [{"id", "name", "percentage"}]}``,
        or None when the name has no country data.
    """

    countries: list[dict[str, Any]] = field(default_factory=list)
    language: str | None = None
    ethnicity: dict[str, Any] | None = None


NO_ORIGIN = Origin()


@functools.lru_cache(maxsize=8192)
def origin_of(entry: NameEntry | None) -> Origin:
    """Derive the :class:`Origin` of a name from its per-country bearers (cached per name).

    The returned object is shared between calls: copy it before changing it.

    :param entry: the name's data entry, or None for a name not in the data.
    """
    if entry is None:
        return NO_ORIGIN
    people = entry.bearers_by_country()
    total = sum(people.values())
    if total <= 0:
        return NO_ORIGIN
    ranked = sorted(people.items(), key=lambda item: (-item[1], item[0]))
    countries = [COUNTRIES[code].origin_record(round(count / total, 4))
                 for code, count in ranked[:MAX_COUNTRIES]]
    groups: dict[str, float] = {}
    for code, count in people.items():
        for group, share in ETHNIC_SHARES[code]:
            groups[group] = groups.get(group, 0.0) + share * count / total
    distribution = [{"id": group, "name": ETHNIC_GROUPS[group], "percentage": round(100 * share, 2)}
                    for group, share in sorted(groups.items(), key=lambda item: (-item[1], item[0]))
                    if round(100 * share, 2) > 0]
    ethnicity = {"id": distribution[0]["id"], "name": distribution[0]["name"],
                 "distribution": distribution}
    return Origin(countries, LANGUAGES[ranked[0][0]], ethnicity)
