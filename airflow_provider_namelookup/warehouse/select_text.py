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
- MySQL's executable comments (``/*! ... */``: comments to sqlglot, code to MySQL) and a
  backslash before a quote (engines disagree on whether it ends the string).

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
from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType

from airflow_provider_namelookup.warehouse.where_clause import WhereRefused, parsed_text

__all__ = ["checked_select"]

_WRITES = (exp.DML, exp.DDL, exp.Command, exp.Into, exp.Lock, exp.Copy)
_ESCAPED_QUOTE = re.compile(r"\\['\"`]")


def _refuse(sql: str, rule: str) -> WhereRefused:
    shown = sql if len(sql) <= 300 else f"{sql[:300]}... ({len(sql)} characters)"
    return WhereRefused(f"sql must be one query that reads: {rule}; got {shown!r}")


def checked_select(sql: Any, read: str | None) -> str:
    """``sql`` stripped of blanks and one trailing ``;``, once it is one read-only query.

    :param sql: the rendered ``sql`` argument.
    :param read: sqlglot's name of the warehouse's SQL (None: sqlglot's own, for a warehouse the
        table operators do not know).
    :raises WhereRefused: naming ``sql``, the rule it breaks and its text (no retry can fix it).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise _refuse(str(sql), "it is empty" if isinstance(sql, str) else f"it is a {type(sql).__name__}")
    text = sql.strip()
    if text.endswith(";"):
        text = text[:-1].rstrip()
    if "/*!" in text:
        raise _refuse(text, "no /*! ... */ comment: MySQL runs what it holds")
    if _ESCAPED_QUOTE.search(text):
        raise _refuse(text, "no backslash before a quote: on several engines the server's settings decide whether "
                            "it ends the string (write a quote in a string doubled: 'it''s')")
    tokens, statements = parsed_text(
        text, read, lambda rule: _refuse(text, rule),
        otherwise="a query the warehouse runs but this check cannot read can be made a view and given as "
                  "source_table")
    if any(token.token_type == TokenType.SEMICOLON for token in tokens) or len(statements) != 1:
        raise _refuse(text, "one statement: no ';' but one at the end")
    root = statements[0]
    if not isinstance(root, exp.Query):
        raise _refuse(text, f"it is {'nothing' if root is None else root.key.upper()}, not a query")
    if (write := next(iter(root.find_all(*_WRITES)), None)) is not None:
        raise _refuse(text, f"it holds {write.key.upper()}, which writes or locks")
    if root.find(exp.Placeholder, exp.Parameter) is not None:
        raise _refuse(text, "no bind parameters (?, :name, %s): nothing is bound to them; write the value")
    return text
