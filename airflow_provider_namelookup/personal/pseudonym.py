"""Pseudonyms of people's values: a keyed hash (HMAC-SHA-256) with the key outside the warehouse.

Example::

    key = pseudonymisation_key(DEFAULT_PSEUDONYMISATION_CONN_ID)   # the connection's password
    pseudonym(key, " Anna ") == pseudonym(key, "ANNA")             # True: the normalised value is hashed
"""

from __future__ import annotations

import hashlib
import hmac

from airflow_provider_namelookup.validation import normalise_text

DEFAULT_PSEUDONYMISATION_CONN_ID = "namelookup_pseudonymisation"


def pseudonymisation_key(conn_id: str) -> bytes:
    """The key held in the password of the Airflow connection ``conn_id``."""
    from airflow.sdk import BaseHook

    password = BaseHook.get_connection(conn_id).password
    if not password:
        raise ValueError(f"pseudonymisation_conn_id {conn_id!r} holds no key: set its password to a long random "
                         f"secret (e.g. python -c 'import secrets; print(secrets.token_hex(32))')")
    return password.encode()


def pseudonym(key: bytes, value: str) -> str:
    """The hex HMAC-SHA-256 of ``value`` normalised as a query's cache key is (NFC, trimmed, whitespace
    collapsed, case-folded)."""
    return hmac.new(key, normalise_text(value).casefold().encode(), hashlib.sha256).hexdigest()
