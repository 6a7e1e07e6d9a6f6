"""The one rule that keeps the connection's API token out of every query.

A query that carries the token would send it to the service, which charges a credit and
echoes it back in ``input``; and an error message that quotes the value would carry it into
logs. The hooks (:func:`airflow_provider_namelookup.api.as_query`) and the operators' planner
(:mod:`airflow_provider_namelookup.engine.plan`) therefore both validate through
:func:`validate_query_without_secrets`, which refuses such a query before it is validated or
sent, with a message that names the field and never the value; a :class:`Query` handed to a
hook as it is goes through :func:`refuse_secret_in`.

The rule (:func:`holds_secret`): a token of :data:`SECRET_MIN_LENGTH` characters or more is
refused anywhere in a name, id or hint; a shorter one (a toy token such as ``dev``) only as
the whole value and as written, so that it never refuses a real name such as Sukhdev or Dev.
A long token is found whatever its case (the service folds names: the token in lower case is
the same query), and numbers are read by their digits (a numeric token as an ``int`` id). Names are checked as given and
once normalised (``" dev "`` is ``dev``).

What a log line or message may show of a value goes through :func:`shown_safely`: every
secret, of any length, masked in the value (inside dicts, lists and nested values too) and in
its ``repr``, and only then cut to length, so that no cut leaves a piece of a token that
Airflow's secrets masker no longer recognises. :func:`mask_secrets` masks a text.

Example::

    >>> token = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"
    >>> holds_secret(f"Anna {token}", {token}), holds_secret("Sukhdev", {"dev"}), holds_secret("dev", {"dev"})
    (True, False, True)
    >>> holds_secret(token.lower(), {token}), holds_secret(4921558812345678, {"4921558812345678"})
    (True, True)
    >>> validate_query_without_secrets({"first_name": "Anna", "country": token}, secrets={token})
    Traceback (most recent call last):
    ...
    NameLookupValidationError: invalid-country-code [country]: country holds the connection's API token; ...
    >>> shown_safely({"email": f"{token}@example.com", "id": 6}, {token}, length=24)
    "{'email': '***@example.c…"
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Set
from functools import lru_cache
from typing import Any

from airflow_provider_namelookup.contract import HINT_FIELDS
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, Query
from airflow_provider_namelookup.validation import NAME_STATUS, validate_query

__all__ = ["MASK", "SECRET_MIN_LENGTH", "holds_secret", "mask_secrets", "refuse_secret_in", "shown_safely",
           "validate_query_without_secrets"]

SECRET_MIN_LENGTH = 16
"""A token at least this long is refused anywhere inside a value; a shorter one only as the
whole value. Service tokens are 32 characters and more."""

MASK = "***"
"""What a secret is replaced with wherever a value is shown."""
_NESTING_MASKED = 32
"""Levels of nested values masked one by one; deeper ones are masked in their ``repr`` only."""

FIELD_STATUS: dict[str, str] = {
    **{str(kind): status for kind, status in NAME_STATUS.items()},
    "id": "invalid-id", "country": "invalid-country-code", "locale": "invalid-locale", "ip": "invalid-ip-address",
}
"""The status identifier a refusal carries, per field: the one the field's own rule answers."""

_READ_WITH_HINTS = frozenset((*NAME_KINDS, *HINT_FIELDS, "id"))
_READ_WITHOUT_HINTS = frozenset((*NAME_KINDS, "id"))


@lru_cache(maxsize=16)
def _rule(secrets: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The secrets refused as a whole value, and those refused anywhere inside one (case folded:
    such a value is compared whatever its case, since the service folds names)."""
    whole = frozenset(secret for secret in secrets if secret)
    return whole, tuple(secret.casefold() for secret in whole if len(secret) >= SECRET_MIN_LENGTH)


def _rule_of(secrets: Collection[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    return _rule(secrets if isinstance(secrets, frozenset) else frozenset(secrets))


def _holds(value: Any, whole: frozenset[str], inside: tuple[str, ...]) -> bool:
    # The planner runs this for every field of every distinct row: no generator per value.
    if value is None or isinstance(value, bool):
        return False
    # A number is judged by its digits (a numeric token as an int id); other values by their
    # repr, which is what an error message would quote.
    text = value if isinstance(value, str) else str(value) if isinstance(value, int | float) else repr(value)
    if text in whole:
        return True
    if inside:
        folded = text.casefold()
        for secret in inside:  # a loop: any() would build a generator per value
            if secret in folded:
                return True
    return False


def holds_secret(value: Any, secrets: Collection[str]) -> bool:
    """Whether ``value`` carries one of ``secrets`` by the rule above."""
    return bool(secrets) and _holds(value, *_rule_of(secrets))


def refuse_secret_in(query: Query, secrets: Collection[str]) -> Query:
    """``query`` itself, or the refusal of the field that carries a secret."""
    if secrets:
        whole, inside = _rule_of(secrets)
        for name, value in ((query.kind, query.name), ("id", query.id),
                            *((hint, getattr(query, hint)) for hint in HINT_FIELDS)):
            if value is not None and _holds(value, whole, inside):
                _refuse(name)
    return query


def _refuse(field: str) -> None:
    raise NameLookupValidationError(FIELD_STATUS[field], f"{field} holds the connection's API token; it is never sent",
                                    field=field)


def validate_query_without_secrets(raw: Any, *, hints: bool = True, secrets: Collection[str] = ()) -> Query:
    """:func:`~airflow_provider_namelookup.validation.validate_query`, refusing first every
    query that carries a secret in a name, hint or id: as given (so that no message quotes
    it), and the name once normalised.

    :raises NameLookupValidationError: the field's status identifier and the field; the
        message never quotes a value that carries a secret.
    """
    if not secrets or not isinstance(raw, Mapping):
        return validate_query(raw, hints=hints)
    whole, inside = _rule_of(secrets)
    read = _READ_WITH_HINTS if hints else _READ_WITHOUT_HINTS
    for name, value in raw.items():
        if name in read and _holds(value, whole, inside):
            _refuse(name)
    query = validate_query(raw, hints=hints)
    if query.name is not raw[query.kind] and _holds(query.name, whole, inside):  # normalising changed it
        _refuse(query.kind)
    return query


def _spellings(secret: str) -> list[str]:
    """``secret`` as written and as a ``repr`` of it (text or bytes) writes it, longest first."""
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1]}
    return sorted(forms, key=len, reverse=True)


def mask_secrets(text: str, secrets: Collection[str], *, min_length: int = 1) -> str:
    r"""``text`` with every secret of at least ``min_length`` characters replaced by :data:`MASK`,
    as written and as a ``repr`` would write it; longer secrets first, so that a secret
    holding another is masked whole.

    >>> mask_secrets("Bearer tok3n and b'tok\\n2'", {"tok3n", "tok\n2"})
    "Bearer *** and b'***'"
    """
    for secret in sorted((s for s in secrets if s and len(s) >= min_length), key=len, reverse=True):
        for form in _spellings(secret):
            text = text.replace(form, MASK)
    return text


def _masked(value: Any, secrets: Collection[str], depth: int) -> Any:
    """``value`` with every string inside it (keys too) masked, for its ``repr``."""
    if isinstance(value, str):
        return mask_secrets(value, secrets)
    if depth >= _NESTING_MASKED:
        return value
    if isinstance(value, Mapping):
        return {_masked(k, secrets, depth + 1): _masked(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_masked(item, secrets, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, Set):
        members = {_masked(item, secrets, depth + 1) for item in value}
        return frozenset(members) if isinstance(value, frozenset) else members
    return value


def shown_safely(value: Any, secrets: Collection[str], *, length: int | None = None) -> str:
    """``value`` as a log line or message may show it: its ``repr`` with every secret masked
    (in the strings inside it, then in the ``repr`` itself, which an object may write its own
    way), then cut to ``length`` characters with ``…``. A string is cut inside its quotes.

    >>> shown_safely("Anna tok3n-secret", {"tok3n-secret"}), shown_safely([["x", "tok"]], {"tok"})
    ("'Anna ***'", "[['x', '***']]")
    >>> shown_safely("x" * 50, set(), length=8)
    "'xxxxxxxx…'"
    """
    if isinstance(value, str):
        text = mask_secrets(value, secrets)
        return repr(text if length is None or len(text) <= length else text[:length] + "…")
    text = mask_secrets(repr(_masked(value, secrets, 0)), secrets)
    return text if length is None or len(text) <= length else text[:length] + "…"
