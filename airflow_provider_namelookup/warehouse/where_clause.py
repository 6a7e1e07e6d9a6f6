"""The one checked path of every ``where`` in the provider: a filter over the source's own columns, or refused.

``where`` is templated, so ``params`` or a run's conf can reach it: whoever triggers a run may
choose its text. :func:`checked_where` parses it with sqlglot in the warehouse's dialect (after
templating: the operators check it at run time) and lets through only a condition built from

- the source's own columns, named bare (``country``, not ``s.country``);
- literals (strings, numbers, ``TRUE``/``FALSE``/``NULL``, ``INTERVAL '7' DAY``);
- the operators: comparisons, ``AND``/``OR``/``NOT``, arithmetic, ``||``, ``LIKE``/``ILIKE``
  (with ``ESCAPE``), ``IN (...)`` of values, ``BETWEEN``, ``IS [NOT] NULL``,
  ``IS [NOT] DISTINCT FROM``, ``CASE``;
- the pure scalar functions of the dialect's
  :attr:`~.dialects.where_spelling.WhereSpelling.functions`: ``lower``, ``upper``, ``trim``,
  ``length``, ``coalesce``, ``nullif``, ``substring``, ``abs``, date parts, casts to plain types
  and ``current_date`` (:mod:`.dialects.where_functions`), less what an engine lacks (SQLite's
  ``extract``) and plus what it adds (SQLite's and DuckDB's ``strftime``), each in the
  warehouse's own spelling (``ifnull`` and ``nvl`` are ``coalesce``; ``x::int`` is a cast).

Everything else is refused before any SQL runs, with a message that names the rule (and the
function): any other function (``query_to_xml``, ``pg_read_file``, ``pg_sleep``,
``set_config``, ``lo_import``, ``load_file`` can read other tables or files, sleep, write or
kill sessions), a subquery, a second statement, a comment, a bind parameter, a backslash
before a quote (engines disagree on whether it ends the string), a string written otherwise
than ``'...'`` (``E''``, ``U&''``, ``N''``, ``X''``), ``= NULL`` (a setting makes it ``IS NULL``
on PostgreSQL and SQL Server), a column named with its table, a cast to anything but a plain
type (``::regclass``), the service connection's token (never quoted back), and a filter longer
than :data:`MAX_LENGTH` characters or nested deeper than :data:`MAX_NESTING` parentheses.

What runs is not the text as written but the checked tree written back in the same dialect
(:mod:`~airflow_provider_namelookup.warehouse.sent_where`): every column quoted, every string
spelled so that every setting of the engine reads the value sqlglot read, every ``NOT`` before
parentheses; and that text is itself judged, read again as the engine would read it under each
setting that changes how it reads a literal or an operator (PostgreSQL's
``standard_conforming_strings``, MySQL's ``sql_mode``, ...), and refused unless every reading is
the checked condition. Before the first statement the run checks that each column exists in
the source (:func:`check_where_columns`, naming the nearest existing names), and a warehouse
error raised while the filter runs is reported without the values it quoted
(:func:`without_values`).

Example::

    >>> from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
    >>> checked_where("  signup_date >= '2024-01-01' AND Country = 'DE' ", PostgresDialect).sql
    '"signup_date" >= \\'2024-01-01\\' AND "country" = \\'DE\\''
    >>> checked_where("   ", PostgresDialect) is None
    True
    >>> checked_where("pg_sleep(1) IS NULL", PostgresDialect)
    Traceback (most recent call last):
    ...
    WhereRefused: where may call only these functions on postgresql: ...; PG_SLEEP is not one of them ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.tokens import TokenType

from airflow_provider_namelookup.token_guard import holds_secret
from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError, nearest_hint
from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
from airflow_provider_namelookup.warehouse.sent_where import SentDiffers, sent_text, sqlglot_dialect
from airflow_provider_namelookup.warehouse.unreadable import after_a_whole_condition, where_it_stopped

__all__ = ["MAX_LENGTH", "MAX_NESTING", "PLAIN_TYPES", "CheckedWhere", "WhereRefused", "check_where_columns",
           "checked_where", "filtered", "refused_secret", "sqlglot_dialect", "without_values"]

MAX_LENGTH = 100_000
"""Characters a ``where`` may have (an ``IN`` list of a few thousand keys fits)."""
MAX_NESTING = 20
"""Parentheses a ``where`` may nest (sqlglot's reader recurses once per level)."""

PLAIN_TYPES = frozenset({
    exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT,
    exp.DataType.Type.DECIMAL, exp.DataType.Type.BIGDECIMAL, exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE,
    exp.DataType.Type.CHAR, exp.DataType.Type.NCHAR, exp.DataType.Type.VARCHAR, exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.TEXT, exp.DataType.Type.DATE, exp.DataType.Type.DATETIME, exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.BOOLEAN,
})
"""What a cast in a ``where`` may cast to: numbers, text, dates and times, booleans."""

_STRUCTURE: tuple[type[exp.Expression], ...] = (
    exp.Column, exp.Identifier, exp.Literal, exp.RawString, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.Neg, exp.Not, exp.And, exp.Or,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is, exp.In,
    exp.Between, exp.Like, exp.ILike, exp.Escape,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.DPipe,
    exp.Case, exp.If, exp.Interval, exp.DataType, exp.DataTypeParam,
)
"""What a condition is built of besides function calls: columns, literals and operators."""
_UNIT_HOLDERS = (exp.Extract, exp.Interval, exp.DataType)
_OTHER_STRINGS = (exp.ByteString, exp.UnicodeString, exp.National, exp.HexString, exp.BitString, exp.Introducer)
"""Strings written otherwise than ``'...'`` (``E''``, ``U&''``, ``N''``, ``X''``, ``B''``, ``_utf8mb4'...'``)."""
_ESCAPED_QUOTE = re.compile(r"\\['\"`]")
_QUOTED = re.compile(r"\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*'|`[^`]*`")


class WhereRefused(WarehouseInputError):
    """A ``where`` that breaks one of the rules; no retry can fix it."""


@dataclass(frozen=True)
class CheckedWhere:
    """A ``where`` that keeps every rule.

    :param sql: what runs: the condition written back (:func:`~.sent_where.sent_text`), every
        column quoted, read alike under every setting of the engine.
    :param columns: the source columns it reads, as written.
    :param written: the text as the DAG author (or the run's trigger) wrote it, stripped.
    """

    sql: str
    columns: tuple[str, ...]
    written: str


def parsed_text(text: str, read: str | None, refuse: Callable[[str], WhereRefused], *, otherwise: str,
                max_nesting: int | None = None) -> tuple[list[Any], list[Any]]:
    """The tokens of ``text`` and what it parses to in ``read`` (sqlglot's name of the warehouse's
    SQL); a text sqlglot cannot read (or that nests deeper than ``max_nesting``) is refused through
    ``refuse``, saying where it stopped being readable (:func:`~.unreadable.where_it_stopped`) and,
    when ``otherwise`` says one, where else it belongs.

    >>> tokens, parsed = parsed_text("a = 1", "postgres", WhereRefused, otherwise="")
    >>> len(parsed), parsed[0].sql()
    (1, 'a = 1')
    """
    try:
        tokens = sqlglot.tokenize(text, read=read)
        if max_nesting is not None and _nesting(tokens) > max_nesting:
            raise refuse(f"it nests parentheses deeper than {max_nesting}")
        parsed = sqlglot.parse(text, read=read, error_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as err:
        raise refuse(f"{where_it_stopped(text, err)}{f'; {otherwise}' if otherwise else ''}") from None
    except RecursionError:
        raise refuse("it is nested too deeply to read") from None
    return tokens, parsed


def _refuse(where: str, rule: str) -> WhereRefused:
    shown = where if len(where) <= 200 else f"{where[:200]}... ({len(where)} characters)"
    return WhereRefused(f"{rule}; got {shown!r}")


def _condition(where: str, rule: str) -> WhereRefused:
    return _refuse(where, f"where must be one boolean expression over the source's columns: {rule}")


def checked_where(where: Any, dialect: WarehouseDialect | type[WarehouseDialect], *,
                  secrets: Collection[str] = ()) -> CheckedWhere | None:
    """``where`` checked against the rules of the module (None when blank).

    :param where: the rendered ``where`` of an operator.
    :param dialect: the warehouse's dialect (its class will do).
    :param secrets: the service connection's token: a ``where`` that holds it
        (:func:`~airflow_provider_namelookup.token_guard.holds_secret`) is refused without being quoted.
    :raises WhereRefused: naming ``where``, the rule it breaks and its text.
    """
    if where is None:
        return None
    if not isinstance(where, str):
        raise _condition(str(where), f"it is a {type(where).__name__}, not SQL text")
    text = where.strip()
    if not text:
        return None
    if holds_secret(text, secrets):
        raise refused_secret("where")
    if len(text) > MAX_LENGTH:
        raise _condition(text, f"it is longer than {MAX_LENGTH:,} characters (a longer list of keys belongs in a "
                               "table the source joins, through sql=)")
    read = sqlglot_dialect(dialect)
    tokens, parsed = parsed_text(text, read, lambda rule: _condition(text, rule), otherwise="",
                                 max_nesting=MAX_NESTING)
    if any(token.token_type == TokenType.SEMICOLON for token in tokens) or len(parsed) != 1:
        raise _condition(text, "no ';': one expression, not statements")
    if any(token.comments for token in tokens):
        raise _condition(text, "no comments (-- or /* */ or #): a comment can hide what follows it")
    root = parsed[0]
    if isinstance(root, exp.Alias):  # "x = 1 ANDD": a condition and a word after it
        raise _condition(text, after_a_whole_condition(text, root.alias))
    if root is None or isinstance(root, (exp.Query, exp.Subquery, exp.DDL, exp.DML, exp.Command)) \
            or not isinstance(root, exp.Condition):
        kind = "nothing" if root is None else "*" if isinstance(root, exp.Star) else root.key.upper()
        raise _condition(text, f"it is {kind}, not a condition")
    if _ESCAPED_QUOTE.search(text):
        raise _condition(text, "no backslash before a quote: on several engines the server's settings decide "
                               "whether it ends the string (write a quote in a string doubled: 'it''s')")
    _check_tree(text, root, dialect)
    columns = tuple(dict.fromkeys(column.name for column in root.find_all(exp.Column)))
    try:
        sql = sent_text(normalize_identifiers(root.copy(), dialect=read), dialect, copy=False)
    except SentDiffers as err:
        raise _condition(text, str(err)) from None
    except RecursionError:
        raise _condition(text, "it is nested too deeply to write back") from None
    return CheckedWhere(sql=sql, columns=columns, written=text)


def refused_secret(argument: str) -> WhereRefused:
    """The refusal of an SQL argument (``where``, ``sql``) that holds the service connection's token:
    it would reach the warehouse's statement logs; the message never quotes it."""
    return WhereRefused(f"{argument} holds the service connection's API token: it is never sent to the warehouse "
                        f"(its text is not shown)")


def _nesting(tokens: Sequence[Any]) -> int:
    depth = deepest = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    return deepest


def _check_tree(text: str, root: exp.Condition, dialect: WarehouseDialect | type[WarehouseDialect]) -> None:
    read = sqlglot_dialect(dialect)
    functions = dialect.where.functions
    allowed = {kind for kinds in functions.values() for kind in kinds}
    if root.find(exp.Query, exp.Subquery) is not None:
        raise _condition(text, "no subquery: a filter reads only the source's own columns (a join belongs in sql=)")
    if root.find(exp.Placeholder, exp.Parameter) is not None:
        raise _condition(text, "no bind parameters (?, :name, %s): nothing is bound to them; write the value")
    for node in root.walk(bfs=True):
        if isinstance(node, exp.Column) and (node.table or node.db or node.catalog):
            raise _condition(text, f"name columns bare ({node.name}, not {node.sql()}): a filter reads only the "
                                   "source's own columns")
        if isinstance(node, exp.DataType) and node.this not in PLAIN_TYPES and not node.find_ancestor(exp.Interval):
            raise _condition(text, f"a cast may only be to a plain type (numbers, text, dates and times, "
                                   f"booleans), not {node.sql()}")
        if isinstance(node, exp.Var) and isinstance(node.parent, _UNIT_HOLDERS):
            continue  # a date part or interval unit (YEAR, DAY)
        if isinstance(node, dialect.where.string_forms) and node.find(exp.Column) is None:
            continue  # a string as the dialect writes it (SQL Server's N'...')
        if isinstance(node, _OTHER_STRINGS):
            raise _condition(text, f"write a string as '...', a quote in it doubled (not {node.sql(read)}): the "
                                   "provider writes each string as every setting of the warehouse reads it alike")
        if _compares_with_null(node):
            raise _condition(text, "compare with NULL through IS NULL or IS NOT NULL: = NULL, <> NULL and IN (NULL) "
                                   "are never true, but where a setting makes them IS NULL (PostgreSQL's "
                                   "transform_null_equals, SQL Server's ANSI_NULLS OFF)")
        if isinstance(node, (*_STRUCTURE, *allowed)):
            continue
        if isinstance(node, exp.Star):
            raise _condition(text, "it reads *, not a column")
        name = node.name if isinstance(node, exp.Anonymous) else node.sql(read).split("(")[0] \
            if isinstance(node, exp.Func) else node.key
        raise _refuse(text, f"where may call only these functions on {dialect.name}: {', '.join(functions)}; "
                            f"{name.upper()} is not one of them (other functions can read other tables or files, "
                            "sleep, write or end sessions: write the filter with these, or put it in sql=)")


def _compares_with_null(node: exp.Expr) -> bool:
    """``x = NULL``, ``x <> NULL`` or ``x IN (..., NULL)``."""
    if isinstance(node, (exp.EQ, exp.NEQ)):
        return any(isinstance(side, exp.Null) for side in node.unnest_operands())
    return isinstance(node, exp.In) and any(isinstance(item, exp.Null) for item in node.expressions)


def check_where_columns(where: CheckedWhere, available: Sequence[str], source: str) -> None:
    """Each column ``where`` reads is one of the source's ``available`` columns (whatever the
    case: where it matters, the engine has the last word), else :class:`WhereRefused` naming
    it and the nearest existing names.

    >>> from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
    >>> check_where_columns(checked_where("Country = 'DE'", SqliteDialect), ["id", "country"], "t")
    >>> check_where_columns(checked_where("contry = 'DE'", SqliteDialect), ["id", "country"], "t")
    Traceback (most recent call last):
    ...
    WhereRefused: where reads contry, which is not a column of t (nearest: country); got "contry = 'DE'"
    """
    known = {name.lower() for name in available}
    for written in where.columns:
        if written.lower() not in known:
            raise _refuse(where.written, f"where reads {written}, which is not a column of {source}"
                                         f"{nearest_hint(written, available)}")


def filtered(relation: str, where: CheckedWhere | None) -> str:
    """``relation`` (a SELECT) filtered by ``where``: the only way a ``where`` enters a statement.

    The filter stands in a query of its own over the relation, so its column names are the
    relation's and never meet another table's.

    >>> filtered("SELECT * FROM customers", None)
    'SELECT * FROM customers'
    >>> from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
    >>> filtered("SELECT * FROM customers", checked_where("id > 3", SqliteDialect))
    'SELECT * FROM (SELECT * FROM customers) src WHERE "id" > 3'
    """
    return relation if where is None else f"SELECT * FROM ({relation}) src WHERE {where.sql}"


def without_values(message: str) -> str:
    """A warehouse's message with what it quoted (values it computed, and names) left out.

    >>> without_values('invalid input syntax for type integer: "Anna"')
    'invalid input syntax for type integer: "…"'
    >>> without_values("Truncated incorrect INTEGER value: 'Anna'")
    "Truncated incorrect INTEGER value: '…'"
    """
    return _QUOTED.sub(lambda quoted: f"{quoted.group(0)[0]}…{quoted.group(0)[-1]}", message)
