"""Property (issue 48, item 1): what a ``where`` sends is one boolean expression over the source's
columns, and every setting of the warehouse reads each of its literals as the check read it,
confirmed by the warehouses themselves.

Generated ``where``s mix columns, comparisons, ``AND``/``OR``/``NOT`` and parentheses with
adversarial strings (quotes, backslashes, dollar quoting, ``E''`` strings, double quotes,
comment markers, semicolons, a ``CREATE TABLE``), spelled right or wrong. Each is checked in
the dialect of PostgreSQL, MySQL, SQLite and DuckDB; where the check lets it through, what it
sends is run on that engine under each setting that changes how text is read
(PostgreSQL: ``standard_conforming_strings`` on and off; MariaDB: ``sql_mode`` empty,
``NO_BACKSLASH_ESCAPES``, ``ANSI_QUOTES,PIPES_AS_CONCAT,HIGH_NOT_PRECEDENCE``,
``EMPTY_STRING_IS_NULL,ORACLE``), through a path that refuses a second statement (psycopg's
extended protocol, unprepared, a MariaDB client without multi-statements, Python's sqlite3, DuckDB's own
statement splitter). The source holds a row for each string the check read (bound as a
parameter, never written into SQL), and rows for the ways a reader could misread it (a
backslash doubled or dropped); the rows the engine returns must be those the checked tree
selects, evaluated here.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlglot
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from airflow_provider_namelookup.warehouse.dialects.duckdb import DuckDBDialect
from airflow_provider_namelookup.warehouse.dialects.mysql import MySqlDialect
from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
from airflow_provider_namelookup.warehouse.where_clause import (
    WhereRefused,
    check_where_columns,
    checked_where,
    sqlglot_dialect,
)

COLUMNS = ("k", "name", "note")
PWNED = "pwned_props"
FRAGMENTS = ["a", "b", "Ü", " ", "'", "''", "\\", "\\\\", '"', "$", "$$", "$q$", ";", "--", "/*", "*/", "#", "E'",
             "%", "_", "\n", ")", "(", " OR 1=1", f"; CREATE TABLE {PWNED}(x int); --", "\\'"]
values = st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join)


def _spelled(value: str, how: str) -> str:
    """``value`` as a literal the way an author (or an attacker) might write it."""
    return {"standard": "'" + value.replace("'", "''") + "'",
            "raw": "'" + value + "'",
            "dollar": f"$${value}$$",
            "escape": "E'" + value.replace("'", "''") + "'",
            "double": '"' + value.replace('"', '""') + '"',
            "backslashed": "'" + value.replace("'", "\\'") + "'"}[how]


literals = st.builds(_spelled, values, st.sampled_from(["standard", "standard", "standard", "raw", "dollar",
                                                         "escape", "double", "backslashed"]))
atoms = st.one_of(
    st.builds(lambda column, op, literal: f"{column} {op} {literal}", st.sampled_from(["name", "note"]),
              st.sampled_from(["=", "<>"]), literals),
    st.builds(lambda op, number: f"k {op} {number}", st.sampled_from(["=", ">", "<="]), st.integers(-2, 40)),
)
GLUE = [" AND ", " OR ", " AND NOT ", " OR ", " AND ", ") OR (", " -- ", ";", " /* "]
conditions = st.recursive(
    atoms,
    lambda inner: st.one_of(st.builds(lambda a, glue, b: f"{a}{glue}{b}", inner, st.sampled_from(GLUE), inner),
                            inner.map(lambda c: f"NOT ({c})"), inner.map(lambda c: f"({c})")),
    max_leaves=5)


class Unevaluable(Exception):
    """The checked tree holds something this test's evaluator does not compute."""


def _value(node: exp.Expr, row: dict[str, Any]) -> Any:
    if isinstance(node, exp.Paren):
        return _value(node.this, row)
    if isinstance(node, exp.Column):
        return row[node.name.lower()]
    if isinstance(node, (exp.RawString, exp.ByteString)) or (isinstance(node, exp.Literal) and node.is_string):
        return node.this
    if isinstance(node, exp.Literal):
        return int(node.this)
    if isinstance(node, exp.Neg):
        return -_value(node.this, row)
    raise Unevaluable(type(node).__name__)


def _holds(node: exp.Expr, row: dict[str, Any]) -> bool:
    """Whether the checked tree selects ``row`` (no NULL anywhere: two-valued logic)."""
    if isinstance(node, exp.Paren):
        return _holds(node.this, row)
    if isinstance(node, exp.And):
        return _holds(node.this, row) and _holds(node.expression, row)
    if isinstance(node, exp.Or):
        return _holds(node.this, row) or _holds(node.expression, row)
    if isinstance(node, exp.Not):
        return not _holds(node.this, row)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    compare: dict[type, Callable[[Any, Any], bool]] = {
        exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b, exp.GT: lambda a, b: a > b,
        exp.LT: lambda a, b: a < b, exp.GTE: lambda a, b: a >= b, exp.LTE: lambda a, b: a <= b}
    if type(node) in compare:
        return compare[type(node)](_value(node.this, row), _value(node.expression, row))
    raise Unevaluable(type(node).__name__)


def _rows(tree: exp.Expr) -> list[tuple[int, str, str]]:
    """A row holding each string the check read, in each text column, and its misreadings."""
    strings = {str(node.this) for node in tree.walk() if isinstance(node, (exp.RawString, exp.ByteString))
               or (isinstance(node, exp.Literal) and node.is_string)}
    misread = {s.replace("\\", "\\\\") for s in strings} | {s.replace("\\", "") for s in strings} \
        | {s.replace("\\'", "'") for s in strings} | {"", "a", "plain"}
    texts = sorted(strings | misread)
    rows = [(k, text, "-") for k, text in enumerate(texts, start=1)]
    return rows + [(k, "-", text) for k, text in enumerate(texts, start=len(rows) + 1)]


@dataclass
class Engine:
    """One warehouse, reached so that a second statement is refused, and the settings it is tried under."""

    name: str
    dialect: Any
    settings: list[str]
    load: Callable[[list[tuple[int, str, str]]], None]
    select: Callable[[str, str], set[int]]
    tables: Callable[[], set[str]]


def _sqlite() -> Iterator[Engine]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE src (k INTEGER PRIMARY KEY, name TEXT, note TEXT)")

    def load(rows: list[tuple[int, str, str]]) -> None:
        conn.execute("DELETE FROM src")
        conn.executemany("INSERT INTO src VALUES (?, ?, ?)", rows)

    def select(sql: str, setting: str) -> set[int]:  # sqlite3 runs one statement, or raises
        return {row[0] for row in conn.execute(sql)}

    def tables() -> set[str]:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    yield Engine("sqlite", SqliteDialect, ["default"], load, select, tables)
    conn.close()


def _duckdb() -> Iterator[Engine]:
    import duckdb

    conn = duckdb.connect(":memory:")
    conn.execute("CREATE TABLE src (k INTEGER PRIMARY KEY, name VARCHAR, note VARCHAR)")

    def load(rows: list[tuple[int, str, str]]) -> None:
        conn.execute("DELETE FROM src")
        conn.executemany("INSERT INTO src VALUES (?, ?, ?)", rows)

    def select(sql: str, setting: str) -> set[int]:
        assert len(duckdb.extract_statements(sql)) == 1, sql  # DuckDB's own parser: one statement
        return {row[0] for row in conn.execute(sql).fetchall()}

    def tables() -> set[str]:
        return {row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}

    yield Engine("duckdb", DuckDBDialect, ["default"], load, select, tables)
    conn.close()


def _postgres() -> Iterator[Engine]:
    import psycopg

    from conftest import require_reachable

    require_reachable("postgres")
    conn = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True)
    conn.prepare_threshold = None
    table = f"where_props_{uuid.uuid4().hex[:8]}"
    conn.execute(f"CREATE TABLE {table} (k INTEGER PRIMARY KEY, name TEXT, note TEXT)")

    def load(rows: list[tuple[int, str, str]]) -> None:
        conn.execute(f"DELETE FROM {table}")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)

    def select(sql: str, setting: str) -> set[int]:
        conn.execute(f"SET standard_conforming_strings = {setting}")
        # the extended protocol (binary results), which refuses a second statement; never a prepared
        # statement, which would keep the reading of the setting it was prepared under
        query = sql.replace("FROM src", f"FROM {table}")
        return {row[0] for row in conn.execute(query, binary=True, prepare=False).fetchall()}

    def tables() -> set[str]:
        return {row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}

    yield Engine("postgres", PostgresDialect, ["on", "off"], load, select, tables)
    conn.execute("SET standard_conforming_strings = on")
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.close()


def _mariadb() -> Iterator[Engine]:
    import mysql.connector
    from mysql.connector.constants import ClientFlag

    from conftest import require_reachable

    require_reachable("mariadb")
    conn = mysql.connector.connect(host="127.0.0.1", port=3306, user="root", password="", database="test",
                                   autocommit=True, client_flags=[-ClientFlag.MULTI_STATEMENTS])
    cur: Any = conn.cursor()
    table = f"where_props_{uuid.uuid4().hex[:8]}"
    text = "VARCHAR(400) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"  # exact, as Python compares
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, name {text}, note {text})")

    def load(rows: list[tuple[int, str, str]]) -> None:
        cur.execute("SET SESSION sql_mode = DEFAULT")  # the client escapes bound values for the default mode
        cur.execute(f"DELETE FROM {table}")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)

    def select(sql: str, setting: str) -> set[int]:
        cur.execute(f"SET SESSION sql_mode = '{setting}'")
        cur.execute(sql.replace("FROM src", f"FROM {table}"))  # no parameters: sent as written, one statement
        return {int(str(row[0])) for row in cur.fetchall()}

    def tables() -> set[str]:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
        return {str(row[0]) for row in cur.fetchall()}

    modes = ["", "NO_BACKSLASH_ESCAPES", "ANSI_QUOTES,PIPES_AS_CONCAT,HIGH_NOT_PRECEDENCE",
             "EMPTY_STRING_IS_NULL,ORACLE"]
    yield Engine("mariadb", MySqlDialect, modes, load, select, tables)
    cur.execute("SET SESSION sql_mode = DEFAULT")
    cur.execute(f"DROP TABLE IF EXISTS {table}")
    conn.close()


@pytest.fixture(scope="module")
def engines() -> Iterator[list[Engine]]:
    made = [_sqlite(), _duckdb(), _postgres(), _mariadb()]
    found = [next(maker) for maker in made]
    for engine in found:  # the premise: each path refuses a second statement
        with pytest.raises(Exception):  # noqa: B017 (each driver raises its own class)
            engine.select("SELECT 1; SELECT 2", engine.settings[-1])
    yield found
    for maker in made:
        next(maker, None)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(where=conditions)
@example(where="name = $$a\\$$ OR name = $$ OR 1=1) s0; CREATE TABLE pwned_props(x int); --$$")  # the audit's
@example(where="name = 'a\\' OR note = ' OR 1=1; CREATE TABLE pwned_props(x int); --'")
@example(where="NOT name = 'x' AND note <> '' OR name = 'a\\_b' OR note = '100\\%'")
@example(where="note = 'C:\\dir' OR name = 'a\\\\b'")
@example(where="name = \"it's\" OR name = E'a\\\\b'")
def test_what_a_where_sends_is_read_by_each_warehouse_under_each_setting_as_it_was_checked(
        where: str, engines: list[Engine]) -> None:
    for engine in engines:
        try:
            checked = checked_where(where, engine.dialect)
            if checked is None:
                continue
            check_where_columns(checked, COLUMNS, "src")
        except WhereRefused:
            continue
        tree = sqlglot.parse_one(where, read=sqlglot_dialect(engine.dialect))  # the check's own reading
        rows = _rows(tree)
        try:
            expected = {k for k, name, note in rows if _holds(tree, {"k": k, "name": name, "note": note})}
        except Unevaluable:
            continue
        event(f"sent to {engine.name}")
        engine.load(rows)
        sql = f"SELECT k FROM (SELECT * FROM src) s WHERE {checked.sql}"
        for setting in engine.settings:
            selected = engine.select(sql, setting)
            assert selected == expected, (engine.name, setting, where, checked.sql,
                                          sorted(rows[k - 1] for k in selected ^ expected))
        assert PWNED not in engine.tables()
