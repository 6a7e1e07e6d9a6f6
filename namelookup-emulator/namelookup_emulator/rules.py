"""The emulator's reading of the request rules: which queries and sign-ups it answers, and
the status identifier of each refusal.

Written from the spec (``name-lookup-api-v2.md``: "Endpoints", "Errors", "Limits") and
the wire notes ("Hints"), and, where both are silent, from the decisions the provider's docs
state (docs/input-rules.md); never from the provider's code, which it exists to check.
Each query object is read in this order; the first broken rule answers:

1. A query is a JSON object; anything else sets no name field
   (``mandatory-parameter-missing``).
2. The name field: the first of ``first_name``, ``full_name``, ``email`` that is set (not
   absent, not null); an alias endpoint (``/v2/gender/by-full-name``) reads only its own.
   None set: ``mandatory-parameter-missing``. The value must be a string without control
   characters other than white space (Unicode ``Cc`` outside ``White_Space``: NUL,
   ``\\x1c``, ...) and without lone surrogates. It is NFC-normalised, runs of Unicode
   white space become one space and the ends are trimmed; then ``first_name`` has 1-50
   characters, ``full_name`` 1-100, ``email`` 3-100 and is an address
   (:mod:`.addresses`); and it holds a letter (in an address, before the ``@``), else no
   first name can be read from it. Each failure is the field's ``parameter-*-invalid``.
3. Hints (gender lookups only; country of origin takes none): a hint that is absent, null
   or only white space is not given. ``country``: a code of the spec's country table,
   any case of its ASCII letters (``invalid-country-code``); ``locale``: ``xx_YY`` or
   ``xx-YY``, ASCII letters, the region a code of the table (``invalid-locale``);
   ``ip``: an IPv4 or IPv6 address, without a zone index such as ``%eth0``
   (``invalid-ip-address``). Every given hint is checked, in that order.
4. ``id``: a JSON integer (not ``true``/``false``, not ``1.0``) from -2^63 to 2^63-1, or
   a string of at most 50 characters (``invalid-id``).

A sign-up (:func:`read_signup`): ``email`` a string that is an address of at most 254
octets (RFC 5321; the 3-100 characters of the limits table are the lookups'), else
``email-invalid``; ``accept_terms`` exactly ``true`` (``terms-not-accepted``);
``newsletter`` absent, null or a boolean (``generic-error``); ``locale`` absent, null
or "a short language code" (the spec): two ASCII letters, any case (``invalid-locale``).
The wire notes' account languages ``en``, ``de``, ``es`` are the ones the service writes
in; the spec takes any code, and it is the contract.

Example::

    >>> read_query({"full_name": "  Theresa   Miller ", "country": "de", "id": 7})
    LookupQuery(kind='full_name', name='Theresa Miller', country='DE', locale=None, ip=None, id=7)
    >>> read_query({"first_name": "x" * 51})
    Traceback (most recent call last):
    ...
    namelookup_emulator.statuses.Refusal: parameter-first-name-invalid [first_name]: first_name must be ...
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from namelookup_emulator.addresses import is_address
from namelookup_emulator.facts import COUNTRIES, ID_STRING_MAX_LENGTH, NAME_LENGTHS
from namelookup_emulator.statuses import Refusal

NAME_FIELDS: tuple[str, ...] = ("first_name", "full_name", "email")
"""The name fields in the order a query's field is chosen."""
HINT_FIELDS: tuple[str, ...] = ("country", "locale", "ip")
NAME_STATUS: Mapping[str, str] = {"first_name": "parameter-first-name-invalid",
                                  "full_name": "parameter-full-name-invalid",
                                  "email": "parameter-email-invalid"}
ID_RANGE = (-(2**63), 2**63 - 1)
SIGNUP_EMAIL_MAX_OCTETS = 254

WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                        + "".join(chr(c) for c in range(0x2000, 0x200B)))
"""Unicode's ``White_Space`` property (PropList.txt), every character of it."""
_WHITE_SPACE_CHARS = "".join(sorted(WHITE_SPACE))
_WHITE_RUN = re.compile("[" + re.escape(_WHITE_SPACE_CHARS) + "]+")
_LOCALE = re.compile(r"([A-Za-z]{2})[_-]([A-Za-z]{2})", re.ASCII)
_LANGUAGE = re.compile(r"[A-Za-z]{2}", re.ASCII)


class OversizedInteger(str):
    """A JSON integer of more digits than the body reader turns into a number, kept as its
    digits (:func:`~.bodies.parse_body`); never a valid ``id`` or name."""


@dataclass(frozen=True)
class LookupQuery:
    """One query as the emulator read it.

    :param kind: the name field used.
    :param name: its normalised value.
    :param country: an upper-case code of the country table, or None.
    :param locale: ``xx_YY``, or None.
    :param ip: the address's canonical text, or None.
    :param id: the caller's id, or None.
    """

    kind: str
    name: str
    country: str | None = None
    locale: str | None = None
    ip: str | None = None
    id: int | str | None = None

    @property
    def hint_country(self) -> str | None:
        """``country``, else the locale's region (the IP's country needs :mod:`.geoip`)."""
        return self.country or (self.locale[-2:] if self.locale else None)

    def without_hints(self) -> LookupQuery:
        return replace(self, country=None, locale=None, ip=None)


def trimmed(text: str) -> str:
    """``text`` without white space at either end."""
    return text.strip(_WHITE_SPACE_CHARS)


def normalised(text: str) -> str:
    """NFC, runs of white space as one space, trimmed."""
    return trimmed(_WHITE_RUN.sub(" ", unicodedata.normalize("NFC", text)))


def _forbidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return (category == "Cc" and ch not in WHITE_SPACE) or category == "Cs"


def has_forbidden(text: str) -> bool:
    """Whether ``text`` holds a control character other than white space, or a lone surrogate.

    A printable text holds neither (:meth:`str.isprintable` is false for every ``Cc`` and ``Cs``
    character), so only the rest is read character by character.

    >>> has_forbidden("Anna Lena"), has_forbidden("Anna\\tLena"), has_forbidden("Anna\\x00")
    (False, False, True)
    """
    return not text.isprintable() and any(_forbidden(ch) for ch in text)


def has_letter(text: str) -> bool:
    """Whether ``text`` holds a letter (Unicode category ``L*``: exactly what :meth:`str.isalpha` reads).

    >>> has_letter("12-3"), has_letter("ß")
    (False, True)
    """
    return any(map(str.isalpha, text))


def read_name(kind: str, value: Any) -> str:
    """The normalised value of name field ``kind``, or its ``parameter-*-invalid``."""
    status = NAME_STATUS[kind]
    if not isinstance(value, str) or isinstance(value, OversizedInteger):
        what = "a number" if isinstance(value, OversizedInteger | int | float) and not isinstance(value, bool) \
            else type(value).__name__
        raise Refusal(status, f"{kind} must be a string, got {what}.", field=kind)
    if has_forbidden(value):
        raise Refusal(status, f"{kind} must not contain control characters (other than white space) "
                      "or lone surrogates.", field=kind)
    text = normalised(value)
    low, high = NAME_LENGTHS[kind]
    if not low <= len(text) <= high:
        raise Refusal(status, f"{kind} must be {low} to {high} characters, got {len(text)}.", field=kind)
    if kind == "email" and not is_address(text):
        raise Refusal(status, "email must be a valid e-mail address (local@domain.tld).", field=kind)
    person = text.partition("@")[0] if kind == "email" else text
    if not has_letter(person):
        where = "the part before @" if kind == "email" else kind
        raise Refusal(status, f"No first name can be read from {kind}: {where} holds no letter.", field=kind)
    return text


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not trimmed(value))


def read_country(value: Any) -> str | None:
    if not _given(value):
        return None
    code = trimmed(value).upper() if isinstance(value, str) and value.isascii() else None
    if code not in COUNTRIES:
        raise Refusal("invalid-country-code", f"country must be a two-letter code of the country table, "
                      f"got {value!r:.60}.", field="country")
    return code


def read_locale(value: Any) -> str | None:
    if not _given(value):
        return None
    match = _LOCALE.fullmatch(trimmed(value)) if isinstance(value, str) else None
    if match is None or match[2].upper() not in COUNTRIES:
        raise Refusal("invalid-locale", f"locale must look like en_US or en-US, its region a code of the "
                      f"country table, got {value!r:.60}.", field="locale")
    return f"{match[1].lower()}_{match[2].upper()}"


def read_ip(value: Any) -> str | None:
    if not _given(value):
        return None
    text = trimmed(value) if isinstance(value, str) else ""
    try:
        if text and "%" not in text:
            return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    raise Refusal("invalid-ip-address", f"ip must be an IPv4 or IPv6 address, got {value!r:.60}.", field="ip")


def read_id(value: Any) -> int | str | None:
    if value is None:
        return None
    if isinstance(value, str) and not isinstance(value, OversizedInteger):
        if len(value) > ID_STRING_MAX_LENGTH:
            raise Refusal("invalid-id", f"id must be at most {ID_STRING_MAX_LENGTH} characters, got "
                          f"{len(value)}.", field="id")
        return value
    low, high = ID_RANGE
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    raise Refusal("invalid-id", f"id must be an integer from {low} to {high} or a string of at most "
                  f"{ID_STRING_MAX_LENGTH} characters.", field="id")


def read_query(raw: Any, *, fixed: str | None = None, hints: bool = True) -> LookupQuery:
    """Read one query object by the rules of the module.

    :param fixed: the only name field an alias endpoint reads, or None.
    :param hints: False for country of origin, which reads no hint.
    :raises Refusal: the first rule broken.
    """
    fields = (fixed,) if fixed else NAME_FIELDS
    kind = next((f for f in fields if raw.get(f) is not None), None) if isinstance(raw, Mapping) else None
    if kind is None:
        wanted = fixed or "one of first_name, full_name or email"
        raise Refusal("mandatory-parameter-missing", f"{wanted} must be set in a query object.", field=fixed)
    name = read_name(kind, raw[kind])
    country = read_country(raw.get("country")) if hints else None
    locale = read_locale(raw.get("locale")) if hints else None
    ip = read_ip(raw.get("ip")) if hints else None
    return LookupQuery(kind, name, country, locale, ip, read_id(raw.get("id")))


@dataclass(frozen=True)
class Signup:
    """A sign-up request as the emulator read it."""

    email: str
    newsletter: bool = False
    locale: str | None = None


def read_signup(body: Any) -> Signup:
    """Read a sign-up body by the rules of the module.

    :raises Refusal: the first rule broken.
    """
    body = body if isinstance(body, Mapping) else {}
    email = body.get("email")
    if not isinstance(email, str) or isinstance(email, OversizedInteger) or any(_forbidden(ch) for ch in email):
        raise Refusal("email-invalid", "email must be a valid e-mail address.", field="email")
    email = trimmed(email)
    if len(email.encode("utf-8", "surrogatepass")) > SIGNUP_EMAIL_MAX_OCTETS or not is_address(email):
        raise Refusal("email-invalid", "email must be a valid e-mail address of at most "
                      f"{SIGNUP_EMAIL_MAX_OCTETS} octets.", field="email")
    if body.get("accept_terms") is not True:
        raise Refusal("terms-not-accepted", "accept_terms must be true to sign up.", field="accept_terms")
    newsletter = body.get("newsletter")
    if newsletter is not None and not isinstance(newsletter, bool):
        raise Refusal("generic-error", f"newsletter must be true or false, got {newsletter!r:.40}.",
                      field="newsletter")
    locale = body.get("locale")
    if _given(locale):
        if not isinstance(locale, str) or not _LANGUAGE.fullmatch(trimmed(locale)):
            raise Refusal("invalid-locale", f"locale must be a two-letter language code such as en, de or es, "
                          f"got {locale!r:.40}.", field="locale")
        locale = trimmed(locale).lower()
    else:
        locale = None
    return Signup(email, bool(newsletter), locale)
