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
the whole value, so that it never refuses a real name such as Sukhdev. Names are checked as
given and once normalised (``" dev "`` is ``dev``).

Example::

    >>> token = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"
    >>> holds_secret(f"Anna {token}", {token}), holds_secret("Sukhdev", {"dev"}), holds_secret("dev", {"dev"})
    (True, False, True)
    >>> validate_query_without_secrets({"first_name": "Anna", "country": token}, secrets={token})
    Traceback (most recent call last):
    ...
    NameLookupValidationError: invalid-country-code [country]: country holds the connection's API token; ...
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any

from airflow_provider_namelookup.contract import HINT_FIELDS
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, Query
from airflow_provider_namelookup.validation import NAME_STATUS, validate_query

__all__ = ["SECRET_MIN_LENGTH", "holds_secret", "refuse_secret_in", "validate_query_without_secrets"]

SECRET_MIN_LENGTH = 16
"""A token at least this long is refused anywhere inside a value; a shorter one only as the
whole value. Service tokens are 32 characters and more."""

FIELD_STATUS: dict[str, str] = {
    **{str(kind): status for kind, status in NAME_STATUS.items()},
    "id": "invalid-id", "country": "invalid-country-code", "locale": "invalid-locale", "ip": "invalid-ip-address",
}
"""The status identifier a refusal carries, per field: the one the field's own rule answers."""

_READ_WITH_HINTS = frozenset((*NAME_KINDS, *HINT_FIELDS, "id"))
_READ_WITHOUT_HINTS = frozenset((*NAME_KINDS, "id"))


@lru_cache(maxsize=16)
def _rule(secrets: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The secrets refused as a whole value, and those refused anywhere inside one."""
    whole = frozenset(secret for secret in secrets if secret)
    return whole, tuple(secret for secret in whole if len(secret) >= SECRET_MIN_LENGTH)


def _rule_of(secrets: Collection[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    return _rule(secrets if isinstance(secrets, frozenset) else frozenset(secrets))


def _holds(value: Any, whole: frozenset[str], inside: tuple[str, ...]) -> bool:
    # The planner runs this for every field of every distinct row: no generator per value.
    if value is None or isinstance(value, int | float):
        return False
    # Other values are judged by their repr, which is what an error message would quote.
    text = value if isinstance(value, str) else repr(value)
    if text in whole:
        return True
    for secret in inside:  # noqa: SIM110 (a loop: any() would build a generator per value)
        if secret in text:
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
