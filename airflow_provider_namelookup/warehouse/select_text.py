"""An operator's ``sql`` argument: one read-only query, or refused before it runs.

``sql`` (the table operators' source, the evaluation's rows) is the DAG author's own SQL, as
in common-sql's ``SQLExecuteQueryOperator``: it may join and call whatever the connection's
user may, and it runs as written. What this check adds is its shape, so that a value templated
into it (``{{ params.x }}``) cannot turn one query into something else. :func:`checked_select`
parses it with sqlglot in the warehouse's dialect and refuses:

- text that does not read as one statement (the message says where it stopped), or several
  statements (a ``;`` other than one at the end);
- anything but a query (``SELECT``, ``WITH``, ``UNION``...): ``INSERT``, ``DROP``,
  ``COPY``, ``CALL``, a ``WITH`` that modifies data, ``SELECT ... INTO`` (which creates a
  table) or ``FOR UPDATE`` (which locks rows);
- bind parameters (``?``, ``:name``, ``%s``): nothing is bound to them;
- MySQL's and MariaDB's executable comments (``/*! ... */``, ``/*M! ... */``, ``/*M!50100 ... */``:
  comments to sqlglot, code to the server) and a backslash before a quote (engines disagree on
  whether it ends the string);
- a comment inside a comment (``/* a /* b */ c */``): PostgreSQL and DuckDB end it at the last
  ``*/``, SQLite and MySQL at the first, so what one engine reads as a comment another runs;
- the service connection's token (it would reach the warehouse's statement logs).

The text is read as its engine tokenises it: sqlglot's reading of the warehouse's dialect, which
knows where each engine's comments end (MySQL's ``--`` wants a space after it, ``#`` starts one;
SQLite's and MySQL's block comments do not nest), and the rules above leave no comment whose end
engines disagree on (``tests/warehouse/test_select_text.py`` runs each kind on the engines).

Values from a run's trigger belong in ``where`` instead, whose rules are stricter
(:mod:`~airflow_provider_namelookup.warehouse.where_clause`).

Example::

    >>> checked_select("SELECT id, name FROM people WHERE active;", "postgres")
    'SELECT id, name FROM people WHERE active'
    >>> checked_select("SELECT 1; DROP TABLE people", "postgres")
    Traceback (most recent call last):
    ...
    airflow_provider_namelookup.warehouse.where_clause.WhereRefused: sql must be one query that reads: ...
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType

from airflow_provider_namelookup.token_guard import holds_secret
from airflow_provider_namelookup.warehouse.where_clause import WhereRefused, parsed_text, refused_secret

__all__ = ["checked_select"]

_WRITES = (exp.DML, exp.DDL, exp.Command, exp.Into, exp.Lock, exp.Copy)
_ESCAPED_QUOTE = re.compile(r"\\['\"`]")
_EXECUTABLE_COMMENT = re.compile(r"/\*M?!", re.IGNORECASE)


def _refuse(sql: str, rule: str) -> WhereRefused:
    shown = sql if len(sql) <= 300 else f"{sql[:300]}... ({len(sql)} characters)"
    return WhereRefused(f"sql must be one query that reads: {rule}; got {shown!r}")


def checked_select(sql: Any, read: str | None, *, secrets: Collection[str] = ()) -> str:
    """``sql`` stripped of blanks and one trailing ``;``, once it is one read-only query.

    :param sql: the rendered ``sql`` argument.
    :param read: sqlglot's name of the warehouse's SQL (None: sqlglot's own, for a warehouse the
        table operators do not know).
    :param secrets: the service connection's token: an ``sql`` that holds it is refused unquoted.
    :raises WhereRefused: naming ``sql``, the rule it breaks and its text (no retry can fix it).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise _refuse(str(sql), "it is empty" if isinstance(sql, str) else f"it is a {type(sql).__name__}")
    if holds_secret(sql.strip(), secrets):
        raise refused_secret("sql")
    text = sql.strip()
    if text.endswith(";"):
        text = text[:-1].rstrip()
    if _EXECUTABLE_COMMENT.search(text):
        raise _refuse(text, "no /*! ... */ or /*M! ... */ comment: MySQL and MariaDB run what it holds")
    if _ESCAPED_QUOTE.search(text):
        raise _refuse(text, "no backslash before a quote: on several engines the server's settings decide whether "
                            "it ends the string (write a quote in a string doubled: 'it''s')")
    tokens, statements = parsed_text(
        text, read, lambda rule: _refuse(text, rule),
        otherwise="a query the warehouse runs but this check cannot read can be made a view and given as "
                  "source_table")
    if any(token.token_type == TokenType.SEMICOLON for token in tokens) or len(statements) != 1:
        raise _refuse(text, "one statement: no ';' but one at the end")
    if any("/*" in comment for token in tokens for comment in token.comments):
        raise _refuse(text, "no comment inside a comment (/* a /* b */ c */): PostgreSQL and DuckDB end it at its "
                            "last */, SQLite and MySQL at its first, and run the rest")
    root = statements[0]
    if not isinstance(root, exp.Query):
        raise _refuse(text, f"it is {'nothing' if root is None else root.key.upper()}, not a query")
    if (write := next(iter(root.find_all(*_WRITES)), None)) is not None:
        raise _refuse(text, f"it holds {write.key.upper()}, which writes or locks")
    if root.find(exp.Placeholder, exp.Parameter) is not None:
        raise _refuse(text, "no bind parameters (?, :name, %s): nothing is bound to them; write the value")
    return text
