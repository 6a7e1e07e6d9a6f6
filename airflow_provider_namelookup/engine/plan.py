"""The plan step: turn a source's values into validated queries, without any I/O.

A value becomes a :class:`~.ports.Question` holding either a :class:`Query` and its
``query_hash`` (the identity used to deduplicate and to skip what was already
answered) or the rule it broke, which keeps it from costing anything.

Example::

    >>> rules = QueryRules(lookup=LookupKind.GENDER, name_kind="first_name", default_country="DE")
    >>> planned = [plan_name("Anna", rules), plan_name("anna ", rules), plan_name("", rules)]
    >>> planned[0].query_hash == planned[1].query_hash, planned[2].error.status_id
    (True, 'parameter-first-name-invalid')
    >>> planned[0].query
    Query(kind='first_name', name='Anna', country='DE', locale=None, ip=None, id=None)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.api import sendable
from airflow_provider_namelookup.contract import HINT_FIELDS, LookupKind
from airflow_provider_namelookup.engine.abstain import Abstain
from airflow_provider_namelookup.engine.ports import Question, SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, NameKind, Query
from airflow_provider_namelookup.personal.pseudonym import keyed_identity, keyed_invalid_identity
from airflow_provider_namelookup.token_guard import holds_secret, validate_query_without_secrets
from airflow_provider_namelookup.validation import plain_country, plain_name

__all__ = ["LookupKind", "QueryRules", "build_query_object", "plan_name", "plan_value", "query_hash"]


@dataclass(frozen=True)
class QueryRules:
    """How a run turns a source's values into queries.

    :param lookup: gender or country of origin.
    :param name_kind: what a bare name value is: ``first_name``, ``full_name`` or ``email``.
    :param default_country: hint for values that carry none (likewise locale and ip).
    :param secrets: values no query may contain (the connection's token): a value holding
        one is refused instead of sending the secret to the service and into results
        (the rule of :mod:`airflow_provider_namelookup.token_guard`).
    :param abstain: gender only: the thresholds below which an answer is written as
        ``unknown`` (:mod:`.abstain`); it shapes the rows, not the queries.
    :param last_names: the values are first names that come with a last name each (a table's
        ``last_name_column``): a value with both is looked up as one full name
        (:func:`build_query_object`).
    :param identity_key: pseudonymise (:mod:`airflow_provider_namelookup.personal.pseudonym`): a
        question's hash is keyed by it, so that the answers table holds no hash a dictionary of
        names reverses; None: the plain hash (:meth:`Query.identity`).
    """

    lookup: LookupKind
    name_kind: NameKind = "first_name"
    default_country: str | None = None
    default_locale: str | None = None
    default_ip: str | None = None
    secrets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    abstain: Abstain | None = None
    last_names: bool = False
    identity_key: bytes | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name_kind not in NAME_KINDS:
            raise ValueError(f"name_kind must be one of {', '.join(NAME_KINDS)}, got {self.name_kind!r}")
        if self.last_names and self.name_kind != "first_name":
            raise ValueError(f"last_name_column reads last names beside the first names of name_column: name_kind "
                             f"must be 'first_name' (the default), got {self.name_kind!r}")
        if self.abstain is not None and self.lookup is not LookupKind.GENDER:
            raise ValueError("min_probability and min_samples apply to gender lookups only")
        hints = {"country": self.default_country, "locale": self.default_locale, "ip": self.default_ip}
        object.__setattr__(self, "_hints", hints if self.lookup.takes_hints else {})

    @property
    def default_hints(self) -> dict[str, str | None]:
        """Hint field → the value queries without one get (country of origin takes none)."""
        return self._hints  # type: ignore[attr-defined]

    @property
    def fingerprint(self) -> str:
        """What, besides a row's own values, shapes its question (lookup, name kind, default hints).

        A table target keeps it beside each row's raw values, so that a row is known to be
        unchanged without planning it again, and a changed default hint re-asks every row (a
        changed abstain threshold rewrites every row from the answers already paid for).

        >>> QueryRules(LookupKind.GENDER).fingerprint == QueryRules(LookupKind.GENDER, default_country="DE").fingerprint
        False
        """
        parts = [self.lookup.value, self.name_kind, *(f"{k}={v or ''}" for k, v in self.default_hints.items())]
        if self.abstain is not None:  # without one, the fingerprint of the rows written before abstaining existed
            parts.append(self.abstain.fingerprint)
        if self.last_names:  # reading the last names (or no longer) asks every row's question anew
            parts.append("last_name")
        if self.identity_key is not None:  # a target turning pseudonymous (or back) is rewritten whole
            parts.append("pseudonymised")
        return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:12]


def query_hash(lookup: LookupKind, query: Query, key: bytes | None = None) -> str:
    """Stable identity of a question: endpoint plus the query's normalised cache key
    (:meth:`Query.identity`); keyed by ``key`` when the run pseudonymises."""
    if key is not None:
        return keyed_identity(key, lookup.value, query)
    return query.identity(lookup.value)


def _invalid_hash(lookup: LookupKind, raw: Any, key: bytes | None = None) -> str:
    text = json.dumps(raw, sort_keys=True, default=repr, ensure_ascii=False)
    if key is not None:
        return keyed_invalid_identity(key, f"{lookup.value}\x1e{text}")
    return "invalid:" + hashlib.sha256(f"{lookup.value}\x1e{text}".encode("utf-8", "replace")).hexdigest()[:32]


def build_query_object(name: Any, rules: QueryRules, *, country: Any = None, locale: Any = None,
                       ip: Any = None, id: Any = None, last_name: Any = None) -> dict[str, Any]:
    """A query object from a bare name plus per-value hints; a hint that is missing or blank
    gets the rules' default.

    With ``rules.last_names``, a first name and a last name (neither NULL nor blank) are one
    ``full_name``, joined by a space; a NULL or blank last name leaves the first name alone
    (``first_name``), and without a first name the value breaks the first name's rule whatever
    its last name (a last name alone is not looked up).

    >>> rules = QueryRules(LookupKind.GENDER, last_names=True)
    >>> build_query_object("Theresa", rules, last_name="Miller"), build_query_object("Theresa", rules, last_name=" ")
    ({'full_name': 'Theresa Miller'}, {'first_name': 'Theresa'})
    >>> build_query_object(None, rules, last_name="Miller")
    {'first_name': None}

    :raises NameLookupValidationError: a last name that is not text (``parameter-full-name-invalid``).
    """
    raw: dict[str, Any] = {rules.name_kind: name}
    if rules.last_names and last_name is not None:
        if not isinstance(last_name, str):
            raise NameLookupValidationError("parameter-full-name-invalid", f"last_name must be text, got "
                                            f"{type(last_name).__name__}", field="last_name")
        if last_name.strip() and isinstance(name, str) and name.strip():
            raw = {"full_name": f"{name} {last_name}"}
    if defaults := rules.default_hints:  # none for a lookup that takes no hints
        for hint, value in zip(HINT_FIELDS, (country, locale, ip), strict=True):
            chosen = defaults[hint] if value is None or (isinstance(value, str) and not value.strip()) else value
            if chosen is not None:
                raw[hint] = chosen
    if id is not None:
        raw["id"] = id
    return raw


def plan_value(value: SourceValue, rules: QueryRules) -> Question:
    """Plan one source value: its query (validated, the token refused, the hash as identity), or
    the rule it broke.

    A query object given as a mapping gets the rules' default hints where its own are missing
    or blank (:func:`build_query_object` already applied them to a bare name)."""
    if (plain := _plain_question(value, rules)) is not None:
        return plain
    return _question_read_in_full(value, rules)


def _question_read_in_full(value: SourceValue, rules: QueryRules) -> Question:
    """:func:`plan_value` by the general reading of a query (any value)."""
    if value.refusal is not None:
        refused = (f"invalid:{value.ref!r}" if rules.identity_key is None
                   else keyed_invalid_identity(rules.identity_key, repr(value.ref)))
        return Question(value.ref, None, refused, value.refusal, value.rows, value.first_key, value.shown)
    raw = value.query_object
    if isinstance(raw, Mapping) and rules.default_hints:
        missing = {f: d for f, d in rules.default_hints.items()
                   if d is not None and (raw.get(f) is None or (isinstance(raw.get(f), str) and not raw[f].strip()))}
        if missing:
            raw = {**raw, **missing}
    try:
        query = sendable(validate_query_without_secrets(raw, hints=rules.lookup.takes_hints, secrets=rules.secrets))
    except NameLookupValidationError as err:
        return Question(value.ref, None, _invalid_hash(rules.lookup, raw, rules.identity_key), err, value.rows,
                        value.first_key, value.shown)
    return Question(value.ref, query, query_hash(rules.lookup, query, rules.identity_key), None, value.rows,
                    value.first_key, value.shown)


def _plain_question(value: SourceValue, rules: QueryRules) -> Question | None:
    """The question of a plain value, the common case of a table's (a name that needs no
    normalising, at most a country of the table in upper or lower case, no token in either),
    planned without the general reading; None for any other value. What it returns is what
    the general reading would return (``tests/engine/test_plain_planning.py`` holds it to that)."""
    raw = value.query_object
    if type(raw) is not dict or value.refusal is not None or rules.default_locale or rules.default_ip:
        return None
    kind, secrets, code = rules.name_kind, rules.secrets, None
    name = raw.get(kind)  # a full name joined from a first and a last name holds a space: never plain
    if "country" in raw:
        country = raw["country"]
        code = plain_country(country) if rules.lookup.takes_hints else None
        if code is None or len(raw) != 2 or (secrets and holds_secret(country, secrets)):
            return None
    elif len(raw) != 1 or rules.default_country is not None:
        return None
    if type(name) is not str or not plain_name(kind, name) or (secrets and holds_secret(name, secrets)):
        return None
    query = Query(kind, name, code)
    return Question(value.ref, query, query_hash(rules.lookup, query, rules.identity_key), None, value.rows,
                    value.first_key, value.shown)


def plan_name(name: Any, rules: QueryRules, *, country: Any = None, locale: Any = None, ip: Any = None,
              id: Any = None, ref: Any = None) -> Question:
    """Plan one bare name (of ``rules.name_kind``) with optional hints."""
    raw = build_query_object(name, rules, country=country, locale=locale, ip=ip, id=id)
    return plan_value(SourceValue(ref, raw, shown=name), rules)
