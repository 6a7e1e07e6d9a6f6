"""A table source's ``where``: one boolean expression over the source's own rows, or refused.

``where`` is templated, so ``params`` or a run's conf can reach it; written into the
statement as it is, ``id > 0) OR (1=1`` or ``1=1; DROP TABLE t`` would change the
statement's shape. :func:`checked_where` parses it with sqlglot in the warehouse's dialect
(after templating: the operator builds its source at run time) and lets through only one
expression that can stand as a condition. It refuses:

- what does not parse as one expression (a closing parenthesis that closes nothing,
  ``ORDER BY``, a trailing alias);
- ``;`` anywhere outside a string (a second statement, or an empty one);
- comments (``--``, ``/* */``, MySQL's ``#``): a comment can hide the rest of the
  statement, and a filter needs none;
- a statement instead of a condition (``SELECT``, ``UNION``, ``DROP``, ``*``);
- a subquery anywhere (``id IN (SELECT ...)``, ``EXISTS (...)``): it would let a value
  from ``params`` or conf read any table the connection may read, one row's fate at a
  time, while a filter only needs the source's own columns. A join belongs in ``sql=``.

- bind parameters (``?``, ``:name``, ``%s``): nothing is bound to them;
- a backslash before a quote: on several engines whether it escapes the quote depends on
  the server's settings (MySQL's ``NO_BACKSLASH_ESCAPES``, PostgreSQL's
  ``standard_conforming_strings``, Spark's ``escapedStringLiterals``), so sqlglot could read
  a string where the engine reads code. Write the quote doubled (``'it''s'``), or on
  BigQuery in a double-quoted string (``"it's"``).

Function calls stay allowed (``lower(name) LIKE 'a%'``): what a function may do is the
warehouse's permissions' business, as for every statement of the connection's user. The
text is then run as written, only checked: a filter means what its author wrote.

Example::

    >>> from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
    >>> checked_where("  signup_date >= '2024-01-01' AND country = 'DE' ", PostgresDialect)
    "signup_date >= '2024-01-01' AND country = 'DE'"
    >>> checked_where("   ", PostgresDialect) is None
    True
    >>> checked_where("id > 0) OR (1=1", PostgresDialect)
    Traceback (most recent call last):
    ...
    WhereRefused: where must be one boolean expression over the source's columns: it does not parse as one postgres ...
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect

__all__ = ["WhereRefused", "checked_where", "sqlglot_dialect"]

_STATEMENTS = (exp.Query, exp.Subquery, exp.DDL, exp.DML, exp.Command)
_ESCAPED_QUOTE = re.compile(r"\\['\"`]")


class WhereRefused(WarehouseInputError):
    """A ``where`` that is not one boolean expression; no retry can fix it."""


def sqlglot_dialect(dialect: WarehouseDialect | type[WarehouseDialect]) -> str:
    """sqlglot's name of a warehouse dialect's SQL (PostgreSQL's is ``postgres``)."""
    return dialect.sqlglot_name or dialect.name


def _refuse(where: str, rule: str) -> WhereRefused:
    return WhereRefused(f"where must be one boolean expression over the source's columns: {rule}; got {where!r}")


def checked_where(where: Any, dialect: WarehouseDialect | type[WarehouseDialect]) -> str | None:
    """``where`` stripped (None when blank), once it is one boolean expression in ``dialect``.

    :param where: the rendered ``where`` of a table operator.
    :param dialect: the warehouse's dialect (its class will do).
    :raises WhereRefused: naming ``where``, the rule it breaks and its text.
    """
    if where is None:
        return None
    if not isinstance(where, str):
        raise _refuse(str(where), f"it is a {type(where).__name__}, not SQL text")
    text = where.strip()
    if not text:
        return None
    read = sqlglot_dialect(dialect)
    try:
        tokens = sqlglot.tokenize(text, read=read)
        parsed = sqlglot.parse(text, read=read, error_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _refuse(text, f"it does not parse as one {read} expression ({first}); a filter sqlglot "
                            "cannot read belongs in sql=") from None
    if any(token.token_type == TokenType.SEMICOLON for token in tokens) or len(parsed) != 1:
        raise _refuse(text, "no ';': one expression, not statements")
    if any(token.comments for token in tokens):
        raise _refuse(text, "no comments (-- or /* */ or #): a comment can hide what follows it")
    root = parsed[0]
    if root is None or isinstance(root, _STATEMENTS) or not isinstance(root, exp.Condition):
        kind = "nothing" if root is None else "*" if isinstance(root, exp.Star) else root.key.upper()
        raise _refuse(text, f"it is {kind}, not a condition")
    if root.find(exp.Query, exp.Subquery) is not None:
        raise _refuse(text, "no subquery: a filter reads only the source's own columns (a join belongs in sql=)")
    if root.find(exp.Placeholder, exp.Parameter) is not None:
        raise _refuse(text, "no bind parameters (?, :name, %s): nothing is bound to them; write the value")
    if _ESCAPED_QUOTE.search(text):
        raise _refuse(text, "no backslash before a quote: on several engines the server's settings decide whether "
                            "it ends the string (write a quote in a string doubled: 'it''s')")
    return text
