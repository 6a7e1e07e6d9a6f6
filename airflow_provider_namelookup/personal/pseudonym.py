"""Pseudonyms of people's values: a keyed hash (HMAC-SHA-256) in place of a name or an e-mail.

With ``pseudonymise=True`` a lookup operator keeps no value that identifies a person in clear:
the answers table's key is a keyed hash of the question (:func:`keyed_identity`), and every
column that held a value (the service's echoes ``first_name``, ``last_name``, ``input``, the
sanitized names; a target's ``source_name`` and ``source_last_name``) holds
``pseudonym(key, value)`` instead. The answers (gender, probability, countries) stay readable.

The key lives outside the warehouse, in the password of an Airflow connection (default
``namelookup_pseudonymisation``); whoever has it can recompute a pseudonym from a value (so
the erasure operator finds a person by value), nobody can reverse one without it.

Example::

    >>> key = bytes.fromhex("00" * 32)
    >>> pseudonym(key, " Anna ") == pseudonym(key, "ANNA"), len(pseudonym(key, "Anna"))
    (True, 64)
    >>> Pseudonymiser(key).result({"first_name": "Anna", "gender": "female"})["gender"]
    'female'
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.errors import InvalidArgument
from airflow_provider_namelookup.models import NAME_KINDS, Query
from airflow_provider_namelookup.validation import normalise_text

DEFAULT_PSEUDONYMISATION_CONN_ID = "namelookup_pseudonymisation"
MIN_KEY_BYTES = 16
"""A shorter key is refused: a dictionary of names would find it."""
HOW_TO_MAKE_A_KEY = ("airflow connections add {conn_id} --conn-type generic "
                     "--conn-password \"$(python -c 'import secrets;print(secrets.token_hex(32))')\"")
ECHOED_NAMES = ("first_name", "last_name", "full_name", "email")
"""Fields of an answer that echo the person's name (top level)."""
ECHOED_DETAILS = ("first_name_sanitized", "full_name_sanitized", "email_sanitized")
"""Fields of an answer's ``details`` that echo it."""
DROPPED = ("country_of_origin_map_url",)
"""Fields that hold the name inside another text (a URL): dropped, not hashed."""


def pseudonymisation_key(conn_id: str = DEFAULT_PSEUDONYMISATION_CONN_ID) -> bytes:
    """The key in the password of connection ``conn_id`` (its UTF-8 bytes), registered with Airflow's
    secret masker so that no log line shows it.

    :raises InvalidArgument: the connection is missing, or its password empty or shorter than
        :data:`MIN_KEY_BYTES`; the message says how to make one.
    """
    from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook

    how = HOW_TO_MAKE_A_KEY.format(conn_id=conn_id)
    try:
        password = BaseHook.get_connection(conn_id).password
    except AirflowNotFoundException:
        raise InvalidArgument(f"pseudonymisation_conn_id {conn_id!r}: no such connection; a pseudonymising run "
                              f"(pseudonymise=True, the default for e-mails and full names) needs the key in its "
                              f"password. Make one with: {how}") from None
    if not password:
        raise InvalidArgument(f"pseudonymisation_conn_id {conn_id!r} holds no key: set its password to a long random "
                              f"secret; make one with: {how}")
    from airflow_provider_namelookup.secret_masking import mask_secret

    mask_secret(password)
    key = password.encode()
    if len(key) < MIN_KEY_BYTES:
        raise InvalidArgument(f"pseudonymisation_conn_id {conn_id!r}: the key must be at least {MIN_KEY_BYTES} "
                              f"bytes (got {len(key)}); make one with: {how}")
    return key


def normalised(value: str) -> str:
    """What a pseudonym is computed from: NFC, trimmed, white space collapsed, case-folded (the
    normalisation a question's identity uses, so that ``Anna`` and ``  ANNA`` are one value)."""
    return normalise_text(value).casefold()


def pseudonym(key: bytes, value: str) -> str:
    """The HMAC-SHA-256 of ``value`` (:func:`normalised`) under ``key``, as 64 hex digits: what a
    pseudonymised column holds in place of ``value``."""
    return hmac.new(key, normalised(value).encode(), hashlib.sha256).hexdigest()


def keyed_identity(key: bytes, lookup: str, query: Query) -> str:
    """A question's identity under ``key`` (40 hex digits, like :meth:`Query.identity`, which it
    replaces in a pseudonymised run): the answers table's key and the id sent with the query."""
    message = f"{lookup}\x1e{query.cache_key}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:40]


def keyed_invalid_identity(key: bytes, text: str) -> str:
    """The identity of an invalid value under ``key`` (an unkeyed hash of it would be reversible)."""
    return "invalid:" + hmac.new(key, text.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Pseudonymiser:
    """A run's pseudonyms: of values, of the service's answers, of the payload a result echoes.

    :param key: the key (:func:`pseudonymisation_key`).
    """

    key: bytes = field(repr=False)

    def value(self, value: Any) -> Any:
        """``pseudonym(key, value)`` for text; anything else (None, a number) as it is."""
        return pseudonym(self.key, value) if isinstance(value, str) else value

    def result(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """An answer with every echo of the person's name replaced by its pseudonym (the map URL,
        which spells the name, dropped); the answer itself is left as it is."""
        out = {k: v for k, v in result.items() if k not in DROPPED}
        for name in ECHOED_NAMES:
            if name in out:
                out[name] = self.value(out[name])
        if isinstance(echoed := out.get("input"), Mapping):
            out["input"] = self.payload(echoed)
        if isinstance(details := out.get("details"), Mapping):
            out["details"] = {k: self.value(v) if k in ECHOED_DETAILS else v for k, v in details.items()}
        return out

    def payload(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A query object with its name field (``first_name``, ``full_name`` or ``email``) pseudonymised."""
        return {k: self.value(v) if k in NAME_KINDS else v for k, v in payload.items()}
