"""The result objects of the gender and country-of-origin lookups, made from the name data.

Which first name a query stands for:

* ``first_name``: the whole value (a compound such as ``"Hans-Jörg"`` that is not in the
  data falls back to its first part).
* ``full_name``: an e-mail address in ``full_name`` is read as an e-mail (the spec allows
  it for country of origin; the emulator does it everywhere). ``"Last, First ..."``
  (a comma) gives the first word after the comma as first name and the text before it as
  last name. Otherwise leading titles (``Dr.``, ``Mrs`` ...) are dropped, the first
  word is the first name (the first two when they form a known name, as in
  ``"Mary Ann Smith"``, given three words or more) and the rest is the last name,
  null when there is none.
* ``email``: the local part, digits removed, split on ``.``, ``_``, ``-`` and ``+``; the
  first piece is the first name and the last piece (of two or more) the last name; if
  only the last piece is a known first name the two swap (``miller.theresa``); a single
  piece that is not a known name is split after its longest known first-name prefix
  (``theresamiller`` → Theresa Miller).

Validation refuses a value from which no first name can be read (no letter in it, or in
an address's local part); should a split still find none, ``first_name`` is ``""`` (the
spec promises a string), never null.

Names are written back with a capital letter when sent all lower or all upper case;
a first name found in the data is written as the data spells it.

Example::

    >>> from namelookup_emulator.names import load_names
    >>> split_email("theresa.miller14@example.com", load_names())
    ('Theresa', 'Miller')
    >>> split_full_name("Miller, Theresa", load_names())
    ('Theresa', 'Miller')
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from namelookup_emulator.addresses import is_address
from namelookup_emulator.facts import GENDER_CREDITS, ORIGIN_CREDITS
from namelookup_emulator.geoip import country_for_ip
from namelookup_emulator.names import NameData, NameEntry, sanitize
from namelookup_emulator.origin import origin_of
from namelookup_emulator.rules import LookupQuery

TITLES = frozenset({
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "dame", "herr", "frau", "fr", "hr",
    "madame", "mme", "monsieur", "mlle", "sig", "sra", "sr", "dott",
})
"""Words dropped from the front of a full name (compared without a trailing dot)."""

_EMAIL_SEPARATORS = re.compile(r"[._+\-]+")
_DIGITS = re.compile(r"\d+")
_WORD_PARTS = re.compile(r"([\-'])")
_MIN_PREFIX = 3


def display(word: str) -> str:
    """Capitalise a name sent all lower or all upper case; leave mixed case alone.

    >>> display("o'neil-smith"), display("McDONALD")
    ("O'Neil-Smith", 'McDONALD')
    """
    if not (word.islower() or word.isupper()):
        return word
    return "".join(part[:1].upper() + part[1:].lower() for part in _WORD_PARTS.split(word))


def split_full_name(full_name: str, names: NameData) -> tuple[str | None, str | None]:
    """(first name, last name) of a full name; see the module's rules.

    :param full_name: a normalised full name (or an e-mail address).
    :param names: the name data, to recognise two-word first names.
    """
    if "@" in full_name and is_address(full_name):
        return split_email(full_name, names)
    if "," in full_name:
        before, _, after = full_name.partition(",")
        words, last = after.split(), before.strip() or None
        if not words:
            words, last = before.split(), None
            return _first_and_rest(words, names) if words else (None, None)
        return display(words[0]), display(last) if last else None
    return _first_and_rest(full_name.split(), names)


def _first_and_rest(words: list[str], names: NameData) -> tuple[str | None, str | None]:
    while len(words) > 1 and words[0].rstrip(".").lower() in TITLES:
        words = words[1:]
    if not words:
        return None, None
    take = 2 if len(words) >= 3 and f"{words[0]} {words[1]}" in names else 1
    first = " ".join(words[:take])
    rest = " ".join(words[take:])
    return display(first), display(rest) if rest else None


def split_email(address: str, names: NameData) -> tuple[str | None, str | None]:
    """(first name, last name) extracted from an e-mail address; see the module's rules.

    :param address: a valid e-mail address.
    :param names: the name data, to order and split the pieces.
    """
    local = _DIGITS.sub("", address.rsplit("@", 1)[0])
    pieces = [p for p in (sanitize(piece) for piece in _EMAIL_SEPARATORS.split(local)) if p]
    if not pieces:
        return None, None
    if len(pieces) == 1:
        word = pieces[0]
        if word not in names:
            for cut in range(len(word) - 2, _MIN_PREFIX - 1, -1):
                if word[:cut] in names:
                    return display(word[:cut]), display(word[cut:])
        return display(word), None
    first, last = pieces[0], pieces[-1]
    if first not in names and last in names:
        first, last = last, first
    return display(first), display(last)


def _hint_country(query: LookupQuery) -> str | None:
    """Precedence: ``country``, then the region of ``locale``, then the country of ``ip``."""
    return query.hint_country or country_for_ip(query.ip)


def _name_parts(query: LookupQuery, names: NameData) -> tuple[str | None, str | None]:
    if query.kind == "first_name":
        return query.name, None
    if query.kind == "full_name":
        return split_full_name(query.name, names)
    return split_email(query.name, names)


def _person(query: LookupQuery, names: NameData) -> tuple[NameEntry | None, str | None, str | None]:
    first, last = _name_parts(query, names)
    entry = names.find(first) if first else None
    if entry is not None:
        first = entry.name
    elif first is not None:
        first = display(first)
    return entry, first, last


def _details(query: LookupQuery, credits: int, samples: int, country: str | None,
             first: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"credits_used": credits, "samples": samples, "country": country,
                               "first_name_sanitized": sanitize(first) if first else ""}
    if query.kind == "full_name":
        details["full_name_sanitized"] = query.name.lower()
    elif query.kind == "email":
        details["email_sanitized"] = query.name.lower()
    details["duration"] = "0ms"
    return details


def _gender_result(query: LookupQuery, raw: Any, names: NameData,
                   credits: int) -> tuple[dict[str, Any], NameEntry | None]:
    entry, first, last = _person(query, names)
    stats = names.gender_of(entry, _hint_country(query)) if entry is not None else None
    result: dict[str, Any] = {
        "input": raw,
        "details": _details(query, credits, stats.samples if stats else 0,
                            stats.country if stats else None, first),
        "result_found": stats is not None and stats.gender != "unknown",
        "first_name": first or "",
    }
    if query.kind != "first_name":
        result["last_name"] = last
        result[query.kind] = query.name
    result["probability"] = stats.probability if stats else 0.0
    result["gender"] = stats.gender if stats else "unknown"
    return result, entry


def gender_result(query: LookupQuery, raw: Any, names: NameData, *,
                  credits: int = GENDER_CREDITS) -> dict[str, Any]:
    """The gender lookup result for one validated query.

    ``details.duration`` is a placeholder: the caller writes the request's real time.

    :param query: the validated query.
    :param raw: the query object as sent (echoed in ``input``).
    :param names: the name data.
    :param credits: the query's cost, for ``details.credits_used``.
    """
    return _gender_result(query, raw, names, credits)[0]


def origin_result(query: LookupQuery, raw: Any, names: NameData, *, base_url: str,
                  credits: int = ORIGIN_CREDITS) -> dict[str, Any]:
    """The country-of-origin result for one validated query (hints are not used).

    ``details.duration`` is a placeholder: the caller writes the request's real time.

    :param query: the validated query.
    :param raw: the query object as sent (echoed in ``input``).
    :param names: the name data.
    :param base_url: the emulator's base URL, for ``country_of_origin_map_url``.
    :param credits: the query's cost, for ``details.credits_used``.
    """
    result, entry = _gender_result(query.without_hints(), raw, names, credits)
    origin = origin_of(entry)
    key = sanitize(result["first_name"] or "")
    result["country_of_origin_map_url"] = f"{base_url.rstrip('/')}/emulator/map?name={quote(key)}"
    result["country_of_origin"] = [dict(record) for record in origin.countries]
    result["language_of_origin"] = origin.language
    result["meaning"] = None
    result["ethnicity"] = None if origin.ethnicity is None else {
        "id": origin.ethnicity["id"], "name": origin.ethnicity["name"],
        "distribution": [dict(item) for item in origin.ethnicity["distribution"]]}
    return result
