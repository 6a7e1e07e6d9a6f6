"""What a ``where`` sends: the checked tree written back, then read again as every setting of the warehouse would.

The rules of a ``where`` (:mod:`~airflow_provider_namelookup.warehouse.where_clause`) judge the
tree sqlglot read from the author's text. The warehouse is sent that tree written back by
:func:`sent_text` in the warehouse's dialect, with

- every column quoted as the engine folds it;
- every string written by the dialect's
  :meth:`~airflow_provider_namelookup.warehouse.dialects.spelling.Spelling.where_string`, so that
  every setting of the engine reads the value sqlglot read (PostgreSQL's ``E'...'`` for a string
  holding a backslash), and read back alone to that value;
- every ``NOT`` before parentheses (MySQL's ``HIGH_NOT_PRECEDENCE`` reads ``NOT a = b`` as
  ``(NOT a) = b``).

Then the text itself is judged: it is read again as sqlglot reads the engine by default and as it
reads it under each of the dialect's
:attr:`~airflow_provider_namelookup.warehouse.dialects.where_spelling.WhereSpelling.readings`
(PostgreSQL with ``standard_conforming_strings = off``; MySQL with ``NO_BACKSLASH_ESCAPES``,
``ANSI_QUOTES``, ``PIPES_AS_CONCAT``; ...), and each reading must be one expression, with no
comment and no ``;``, that writes back to the very same text. A text that some setting would
read otherwise, or a string the engine cannot be sent safely, is refused (:class:`SentDiffers`,
naming the rule or the setting).

Example::

    >>> import sqlglot
    >>> from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
    >>> print(sent_text(sqlglot.parse_one("name = $$a\\\\$$ OR NOT x = 1", read="postgres"), PostgresDialect))
    "name" = E'a\\\\' OR NOT ("x" = 1)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
from airflow_provider_namelookup.warehouse.dialects.where_literals import UnwritableString

__all__ = ["SentDiffers", "sent_text", "sqlglot_dialect"]


class SentDiffers(ValueError):
    """What a ``where`` would send is not read the same way by every setting of the warehouse, or
    holds a string it cannot be sent (the message is the rule)."""


def sqlglot_dialect(dialect: WarehouseDialect | type[WarehouseDialect]) -> str:
    """sqlglot's name of a warehouse dialect's SQL (PostgreSQL's is ``postgres``)."""
    return dialect.sqlglot_name or dialect.name


def sent_text(tree: exp.Expr, dialect: WarehouseDialect | type[WarehouseDialect], *, copy: bool = True) -> str:
    """``tree`` (a checked condition, its columns already named as the engine folds them) as the
    text the warehouse is sent, once every reading of it agrees (see the module's docstring).
    ``copy=False``: ``tree`` is the caller's to spare, and is changed (each ``NOT``'s parentheses).

    :raises SentDiffers: naming the rule a string breaks, or the setting that reads the text otherwise.
    """
    kind = dialect if isinstance(dialect, type) else type(dialect)
    text = _written(tree, kind, copy=copy)
    default = type(Dialect.get_or_raise(sqlglot_dialect(kind)))
    if not _reads_alike(text, default, kind):
        raise SentDiffers("sqlglot does not read the text it would send as it was checked (write the filter more "
                          "plainly, or put it in sql=)")
    for reading in kind.where.readings:
        if reading.may_change(text) and not _reads_alike(text, reading.read, kind):
            raise SentDiffers(f"with {reading.setting}, {kind.name} would read the text it sends otherwise than it "
                              "was checked")
    return text


def _written(tree: exp.Expr, dialect: type[WarehouseDialect], *, copy: bool = True) -> str:
    if copy:
        tree = tree.copy()
    for node in list(tree.find_all(exp.Not)):
        if not isinstance(node.this, exp.Paren):
            node.set("this", exp.Paren(this=node.this))
    generator: Any = _generator(dialect)
    return str(generator(dialect=Dialect.get_or_raise(sqlglot_dialect(dialect)), identify=True)
               .generate(tree, copy=False))


def _reads_alike(text: str, read: type[Dialect], dialect: type[WarehouseDialect]) -> bool:
    """``text`` read by ``read`` is one expression, without a comment or a ``;``, written back as ``text``."""
    try:
        reader = read()
        tokens = reader.tokenize(text)
        if any(t.comments or t.token_type == TokenType.SEMICOLON for t in tokens):
            return False
        parsed = reader.parser(error_level=sqlglot.ErrorLevel.RAISE).parse(tokens, text)
        return len(parsed) == 1 and parsed[0] is not None and _written(parsed[0], dialect, copy=False) == text
    except (SqlglotError, RecursionError, SentDiffers):
        return False


_GENERATORS: dict[type[WarehouseDialect], type] = {}


def _generator(dialect: type[WarehouseDialect]) -> type:
    """The sqlglot generator of the warehouse's SQL, writing every string through :func:`_string_writer`."""
    if dialect in _GENERATORS:
        return _GENERATORS[dialect]
    write = _string_writer(dialect)
    base: Any = Dialect.get_or_raise(sqlglot_dialect(dialect)).generator_class

    class WhereGenerator(base):
        def literal_sql(self, expression: exp.Literal) -> str:
            return write(expression.this) if expression.is_string else str(super().literal_sql(expression))

        def rawstring_sql(self, expression: exp.RawString) -> str:
            return write(expression.this)

        def bytestring_sql(self, expression: exp.ByteString) -> str:  # PostgreSQL's E'...' read back
            return write(expression.this)

        def national_sql(self, expression: exp.National, prefix: str = "N") -> str:  # SQL Server's N'...' read back
            return write(expression.name)

    _GENERATORS[dialect] = WhereGenerator
    return WhereGenerator


def _string_writer(dialect: type[WarehouseDialect]) -> Callable[[str], str]:
    read = sqlglot_dialect(dialect)

    @lru_cache(maxsize=4096)
    def write(value: str) -> str:
        if "\x00" in value:
            raise SentDiffers("a string may not hold a NUL character: PostgreSQL refuses it and drivers end the "
                              "text there")
        try:
            text = dialect.where_string(value)
        except UnwritableString as err:
            raise SentDiffers(str(err)) from None
        if text == f"'{value}'" and "'" not in value and "\\" not in value:
            return text  # nothing in it that any reading could take for an escape or an end
        try:
            read_back = _string_value(sqlglot.parse_one(text, read=read))
        except SqlglotError:
            read_back = None
        if read_back != value:
            raise SentDiffers(f"a string it holds cannot be written in {dialect.name}'s SQL so that it reads back "
                              "as the same value")
        return text

    return write


def _string_value(node: exp.Expr) -> str | None:
    """The value of a string as written by a dialect's ``where_string`` (None: not a string)."""
    if (isinstance(node, exp.Literal) and node.is_string) or isinstance(node, (exp.RawString, exp.ByteString)):
        return str(node.this)
    if isinstance(node, exp.National):
        return node.name
    if isinstance(node, exp.Chr) and len(node.expressions) == 1 and node.expressions[0].is_int:
        return chr(node.expressions[0].to_py())
    if isinstance(node, exp.Repeat) and node.args.get("times") is not None and node.args["times"].is_int:
        repeated = _string_value(node.this)
        return None if repeated is None else repeated * int(node.args["times"].to_py())
    if isinstance(node, exp.Concat):
        parts = [_string_value(part) for part in node.expressions]
        return None if any(part is None for part in parts) else "".join(str(part) for part in parts)
    return None
