"""First-name statistics from gender-guesser's ``nam_dict.txt``, read at run time.

The data (Jörg Michael's name dictionary, GFDL 1.2, shipped in the gender-guesser
package) is never copied into this repository: :func:`load_names` reads it from the
installed package with :mod:`importlib.resources`, once per process, and indexes it
into a dict so that a lookup is one dict access plus a few multiplications.

How the file's numbers become answers:

* A line holds a gender code and, per data column (a country or a group of
  countries), a frequency ``v`` from 1 to 13 on a log2 scale: about
  ``2 ** (v - 9)`` percent of that column's population bears the name.
* Bearers of a name in a column = that share × the column's population
  (:data:`DATA_COLUMNS`). Grouped columns (``east_frisia``, ``the_stans``,
  ``arabia/persia``, ``india/sri_lanka``) spread their bearers over their member
  countries in proportion to population. ``XK`` (Kosovo, absent from the spec's
  country table) counts for the all-country gender but belongs to no country;
  ``other`` has no population and is used only when a name has no other data.
* Each gender code splits a line's bearers into male and female by
  :data:`MALE_SHARE` (``M`` all male, ``?`` half and half, ...). With one ``M`` and
  one ``F`` line in a single-country column this is exactly
  ``p(male | country) = 2 ** v_m / (2 ** v_m + 2 ** v_f)``.
* ``samples`` is the estimated number of bearers divided by
  :data:`BEARERS_PER_SAMPLE` (the emulator's "records": one per hundred people),
  at least 1 for a name that is in the data.

Example::

    >>> names = load_names()
    >>> stats = names.gender("Andrea", "IT")
    >>> stats.gender, stats.probability, stats.country
    ('male', 1.0, 'IT')
    >>> names.gender("Andrea", "DE").gender
    'female'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.resources import files
from types import MappingProxyType
from typing import Literal

DATA_PACKAGE = "gender_guesser"
DATA_FILE = "data/nam_dict.txt"

BEARERS_PER_SAMPLE = 100
"""``details.samples`` = estimated bearers of the name / this."""

MALE_SHARE: Mapping[str, float] = MappingProxyType({
    "M": 1.0, "1M": 0.9, "?M": 0.7, "?": 0.5, "?F": 0.3, "1F": 0.1, "F": 0.0,
})
"""Gender code of a ``nam_dict.txt`` line → share of its bearers counted as male."""

Gender = Literal["male", "female", "unknown"]

# Population in millions (about 2023) of every country the data's columns name.
POPULATION_MILLIONS: Mapping[str, float] = MappingProxyType({
    "GB": 67.7, "IE": 5.2, "US": 334.9, "IT": 58.9, "MT": 0.54, "PT": 10.4, "ES": 48.4,
    "FR": 68.2, "BE": 11.8, "LU": 0.67, "NL": 17.9, "DE": 84.5, "AT": 9.1, "CH": 8.8,
    "IS": 0.39, "DK": 5.9, "NO": 5.5, "SE": 10.5, "FI": 5.6, "EE": 1.37, "LV": 1.88,
    "LT": 2.87, "PL": 36.7, "CZ": 10.9, "SK": 5.4, "HU": 9.6, "RO": 19.0, "BG": 6.4,
    "BA": 3.2, "HR": 3.9, "MK": 1.8, "ME": 0.62, "RS": 6.6, "SI": 2.1, "AL": 2.7,
    "GR": 10.4, "RU": 144.0, "BY": 9.2, "MD": 2.5, "UA": 37.0, "AM": 2.8, "AZ": 10.1,
    "GE": 3.7, "KZ": 19.9, "KG": 7.1, "TJ": 10.1, "TM": 6.5, "UZ": 35.6, "TR": 85.3,
    "SA": 36.9, "IR": 89.2, "IQ": 45.5, "YE": 34.4, "SY": 23.2, "JO": 11.3, "AE": 9.5,
    "LB": 5.4, "PS": 5.2, "OM": 4.6, "KW": 4.3, "QA": 2.7, "BH": 1.5, "EG": 112.7,
    "DZ": 45.6, "SD": 48.1, "MA": 37.8, "TN": 12.5, "LY": 6.9, "IL": 9.8, "CN": 1410.0,
    "IN": 1428.6, "LK": 22.0, "JP": 124.5, "KR": 51.7, "VN": 98.9,
})

# The 55 columns of nam_dict.txt in file order; a plain code is a one-country column.
_COLUMN_LABELS: tuple[str, ...] = (
    "GB", "IE", "US", "IT", "MT", "PT", "ES", "FR", "BE", "LU", "NL", "east_frisia", "DE",
    "AT", "CH", "IS", "DK", "NO", "SE", "FI", "EE", "LV", "LT", "PL", "CZ", "SK", "HU", "RO",
    "BG", "BA", "HR", "XK", "MK", "ME", "RS", "SI", "AL", "GR", "RU", "BY", "MD", "UA", "AM",
    "AZ", "GE", "the_stans", "TR", "arabia/persia", "IL", "CN", "india/sri_lanka", "JP", "KR",
    "VN", "other",
)
# Grouped columns: (their own population in millions or None for "the members' sum", members).
_GROUPS: Mapping[str, tuple[float | None, tuple[str, ...]]] = MappingProxyType({
    "east_frisia": (0.47, ("DE",)),
    "the_stans": (None, ("KZ", "KG", "TJ", "TM", "UZ")),
    "arabia/persia": (None, ("SA", "IR", "IQ", "YE", "SY", "JO", "AE", "LB", "PS", "OM", "KW",
                             "QA", "BH", "EG", "DZ", "SD", "MA", "TN", "LY")),
    "india/sri_lanka": (None, ("IN", "LK")),
    "XK": (1.8, ()),
    "other": (0.0, ()),
})
_FIRST_VALUE_COLUMN = 30
_SORT_MARK_COLUMN = 29


@dataclass(frozen=True, slots=True)
class DataColumn:
    """One frequency column of ``nam_dict.txt``.

    :param label: a country code or a group name (``the_stans``).
    :param population: people the column covers, in millions.
    :param members: (country code, people of this column living in it, in millions).
    """

    label: str
    population: float
    members: tuple[tuple[str, float], ...]


def _build_columns() -> tuple[DataColumn, ...]:
    columns = []
    for label in _COLUMN_LABELS:
        own, members = _GROUPS.get(label, (None, (label,)))
        member_total = sum(POPULATION_MILLIONS[code] for code in members)
        population = own if own is not None else member_total
        columns.append(DataColumn(label, population, tuple(
            (code, population * POPULATION_MILLIONS[code] / member_total) for code in members)))
    return tuple(columns)


DATA_COLUMNS: tuple[DataColumn, ...] = _build_columns()
"""The file's 55 columns with their populations and member countries."""
OTHER_COLUMN = _COLUMN_LABELS.index("other")

_COUNTRY_WEIGHTS: Mapping[str, Mapping[int, float]] = MappingProxyType({
    code: MappingProxyType({index: people for index, column in enumerate(DATA_COLUMNS)
                            for member, people in column.members if member == code})
    for code in POPULATION_MILLIONS
})
"""Country code → {column index: people of that column living in the country (millions)}."""

# Bearers (in people) per million people for a frequency value 1..13: 2 ** (v - 9) percent.
_BEARERS_PER_MILLION: tuple[float, ...] = tuple(
    0.0 if v == 0 else 1e6 * 2.0 ** (v - 9) / 100 for v in range(14))


@dataclass(frozen=True, slots=True)
class NameEntry:
    """Everything the data says about one spelling of a first name.

    :param name: the spelling as the data writes it (``"Andrea"``).
    :param lines: per data line, (male share of its code, ((column index, frequency), ...)).
    :param male: estimated male bearers over all countries.
    :param bearers: estimated bearers over all countries.
    :param fallback_male_share: the male share from the ``other`` column, for names with
        no other data (else None).
    """

    name: str
    lines: tuple[tuple[float, tuple[tuple[int, int], ...]], ...]
    male: float
    bearers: float
    fallback_male_share: float | None

    def bearers_by_country(self) -> dict[str, float]:
        """Estimated bearers per country code (grouped columns spread over their members)."""
        people: dict[str, float] = {}
        for _, values in self.lines:
            for column, value in values:
                for code, millions in DATA_COLUMNS[column].members:
                    people[code] = people.get(code, 0.0) + millions * _BEARERS_PER_MILLION[value]
        return people


@dataclass(frozen=True, slots=True)
class GenderStats:
    """The gender answer for one first name.

    :param found: whether the name is in the data.
    :param name: the data's spelling when found, else None.
    :param gender: ``male``, ``female`` or ``unknown`` (not found, or an exact tie).
    :param probability: reliability of ``gender``, 0.5 to 1; 0 when the name is not found.
    :param samples: estimated bearers / :data:`BEARERS_PER_SAMPLE`; 0 when not found.
    :param country: the hint country whose data localised the answer, else None.
    """

    found: bool
    name: str | None
    gender: Gender
    probability: float
    samples: int
    country: str | None


NOT_FOUND = GenderStats(False, None, "unknown", 0.0, 0, None)


@functools.cache
def _bearers(line_values: tuple[tuple[int, int], ...]) -> float:
    return sum(DATA_COLUMNS[c].population * _BEARERS_PER_MILLION[v] for c, v in line_values)


def _make_entry(name: str, lines: list[tuple[float, tuple[tuple[int, int], ...]]]) -> NameEntry:
    male = bearers = 0.0
    other_male = other_total = 0.0
    for share, values in lines:
        people = _bearers(values)
        male += share * people
        bearers += people
        for column, value in values:
            if column == OTHER_COLUMN:
                other_male += share * 2.0 ** value
                other_total += 2.0 ** value
    fallback = other_male / other_total if bearers == 0 and other_total else None
    return NameEntry(name, tuple(lines), male, bearers, fallback)


_FREQUENCY = re.compile(r"[1-9A-D]")
_KEPT_PUNCTUATION = frozenset("-'")
_SPACES = re.compile(r"\s+")


def sanitize(name: str) -> str:
    """The lower-case form used as a key: letters, marks, spaces, hyphens and apostrophes.

    >>> sanitize("  O'Neil-Smith3 ")
    "o'neil-smith"
    """
    text = unicodedata.normalize("NFC", name)
    if text.isalpha():  # most names: nothing to leave out, no space to fold
        return text.lower()
    kept = "".join(ch for ch in text if ch.isalpha() or ch in _KEPT_PUNCTUATION or ch.isspace()
                   or unicodedata.category(ch).startswith("M"))
    return _SPACES.sub(" ", kept).strip().lower()


def _variants(spelling: str) -> set[str]:
    """A ``+`` in the data stands for a hyphen, a space or nothing (``Jun+Wei``)."""
    if "+" not in spelling:
        return {spelling}
    parts = spelling.split("+")
    return {"-".join(parts), " ".join(parts), parts[0] + "".join(p.lower() for p in parts[1:])}


class NameData:
    """The parsed dictionary: a dict from lower-case spelling to :class:`NameEntry`.

    Build it with :func:`load_names` (cached) rather than directly.

    :param text: the whole content of ``nam_dict.txt``.
    """

    def __init__(self, text: str) -> None:
        raw: dict[str, tuple[str, list[tuple[float, tuple[tuple[int, int], ...]]]]] = {}
        parsed: dict[str, tuple[tuple[int, int], ...]] = {}  # many lines share one frequency pattern
        for line in text.splitlines():
            if len(line) <= _FIRST_VALUE_COLUMN or line[0] in "#=" or line[_SORT_MARK_COLUMN] == "+":
                continue
            share = MALE_SHARE.get(line[:2].strip())
            if share is None:
                continue
            spelling = line[3:_SORT_MARK_COLUMN].strip()
            segment = line[_FIRST_VALUE_COLUMN:_FIRST_VALUE_COLUMN + len(DATA_COLUMNS)]
            values = parsed.get(segment)
            if values is None:
                values = parsed[segment] = tuple(
                    (m.start(), int(m.group(), 16)) for m in _FREQUENCY.finditer(segment))
            variants = _variants(spelling)
            for variant in variants:
                slot = raw.setdefault(variant.lower(), (variant, []))
                slot[1].append((share, values))
        self._entries: dict[str, NameEntry] = {
            key: _make_entry(spelling, lines) for key, (spelling, lines) in raw.items()}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and sanitize(name) in self._entries

    def entries(self) -> Iterator[NameEntry]:
        """Every entry once (spelling variants of a name share one entry)."""
        seen: set[int] = set()
        for entry in self._entries.values():
            if id(entry) not in seen:
                seen.add(id(entry))
                yield entry

    def find(self, name: str) -> NameEntry | None:
        """The entry for a first name, any case; a compound not in the data falls back to
        its first part (``"Hans-Jörg"`` → ``"Hans"`` when only that is known).

        :param name: a first name as given by the caller.
        """
        key = sanitize(name)
        entry = self._entries.get(key)
        if entry is None and key:
            first = re.split(r"[\s\-]", key, maxsplit=1)[0]
            if first != key:
                entry = self._entries.get(first)
        return entry

    def gender(self, name: str, country: str | None = None) -> GenderStats:
        """Gender, probability and samples for a first name, localised to ``country`` when
        the data has that country (or a group holding it) for the name.

        :param name: a first name (any case).
        :param country: a hint country code, or None for the all-country answer.
        """
        entry = self.find(name)
        if entry is None:
            return NOT_FOUND
        return self.gender_of(entry, country)

    @staticmethod
    def gender_of(entry: NameEntry, country: str | None = None) -> GenderStats:
        """:meth:`gender` for an entry already found."""
        weights = _COUNTRY_WEIGHTS.get(country) if country else None
        if weights:
            male = bearers = 0.0
            for share, values in entry.lines:
                for column, value in values:
                    millions = weights.get(column)
                    if millions is not None:
                        people = millions * _BEARERS_PER_MILLION[value]
                        male += share * people
                        bearers += people
            if bearers > 0:
                return _stats(entry, male / bearers, bearers, country)
        if entry.bearers > 0:
            return _stats(entry, entry.male / entry.bearers, entry.bearers, None)
        return _stats(entry, entry.fallback_male_share if entry.fallback_male_share is not None else 0.5,
                      0.0, None)


def _stats(entry: NameEntry, p_male: float, bearers: float, country: str | None) -> GenderStats:
    gender: Gender = "male" if p_male > 0.5 else "female" if p_male < 0.5 else "unknown"
    probability = round(max(p_male, 1.0 - p_male), 2)
    samples = max(1, round(bearers / BEARERS_PER_SAMPLE))
    return GenderStats(True, entry.name, gender, probability, samples, country)


@functools.cache
def load_names() -> NameData:
    """Read and index ``nam_dict.txt`` from the installed gender-guesser package (once).

    :raises ModuleNotFoundError: when gender-guesser is not installed
        (it is a dependency of ``namelookup-emulator``: reinstall that, e.g. ``pip install ./namelookup-emulator``).
    """
    text = (files(DATA_PACKAGE) / DATA_FILE).read_text(encoding="utf-8")
    return NameData(text)
