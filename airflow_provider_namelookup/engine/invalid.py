"""Invalid values, folded into one log line per rule broken.

A table may hold thousands of rows with the same mistake (an empty name, an unknown
country); the log shows each message once, with how many rows hold it and one of them:
its key and its value, truncated, with the connection's token masked.

Example::

    >>> import logging
    >>> invalid = InvalidValues(secrets=frozenset({"t0ken-secret"}))
    >>> err = NameLookupValidationError("parameter-first-name-invalid", "too long")
    >>> invalid.note(err, SourceValue(ref=None, raw={}, rows=3, first_key=17, shown="x" * 60))
    >>> invalid.lines()[0]
    "3 rows (e.g. key 17: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'): parameter-first-name-invalid: too long"
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError

SHOWN_LENGTH = 40
"""Characters of an invalid value shown in the log."""
MESSAGES_LOGGED = 20
"""Distinct messages logged per run; the rest are counted."""


@dataclass
class _Folded:
    rows: int
    key: Any
    value: Any


def shown_value(value: Any, secrets: frozenset[str]) -> str:
    """``value`` as a log may show it: the token masked, cut to :data:`SHOWN_LENGTH` characters."""
    if not isinstance(value, str):
        return repr(value)[:SHOWN_LENGTH]  # a number, None: no token fits in it, nothing to quote
    for secret in secrets:
        if secret:
            value = value.replace(secret, "***")
    return repr(value[:SHOWN_LENGTH] + "…" if len(value) > SHOWN_LENGTH else value)


class InvalidValues:
    """The invalid values of one run, by message.

    :param secrets: values never shown (the connection's token).
    """

    def __init__(self, secrets: frozenset[str] = frozenset()) -> None:
        self.secrets = secrets
        self._by_message: dict[str, _Folded] = {}

    def note(self, error: NameLookupValidationError, value: SourceValue) -> None:
        message = str(error)
        for secret in self.secrets:
            if secret:
                message = message.replace(secret, "***")
        folded = self._by_message.get(message)
        if folded is None:
            self._by_message[message] = _Folded(value.rows, value.first_key, value.shown)
        else:
            folded.rows += value.rows

    def lines(self) -> list[str]:
        return [f"{f.rows} row{'s' if f.rows != 1 else ''} (e.g. key {f.key!r}: "
                f"{shown_value(f.value, self.secrets)}): {message}" for message, f in self._by_message.items()]

    def log(self, logger: logging.Logger | Any, label: str) -> None:
        """Log up to :data:`MESSAGES_LOGGED` messages, and how many more there are."""
        lines = self.lines()
        for line in lines[:MESSAGES_LOGGED]:
            logger.warning("Invalid, costs nothing: %s", line)
        if len(lines) > MESSAGES_LOGGED:
            logger.warning("%d more kinds of invalid values in %s; see the error column or the results",
                           len(lines) - MESSAGES_LOGGED, label)
