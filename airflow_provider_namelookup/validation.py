"""The spec's input rules, applied before any credit is spent.

The same functions run in the client (hooks, operators) and in the emulator, so a
query the provider accepts is one the local service accepts, and a rejected query
carries the status identifier the service would answer.

Rules, checked in this order (the first broken rule is reported):

1. The query is a JSON object (a bare string is a first name only where the
   caller says so, see :func:`validate_query`).
2. The name field: the first present (non-null) of ``first_name``, ``full_name``,
   ``email`` is used; none present is ``mandatory-parameter-missing``. Its value
   must be a string; it is NFC-normalised, trimmed and inner whitespace is
   collapsed (tabs and newlines included; white space is Unicode's ``White_Space``, which
   U+001C to U+001F are not); other control characters, NUL and lone surrogates are refused; then
   ``first_name`` must be 1-50 characters, ``full_name`` 1-100, ``email`` 3-100
   and a syntactically valid address (its local part a dot-atom of RFC 5322 ``atext``:
   no leading, trailing or doubled dot, no ``<``, ``,`` or quotes, so ``...@example.com``
   and ``anna<script>@example.com`` are refused; its domain two or more LDH labels, no IP
   literal such as ``[127.0.0.1]``; letters beyond ASCII are letters, so
   ``jörg@bücher.de`` passes). A first name must
   be readable from the value: it must hold a letter (for ``email``, in the part
   before ``@``), so ``","`` or ``12345@example.com`` is refused with the field's
   ``parameter-*-invalid`` and costs nothing, rather than being charged for an
   answer without a first name.
3. Hints: ``country`` from the spec's table (case-insensitive in ASCII only: ``"ıt"`` is refused),
   ``locale`` as ``xx_YY`` or ``xx-YY`` with a region from the country table,
   ``ip`` a valid IPv4 or IPv6 address. Empty strings and null count as absent.
   Every given hint is checked, even one the precedence rule will not use.
4. ``id``: an integer (not a boolean) that fits 64 bits, or a string of at most 50
   characters.

Example::

    >>> validate_query({"full_name": "  Theresa   Miller ", "country": "de"})
    Query(kind='full_name', name='Theresa Miller', country='DE', locale=None, ip=None, id=None)
    >>> validate_query({"first_name": "x" * 51})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    NameLookupValidationError: parameter-first-name-invalid [first_name]: first_name must be 1 to 50 ...
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from airflow_provider_namelookup.contract import ID_STRING_MAX_LENGTH, NAME_LENGTHS, SIGNUP_ACCOUNT_LANGUAGES
from airflow_provider_namelookup.countries import COUNTRIES
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, NameKind, Query

NAME_LIMITS: Mapping[NameKind, tuple[int, int]] = NAME_LENGTHS
NAME_STATUS: dict[NameKind, str] = {
    "first_name": "parameter-first-name-invalid",
    "full_name": "parameter-full-name-invalid",
    "email": "parameter-email-invalid",
}
ID_MAX_LENGTH = ID_STRING_MAX_LENGTH
ID_INTEGER_RANGE = (-(2**63), 2**63 - 1)
SIGNUP_EMAIL_MAX_OCTETS = 254
"""The longest address SMTP carries (RFC 5321 4.5.3.1.3: a path of 256 octets with its brackets).
The spec's 3 to 100 characters are the lookups' limit, not sign-up's."""

_ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-"
_LDH_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(rf"^[{_ATEXT}]+(?:\.[{_ATEXT}]+)*@(?:{_LDH_LABEL}\.)+{_LDH_LABEL}$")
"""An address over ASCII: a dot-atom of RFC 5322 ``atext``, then LDH labels (RFC 1123), at least two."""
_NON_ASCII_LETTERS = ("L", "M", "N")
"""Unicode categories allowed beyond ASCII (letters, marks, digits): ``jörg@bücher.de``, ``李@例子.中国``."""
_SIGNUP_LOCALE = re.compile(r"^[A-Za-z]{2}$")
_LOCALE = re.compile(r"^([A-Za-z]{2})[_-]([A-Za-z]{2})$")
_WHITESPACE = re.compile(r"[^\S\x1c-\x1f]+")
"""Unicode's White_Space: Python's ``\\s`` less the information separators U+001C to U+001F,
control characters that ``str.isspace()`` counts as space but Unicode does not."""
_EDGES = re.compile(r"\A[^\S\x1c-\x1f]+|[^\S\x1c-\x1f]+\Z")
_ASCII_LETTER = re.compile("[A-Za-z]")
_FORBIDDEN = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")
"""Control characters (Cc) that are not white space, and surrogates (Cs): one regex search
instead of a Python loop over the characters (the table engine validates every distinct value)."""


class OversizedInteger(str):
    """An integer literal too long to be read as a number (the emulator's JSON reader makes
    one of any integer of more than 40 digits, keeping its digits as text).

    Validation refuses it wherever a value is read (``id`` answers ``invalid-id``); where it
    is only echoed back it is written as the digits it was sent as, in quotes.
    """


def _invalid(status_id: str, field: str, detail: str) -> NameLookupValidationError:
    return NameLookupValidationError(status_id, detail, field=field)


def _has_forbidden_characters(text: str) -> bool:
    return _FORBIDDEN.search(text) is not None


def trim(value: str) -> str:
    """``value`` without white space (Unicode's ``White_Space``) at either end."""
    return _EDGES.sub("", value)


def normalise_text(value: str) -> str:
    """NFC, trimmed, runs of whitespace collapsed to one space."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", value)).strip(" ")


def is_valid_email(value: str) -> bool:
    """Syntax check: ``local@domain`` with a dot-atom local part of RFC 5322 ``atext`` (no
    ``<``, ``,``, quotes or spaces; at most 64 octets in UTF-8, RFC 5321 4.5.3.1.1 and
    RFC 6531) and a domain of two or more LDH labels (letters, digits, inner hyphens; at
    most 63 characters each; no IP literal, no all-digit top label). Letters, marks and
    digits beyond ASCII count as letters, so internationalised addresses (RFC 6532) pass;
    their labels must fit 63 characters as punycode (``xn--...``).

    >>> is_valid_email("a.b@example.com"), is_valid_email("...@example.com"), is_valid_email("a..b@x.io")
    (True, False, False)
    >>> is_valid_email("jörg@bücher.de"), is_valid_email("anna<script>@x.io"), is_valid_email("a@[127.0.0.1]")
    (True, False, False)
    """
    local, at, domain = value.rpartition("@")
    if not at or len(local.encode("utf-8", "surrogatepass")) > 64:
        return False
    shape = value if value.isascii() else _ascii_shape(value)
    if not _EMAIL.match(shape) or domain.rsplit(".", 1)[-1].isdigit():
        return False
    return value.isascii() or all(_punycode_fits(label) for label in domain.split(".") if not label.isascii())


def _ascii_shape(value: str) -> str:
    """``value`` with each letter, mark or digit beyond ASCII replaced by ``a`` and anything
    else beyond ASCII by a space (which no rule accepts)."""
    return "".join(ch if ch.isascii() else "a" if unicodedata.category(ch)[0] in _NON_ASCII_LETTERS else " "
                   for ch in value)


def _punycode_fits(label: str) -> bool:
    return len(label.lower().encode("punycode")) <= 63 - len("xn--")


def validate_name(kind: NameKind, value: Any) -> str:
    """Check and normalise one name field; raise the field's ``parameter-*-invalid``."""
    status = NAME_STATUS[kind]
    if isinstance(value, OversizedInteger):
        raise _invalid(status, kind, f"{kind} must be a string, got a number")
    if not isinstance(value, str):
        raise _invalid(status, kind, f"{kind} must be a string, got {type(value).__name__}")
    if _has_forbidden_characters(value):
        raise _invalid(status, kind, f"{kind} must not contain control characters or NUL")
    text = value.strip() if value.isascii() and " " not in value and value.isprintable() else normalise_text(value)
    low, high = NAME_LIMITS[kind]
    if not low <= len(text) <= high:
        raise _invalid(status, kind, f"{kind} must be {low} to {high} characters, got {len(text)}")
    if kind == "email" and not is_valid_email(text):
        raise _invalid(status, kind, "email must be a valid e-mail address (local@domain.tld)")
    if not _holds_letter(text.rsplit("@", 1)[0] if kind == "email" else text):
        where = "the part before @" if kind == "email" else kind
        raise _invalid(status, kind, f"no first name can be read from {kind}: {where} holds no letter")
    return text


def plain_name(kind: NameKind, value: Any) -> bool:
    """Whether :func:`validate_name` would return ``value`` itself, known without normalising it:
    a plain ``str`` within the field's length, of letters only or of words of letters each
    followed by one space (in NFC: so nothing to trim, collapse or normalise), or of printable
    ASCII without spaces holding a letter. ``email`` is never plain (its syntax is checked on its
    own). A table's names are nearly all plain; planning reads the others the long way.

    >>> plain_name("first_name", "Zoë"), plain_name("first_name", "Anne-Marie"), plain_name("first_name", "Anna ")
    (True, True, False)
    >>> plain_name("first_name", "Dan Qing"), plain_name("first_name", "Dan  Qing"), plain_name("first_name", "Dan Q.")
    (True, False, False)
    """
    if type(value) is not str or kind == "email":
        return False
    low, high = NAME_LIMITS[kind]
    if not low <= len(value) <= high:
        return False
    if value.isascii():
        return (value.isalpha() or _words_of_letters(value)
                or (value.isprintable() and " " not in value and _ASCII_LETTER.search(value) is not None))
    return (value.isalpha() or _words_of_letters(value)) and unicodedata.is_normalized("NFC", value)


def _words_of_letters(value: str) -> bool:
    """Letters in words joined by single spaces (``Dan Qing``; 18 % of the distinct first names of the
    benchmarks' name data): what :func:`normalise_text` leaves as it is."""
    return " " in value and all(word.isalpha() for word in value.split(" "))


def plain_country(value: Any) -> str | None:
    """The code :func:`validate_country` returns for ``value`` when it is two ASCII letters of the
    country table in any case (nothing to trim); None for any other value, which is read the long way.

    >>> plain_country("de"), plain_country(" de"), plain_country("XX")
    ('DE', None, None)
    """
    if type(value) is not str or len(value) != 2 or not value.isascii():
        return None
    code = value.upper()
    return code if code in COUNTRIES else None


def _holds_letter(text: str) -> bool:
    if text.isascii():
        return _ASCII_LETTER.search(text) is not None
    return any(ch.isalpha() for ch in text)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not trim(value))


def validate_country(value: Any) -> str | None:
    """A code of the spec's country table (any case of its ASCII letters) → upper case; blank → None.

    Only ASCII folds: ``"ıt"`` and ``"ſe"`` are refused, though ``str.upper()`` makes them IT and SE.
    """
    if _blank(value):
        return None
    code = trim(value).upper() if isinstance(value, str) and value.isascii() else None
    if code not in COUNTRIES:
        raise _invalid("invalid-country-code", "country",
                       f"country must be a two-letter code from the country table, got {value!r:.60}")
    return code


def validate_locale(value: Any) -> str | None:
    """``xx_YY`` or ``xx-YY`` with a known region → ``xx_YY``; blank → None."""
    if _blank(value):
        return None
    match = _LOCALE.match(trim(value)) if isinstance(value, str) else None
    if not match or match.group(2).upper() not in COUNTRIES:
        raise _invalid("invalid-locale", "locale",
                       f"locale must look like en_US or en-US with a known region, got {value!r:.60}")
    return f"{match.group(1).lower()}_{match.group(2).upper()}"


def validate_ip(value: Any) -> str | None:
    """A valid IPv4 or IPv6 address (without a zone index such as ``%eth0``) → its canonical text; blank → None."""
    if _blank(value):
        return None
    try:
        # a zone index (fe80::1%eth0) names an interface of the sender, not an address
        if isinstance(value, str) and "%" not in value:
            return str(ipaddress.ip_address(trim(value)))
    except ValueError:
        pass
    # An address is a person's data: the message says what was wrong with it, never the address.
    shape = f"{len(value)} characters that are not one" if isinstance(value, str) else type(value).__name__
    raise _invalid("invalid-ip-address", "ip", f"ip must be an IPv4 or IPv6 address without a zone index, got {shape}")


def validate_id(value: Any) -> int | str | None:
    """An integer (not a boolean) or a string of at most 50 characters; None stays None."""
    if value is None:
        return None
    low, high = ID_INTEGER_RANGE
    if isinstance(value, OversizedInteger) or (isinstance(value, int) and not isinstance(value, bool)
                                               and not low <= value <= high):
        raise _invalid("invalid-id", "id", f"id must be an integer from {low} to {high} "
                       "(or a string of at most 50 characters), got a larger number")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _invalid("invalid-id", "id", f"id must be an integer or a string, got {type(value).__name__}")
    if isinstance(value, str) and len(value) > ID_MAX_LENGTH:
        raise _invalid("invalid-id", "id", f"id must be at most {ID_MAX_LENGTH} characters, got {len(value)}")
    return value


def pick_name_field(raw: Mapping[str, Any]) -> NameKind:
    """The name field a query uses: the first present of first_name, full_name, email.

    None present is ``mandatory-parameter-missing``, reported against the field the query
    gave as null (a table's NULL full name is a ``full_name`` mistake), else ``first_name``:

    >>> pick_name_field({"full_name": None, "country": "DE"})
    Traceback (most recent call last):
    ...
    NameLookupValidationError: mandatory-parameter-missing [full_name]: full_name is null; one of first_name, ...
    """
    for kind in NAME_KINDS:
        if raw.get(kind) is not None:
            return kind
    given = next((kind for kind in NAME_KINDS if kind in raw), None)
    if given is None:
        raise _invalid("mandatory-parameter-missing", "first_name",
                       "one of first_name, full_name or email must be set")
    raise _invalid("mandatory-parameter-missing", given,
                   f"{given} is null; one of first_name, full_name or email must be set")


def validate_query(raw: Any, *, hints: bool = True) -> Query:
    """Validate one query object and return it normalised.

    :param raw: the query object (a mapping); anything else is ``mandatory-parameter-missing``.
    :param hints: False for country-of-origin queries, whose hints are ignored.
    :raises NameLookupValidationError: with the status identifier the service would answer.
    """
    if not isinstance(raw, Mapping):
        raise _invalid("mandatory-parameter-missing", "first_name",
                       f"a query must be a JSON object, got {type(raw).__name__}")
    kind = pick_name_field(raw)
    name = validate_name(kind, raw[kind])
    country = validate_country(raw.get("country")) if hints else None
    locale = validate_locale(raw.get("locale")) if hints else None
    ip = validate_ip(raw.get("ip")) if hints else None
    return Query(kind=kind, name=name, country=country, locale=locale, ip=ip,
                 id=validate_id(raw.get("id")))


def validate_signup(email: Any, accept_terms: Any, newsletter: Any = None,
                    locale: Any = None) -> dict[str, Any]:
    """Check a sign-up request and return its JSON payload.

    ``locale`` is the account's language, a short (two-letter ISO 639-1) language code as
    the spec says, any case; the service writes its e-mails in ``en``, ``de`` or ``es`` and
    falls back on English for other languages.

    :raises NameLookupValidationError: ``email-invalid``, ``terms-not-accepted``,
        ``generic-error`` for a ``newsletter`` that is not a boolean, ``invalid-locale``.

    Example::

        >>> validate_signup("me@example.com", True, newsletter=False, locale="FR")
        {'email': 'me@example.com', 'accept_terms': True, 'newsletter': False, 'locale': 'fr'}
    """
    if not isinstance(email, str) or _has_forbidden_characters(email) \
            or len(trim(email).encode("utf-8", "surrogatepass")) > SIGNUP_EMAIL_MAX_OCTETS \
            or not is_valid_email(trim(email)):
        raise _invalid("email-invalid", "email",
                       f"email must be a valid e-mail address of at most {SIGNUP_EMAIL_MAX_OCTETS} octets")
    if accept_terms is not True:
        raise _invalid("terms-not-accepted", "accept_terms", "accept_terms must be true to sign up")
    payload: dict[str, Any] = {"email": trim(email), "accept_terms": True}
    if newsletter is not None:
        if not isinstance(newsletter, bool):
            raise _invalid("generic-error", "newsletter",
                           f"newsletter must be true or false, got {newsletter!r:.40}")
        payload["newsletter"] = newsletter
    if not _blank(locale):
        if not isinstance(locale, str) or not _SIGNUP_LOCALE.match(trim(locale)):
            raise _invalid("invalid-locale", "locale",
                           f"sign-up locale must be a two-letter language code such as "
                           f"{', '.join(SIGNUP_ACCOUNT_LANGUAGES)}, got {locale!r:.40}")
        payload["locale"] = trim(locale).lower()
    return payload
