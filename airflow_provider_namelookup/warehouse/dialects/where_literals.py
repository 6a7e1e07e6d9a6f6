"""How a ``where``'s strings are written for a warehouse, and the settings its text is read under.

What runs of a ``where`` is the checked tree written back in the warehouse's dialect
(:mod:`~airflow_provider_namelookup.warehouse.sent_where`). Some engines read one text in more
than one way, as a setting of the server, the database, the role or the session says: with
PostgreSQL's ``standard_conforming_strings = off`` a backslash in ``'...'`` escapes the quote
after it, so ``'a\\' OR ...`` no longer ends where sqlglot read it end. A dialect therefore says

- :attr:`~.where_spelling.WhereSpelling.readings` (a dialect's ``where``): each setting of its engine that changes how a
  literal or an operator is read, as a :class:`WhereReading`, a sqlglot dialect that reads text
  the way the engine does with that setting. What a ``where`` sends must read the same under
  each, and under sqlglot's own reading of the engine's defaults;
- :meth:`~.spelling.Spelling.where_string`: how a string is written so that every setting reads
  the same value (PostgreSQL writes one holding a backslash as ``E'...'``, which no setting reads
  otherwise), or :class:`UnwritableString` naming the rule, when the engine has no such spelling.

Example::

    >>> from sqlglot.dialects.postgres import Postgres
    >>> reading = backslash_escapes("standard_conforming_strings = off", Postgres, "'", "\\\\")
    >>> import sqlglot
    >>> sqlglot.parse_one("x = 'a\\\\' OR y = ' AND z = 1", read=reading.read).sql("postgres")
    "x = 'a'' OR y = ' AND z = 1"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot.dialects.dialect import Dialect

__all__ = ["UnwritableString", "WhereReading", "backslash_escapes", "double_pipe_concatenates", "quotes_as"]


class UnwritableString(ValueError):
    """A string the warehouse cannot be sent so that every setting of it reads the same value
    (the message is the rule, naming the setting)."""


@dataclass(frozen=True)
class WhereReading:
    """One setting of an engine that changes how SQL text is read.

    :param setting: the setting as its engine's documentation names it (``sql_mode NO_BACKSLASH_ESCAPES``).
    :param read: a sqlglot dialect that reads text as the engine does with that setting.
    :param marks: what a text must hold for the setting to change its reading (a backslash, a
        double quote, ``||``): a text holding none is read as by default.
    """

    setting: str
    read: type[Dialect]
    marks: tuple[str, ...]

    def may_change(self, text: str) -> bool:
        """Whether ``text`` holds one of :attr:`marks`."""
        return any(mark in text for mark in self.marks)


def _variant(base: type[Dialect], name: str, dialect: dict[str, Any] | None = None,
             tokenizer: dict[str, Any] | None = None) -> type[Dialect]:
    """``base`` with some of its dialect's and its tokenizer's settings changed (sqlglot registers
    the class under ``name`` in lower case)."""
    attributes: dict[str, Any] = dict(dialect or {})
    if tokenizer:
        attributes["Tokenizer"] = type("Tokenizer", (base.tokenizer_class,), tokenizer)
    return type(name, (base,), attributes)


def backslash_escapes(setting: str, base: type[Dialect], *escapes: str) -> WhereReading:
    """``setting``: ``base`` reading a string's escapes as ``escapes`` (with ``\\``: a backslash
    escapes what follows it; without: a backslash is a character like another)."""
    suffix = "Backslash" if "\\" in escapes else "NoBackslash"
    read = _variant(base, f"NameLookup{base.__name__}{suffix}Escapes", tokenizer={"STRING_ESCAPES": list(escapes)})
    return WhereReading(setting, read, ("\\",))


def quotes_as(setting: str, base: type[Dialect], *, strings: list[Any], identifiers: list[Any]) -> WhereReading:
    """``setting``: ``base`` reading ``strings`` as a string's quotes and ``identifiers`` as a name's
    (MySQL's ``ANSI_QUOTES``: ``"`` quotes names)."""
    marks = "".join(str(mark) for mark in identifiers).encode().hex()
    read = _variant(base, f"NameLookup{base.__name__}Quotes{marks}",
                    tokenizer={"QUOTES": strings, "IDENTIFIERS": identifiers})
    before = base.tokenizer_class
    moved = (_openings(before.QUOTES) ^ _openings(strings)) | (_openings(before.IDENTIFIERS) ^ _openings(identifiers))
    return WhereReading(setting, read, tuple(sorted(moved)))


def _openings(marks: list[Any]) -> set[str]:
    """The opening marks of a tokenizer's ``QUOTES`` or ``IDENTIFIERS`` (a mark, or its ``(open, close)``)."""
    return {mark if isinstance(mark, str) else mark[0] for mark in marks}


def double_pipe_concatenates(setting: str, base: type[Dialect]) -> WhereReading:
    """``setting``: ``base`` reading ``||`` as string concatenation (MySQL's ``PIPES_AS_CONCAT``; by
    default, ``OR``)."""
    read = _variant(base, f"NameLookup{base.__name__}PipesConcat", dialect={"DPIPE_IS_STRING_CONCAT": True})
    return WhereReading(setting, read, ("||",))
