"""Invalid values, folded into one log line per rule broken.

A table may hold thousands of rows with the same mistake (an empty name, an unknown
country); the log shows each message once, with how many rows hold it and one of them:
its key, and (``show_values``: the operators' ``log_values=True``) its value, with the
connection's token masked and only then cut
(:func:`~airflow_provider_namelookup.token_guard.shown_safely`). A value is a person's name:
by default it is not shown.

Example::

    >>> import logging
    >>> err = NameLookupValidationError("parameter-first-name-invalid", "too long")
    >>> invalid = InvalidValues(secrets=frozenset({"t0ken-secret"}))
    >>> invalid.note(err, Question(None, None, "invalid:1", err, rows=3, first_key=17, shown="x" * 60))
    >>> invalid.lines()[0]
    '3 rows (e.g. key 17): parameter-first-name-invalid: too long'
    >>> shown = InvalidValues(secrets=frozenset({"t0ken-secret"}), show_values=True)
    >>> shown.note(err, Question(None, None, "invalid:1", err, rows=3, first_key=17, shown="x" * 60))
    >>> shown.lines()[0]
    "3 rows (e.g. key 17: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'): parameter-first-name-invalid: too long"
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.engine.ports import Question
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.token_guard import mask_secrets, shown_safely

SHOWN_LENGTH = 40
"""Characters of an invalid value shown in the log."""
MESSAGES_LOGGED = 20
"""Distinct messages logged per run; the rest are counted."""


@dataclass
class _Folded:
    rows: int
    key: Any
    value: Any


class InvalidValues:
    """The invalid values of one run, by message.

    :param secrets: values never shown (the connection's token).
    :param show_values: show an example value beside its key (``log_values=True``); else a line
        names its rows by key only, so that no person's name reaches the log.
    """

    def __init__(self, secrets: frozenset[str] = frozenset(), *, show_values: bool = False) -> None:
        self.secrets = secrets
        self.show_values = show_values
        self._by_message: dict[str, _Folded] = {}

    def note(self, error: NameLookupValidationError, value: Question) -> None:
        message = mask_secrets(str(error), self.secrets)
        folded = self._by_message.get(message)
        if folded is None:
            self._by_message[message] = _Folded(value.rows, value.first_key, value.shown)
        else:
            folded.rows += value.rows

    def lines(self) -> list[str]:
        return [f"{f.rows} row{'s' if f.rows != 1 else ''} (e.g. key {self._shown(f.key)}"
                f"{': ' + self._shown(f.value) if self.show_values else ''}): {message}"
                for message, f in self._by_message.items()]

    def _shown(self, value: Any) -> str:
        return shown_safely(value, self.secrets, length=SHOWN_LENGTH)

    def log(self, logger: logging.Logger | Any, label: str) -> None:
        """Log up to :data:`MESSAGES_LOGGED` messages, and how many more there are."""
        lines = self.lines()
        for line in lines[:MESSAGES_LOGGED]:
            logger.warning("Invalid, costs nothing: %s", line)
        if len(lines) > MESSAGES_LOGGED:
            logger.warning("%d more kinds of invalid values in %s; see the error column or the results",
                           len(lines) - MESSAGES_LOGGED, label)
