"""Where a ``where`` (or an ``sql``) stopped being readable, said the way its author wrote it.

The parser's own report names its grammar's classes (``Required keyword: 'expression' missing
for <class 'sqlglot.expressions.core.And'>``); a DAG author needs the place (line and
column), the words around it, and, where the word just before the place is one letter away
from a keyword of a condition (``ANDD``, ``ORR``, ``BETWEN``), that keyword.

Example::

    >>> import sqlglot
    >>> try:
    ...     sqlglot.parse("country = 'DE' ANDD signup > 3", read="postgres")
    ... except sqlglot.errors.SqlglotError as err:
    ...     print(where_it_stopped("country = 'DE' ANDD signup > 3", err))
    it cannot be read at "signup" (line 1, column 21), after "country = 'DE' ANDD": is ANDD meant to be AND?
"""

from __future__ import annotations

import difflib
import re

from sqlglot.errors import ParseError, SqlglotError

__all__ = ["KEYWORDS", "after_a_whole_condition", "where_it_stopped"]

KEYWORDS = ("AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "ILIKE", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE",
            "END", "TRUE", "FALSE", "DISTINCT", "FROM", "ESCAPE", "INTERVAL", "CAST", "AS", "SELECT", "WHERE")
"""The keywords a filter (or a query) is written with: what a misspelt word is compared with."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")
_SHOWN = 40
"""Characters of the text before the place that a message shows."""


def _position(line: int, column: int) -> str:
    return f"line {line}, column {column}"


def _before(context: str) -> str:
    """The text before the place, on its line, at most :data:`_SHOWN` characters of it."""
    text = context.rstrip().rsplit("\n", 1)[-1]
    return text if len(text) <= _SHOWN else f"...{text[-_SHOWN:].lstrip()}"


def _meant(*words: str) -> str:
    """``: is ANDD meant to be AND?`` for the first of ``words`` that is not a keyword and is one
    letter or so away from one; nothing when none is."""
    for word in words:
        if not _WORD.match(word) or word.upper() in KEYWORDS:
            continue
        near = difflib.get_close_matches(word.upper(), KEYWORDS, n=1, cutoff=0.75)
        if near:
            return f": is {word} meant to be {near[0]}?"
    return ""


def _unclosed_quote(text: str) -> str | None:
    """Where a quote (``'``, ``"`` or a backquote) is opened and never closed, or None."""
    opened: tuple[str, int] | None = None
    for index, char in enumerate(text):
        if opened is None:
            if char in "'\"`":
                opened = (char, index)
        elif char == opened[0]:
            opened = None  # a doubled quote inside a string closes and opens again: the same result
    if opened is None:
        return None
    before = text[:opened[1]]
    line, column = before.count("\n") + 1, opened[1] - (before.rfind("\n") + 1) + 1
    return f"the quote {opened[0]} at {_position(line, column)} is never closed"


def where_it_stopped(text: str, err: SqlglotError) -> str:
    """What a reader of ``text`` (which failed with ``err``) should look at: the place, the words
    before it, the keyword a misspelt word next to it may have meant.

    >>> import sqlglot
    >>> def said(text):
    ...     try:
    ...         sqlglot.parse(text, read="postgres")
    ...     except sqlglot.errors.SqlglotError as err:
    ...         print(where_it_stopped(text, err))
    >>> said("country = 'DE' AND")
    it ends too early: something must follow "AND" (line 1, column 16)
    >>> said("country IN ('DE', 'AT'")
    a ")" is missing after "'AT'" (line 1, column 19)
    >>> said("country = 'DE")
    the quote ' at line 1, column 11 is never closed
    >>> said("x BETWEN 1 AND 3")
    it cannot be read at "1" (line 1, column 10), after "x BETWEN": is BETWEN meant to be BETWEEN?
    """
    if not isinstance(err, ParseError) or not err.errors:
        return _unclosed_quote(text) or "it cannot be split into SQL words"
    first = err.errors[0]
    highlight = str(first.get("highlight") or "")
    line = int(first.get("line") or 1)
    column = max(1, int(first.get("col") or 1) - len(highlight) + 1)
    before = _before(str(first.get("start_context") or ""))
    description = str(first.get("description") or "")
    meant = _meant(*reversed(before.split()[-2:]), highlight)  # the words just before the place, and its own
    if description.startswith("Expecting "):
        expected = description.removeprefix("Expecting ").strip()
        return f'a "{expected}" is missing after "{highlight}" ({_position(line, column)}){meant}'
    if not str(first.get("end_context") or "").strip() and description.startswith("Required keyword"):
        return f'it ends too early: something must follow "{highlight}" ({_position(line, column)}){meant}'
    after = f', after "{before}"' if before.strip() else ""
    return f'it cannot be read at "{highlight}" ({_position(line, column)}){after}{meant}'


def after_a_whole_condition(text: str, word: str) -> str:
    """What to say of a ``word`` that follows a whole condition (the parser reads ``x = 1 ANDD``
    as ``x = 1`` named ``ANDD``): where it stands, and the keyword it may have meant.

    >>> after_a_whole_condition("country = 'DE' ANDD", "ANDD")
    'it cannot be read past "ANDD" (line 1, column 16), which follows a whole condition: is ANDD meant to be AND?'
    """
    found = [m.start() for m in re.finditer(rf"(?<![A-Za-z_0-9]){re.escape(word)}(?![A-Za-z_0-9])", text, re.I)]
    place = ""
    if found:
        before = text[:found[-1]]
        place = f" ({_position(before.count(chr(10)) + 1, found[-1] - (before.rfind(chr(10)) + 1) + 1)})"
    return f'it cannot be read past "{word}"{place}, which follows a whole condition{_meant(word)}'
