"""A table source's ``where`` is one boolean expression or refused (issue 25, item 6): checked
by sqlglot in the warehouse's dialect, after templating, before anything runs or is spent."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects import WAREHOUSES
from airflow_provider_namelookup.warehouse.where_clause import (
    WhereRefused,
    check_where_columns,
    checked_where,
    without_values,
)

EVERY_DIALECT = {w.name: w.dialect_class() for w in WAREHOUSES}

FILTERS = ["customer_id % 2 = 0", "customer_id >= 10 AND customer_id < 20", "signup_date >= '2026-01-01'",
           "name LIKE 'A%' OR country IN ('DE', 'AT')", "lower(name) <> 'x' AND country IS NOT NULL",
           "NOT (customer_id BETWEEN 1 AND 5)", "note = 'a; -- not a comment /* nor this */'",
           "COALESCE(country, 'DE') = 'DE'", "CASE WHEN customer_id > 5 THEN 1 ELSE 0 END = 1",
           "upper(trim(name)) = 'ANNA' AND length(name) > 2", "NULLIF(country, '') IS NULL",
           "abs(customer_id - 5) < 3", "CAST(customer_id AS VARCHAR(10)) = '5'", "substring(name, 1, 1) = 'A'",
           "EXTRACT(YEAR FROM signup_date) = 2026", "signup_date < CURRENT_DATE", "-customer_id < 0"]


@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize("where", FILTERS)
def test_filters_pass_and_are_written_back_with_their_columns_quoted(where: str, dialect: str) -> None:
    if where.startswith("EXTRACT") and dialect == "sqlite":  # SQLite has none: its where may call strftime
        with pytest.raises(WhereRefused, match="EXTRACT is not one of them"):
            checked_where(where, EVERY_DIALECT[dialect])
        return
    checked = checked_where(f"  {where}\n", EVERY_DIALECT[dialect])
    assert checked is not None and checked.written == where
    assert set(checked.columns) <= {"customer_id", "signup_date", "name", "country", "note"}
    assert set(checked.columns) and all(column in where for column in checked.columns)
    again = checked_where(checked.sql, EVERY_DIALECT[dialect])  # what runs keeps the rules too
    assert again is not None and again.sql == checked.sql


@pytest.mark.parametrize("blank", [None, "", "   \n"])
def test_no_where_is_none(blank: str | None) -> None:
    assert checked_where(blank, EVERY_DIALECT["sqlite"]) is None


def test_what_runs_is_the_checked_tree_written_back_not_the_text() -> None:
    """A column is quoted as the engine folds it (PostgreSQL: lower case; Snowflake: upper), so a
    word the engine would read as a function (``current_user``) is read as the column it was
    checked as; a string is written back as sqlglot read it."""
    assert checked_where("Country = 'it''s' AND current_setting = 'x'", EVERY_DIALECT["postgresql"]).sql == (
        "\"country\" = 'it''s' AND \"current_setting\" = 'x'")
    assert checked_where("country = 'DE'", EVERY_DIALECT["snowflake"]).sql == "\"COUNTRY\" = 'DE'"
    assert checked_where("x = $$a'b$$", EVERY_DIALECT["postgresql"]).sql == "\"x\" = 'a''b'"
    assert checked_where("ifnull(country, 'DE') = 'DE'", EVERY_DIALECT["mysql"]).sql == (
        "COALESCE(`country`, 'DE') = 'DE'")


REFUSED_CONDITIONS = [
    # the audit's: a closing parenthesis escaping
    ("id > 0) OR (1=1", 'it cannot be read at ")" (line 1, column 7), after "id > 0"'),
    ("id > 0) UNION SELECT customer_id, name, country FROM other WHERE (1=1", "it cannot be read at"),
    ("id > 0 ORDER BY 1", 'it cannot be read at "ORDER BY" (line 1, column 8)'),
    ("id > 0; DROP TABLE customers", "no ';'"),
    ("id > 0;", "no ';'"),
    ("id > 0 -- ) OR (1=1", "no comments"),
    ("id > 0 /* ) OR (1=1 */", "no comments"),
    ("/* hidden */ id > 0", "no comments"),
    ("SELECT 1", "it is SELECT, not a condition"),
    ("id > 0 UNION ALL SELECT 1", "it is UNION, not a condition"),
    ("DROP TABLE customers", "it is DROP, not a condition"),
    ("*", "it is *, not a condition"),
    ("id > 0 x", 'it cannot be read past "x" (line 1, column 8), which follows a whole condition'),
    ("customer_id IN (SELECT id FROM other)", "no subquery"),
    ("EXISTS (SELECT 1 FROM other WHERE other.id = 1)", "no subquery"),
    ("(SELECT COUNT(*) FROM other) > 0", "no subquery"),
    ("customer_id > ?", "no bind parameters"),
    ("s.country = 'DE'", "name columns bare (country, not s.country)"),
    ("other.secrets.s = 'x'", "name columns bare (s, not other.secrets.s)"),
]


@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize(("where", "rule"), REFUSED_CONDITIONS)
def test_anything_else_is_refused_naming_where_the_rule_and_the_text(where: str, rule: str, dialect: str) -> None:
    with pytest.raises(WhereRefused) as info:
        checked_where(where, EVERY_DIALECT[dialect])
    message = str(info.value)
    assert message.startswith("where must be one boolean expression over the source's columns: ")
    assert rule in message and message.endswith(f"; got {where!r}")
    assert isinstance(info.value, WarehouseInputError)  # failed at once, without the task's retries


TYPOS = [  # issue 50, item 5: what a user needs is the place and the word, not the parser's name nor sql=
    ("country = 'DE' ANDD signup_date > '2026-01-01'",
     'it cannot be read at "signup_date" (line 1, column 21), after "country = \'DE\' ANDD": is ANDD meant to be AND?'),
    ("country = 'DE' ANDD", 'it cannot be read past "ANDD" (line 1, column 16), which follows a whole condition: '
                            "is ANDD meant to be AND?"),
    ("country = 'DE'\nORR customer_id > 3", 'it cannot be read at "customer_id" (line 2, column 5), after "ORR": '
                                             "is ORR meant to be OR?"),
    ("name LIKEE 'A%'", 'it cannot be read at "\'A%\'" (line 1, column 12), after "name LIKEE": '
                        "is LIKEE meant to be LIKE?"),
    ("customer_id BETWEN 1 AND 5", 'after "customer_id BETWEN": is BETWEN meant to be BETWEEN?'),
    ("country = 'DE' AND", 'it ends too early: something must follow "AND" (line 1, column 16)'),
    ("country IN ('DE', 'AT'", 'a ")" is missing after "\'AT\'" (line 1, column 19)'),
    ("country = 'DE", "the quote ' at line 1, column 11 is never closed"),
]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql", "duckdb", "snowflake", "bigquery"])
@pytest.mark.parametrize(("where", "said"), TYPOS)
def test_a_typo_is_named_where_it_stands_with_the_keyword_it_may_mean(where: str, said: str, dialect: str) -> None:
    """Before: ``it does not parse as one postgres expression (Invalid expression / Unexpected token. Line 1,
    Col: 26.); a filter sqlglot cannot read belongs in sql=``: the parser's name, its own words, and
    ``sql=``, which would not read the typo either."""
    with pytest.raises(WhereRefused) as info:
        checked_where(where, EVERY_DIALECT[dialect])
    message = str(info.value)
    assert said in message and message.endswith(f"; got {where!r}")
    assert "sqlglot" not in message.lower() and "sql=" not in message and "parse" not in message


AUDIT_FUNCTIONS = [  # issue 32, F2: each reproduced on PostgreSQL through a table operator's where
    ("CAST(query_to_xml('select s from secrets',true,true,'')::text AS int) = 1", "QUERY_TO_XML"),
    ("table_to_xml('secrets', true, true, '')::text LIKE '%X%'", "TABLE_TO_XML"),
    ("length(pg_read_file('/etc/hostname')) > 0", "PG_READ_FILE"),
    ("lo_import('/etc/hostname') > 0", "LO_IMPORT"),
    ("set_config('search_path', 'evil', false) IS NOT NULL", "SET_CONFIG"),
    ("pg_sleep(0.2) IS NULL", "PG_SLEEP"),
    ("pg_terminate_backend(1234)", "PG_TERMINATE_BACKEND"),
    ("current_user = 'postgres'", "CURRENT_USER"),
    ("version() LIKE 'PostgreSQL%'", "VERSION"),
    ("regexp_replace(name, '(a+)+$', '') = ''", "REGEXP_REPLACE"),
]


@pytest.mark.parametrize(("where", "function"), AUDIT_FUNCTIONS)
def test_a_function_off_the_list_is_refused_naming_it_and_the_list(where: str, function: str) -> None:
    with pytest.raises(WhereRefused) as info:
        checked_where(where, EVERY_DIALECT["postgresql"])
    message = str(info.value)
    assert message.startswith("where may call only these functions on postgresql: lower, upper, trim, length, ")
    assert f"; {function} is not one of them" in message and message.endswith(f"; got {where!r}")


@pytest.mark.parametrize(("dialect", "where", "function"), [
    ("mysql", "load_file('/etc/passwd') IS NOT NULL", "LOAD_FILE"), ("mysql", "sleep(1) = 0", "SLEEP"),
    ("mysql", "benchmark(1000000, md5('x')) = 0", "BENCHMARK"),
    ("sqlite", "load_extension('x') IS NULL", "LOAD_EXTENSION"),
    ("duckdb", "read_csv('/etc/passwd') IS NULL", "READ_CSV"), ("snowflake", "system$wait(1) IS NULL", "SYSTEM$WAIT"),
    ("bigquery", "SESSION_USER() = 'x'", "SESSION_USER"),
    ("databricks", "reflect('java.lang.Thread', 'sleep', 1) IS NULL", "REFLECT"),
    ("postgresql", "strftime('%Y', signup) = '2026'", "STRFTIME"),  # SQLite's and DuckDB's only
])
def test_each_warehouse_refuses_its_own_dangerous_functions(dialect: str, where: str, function: str) -> None:
    with pytest.raises(WhereRefused, match=f"; {re.escape(function)} is not one of them"):
        checked_where(where, EVERY_DIALECT[dialect])


@pytest.mark.parametrize(("dialect", "where"), [("sqlite", "strftime('%Y', signup) = '2026'"),
                                                ("duckdb", "strftime(signup, '%Y') = '2026'"),
                                                ("mysql", "year(signup) = 2026"), ("snowflake", "nvl(x, 1) = 1")])
def test_a_dialect_may_add_its_own_pure_functions(dialect: str, where: str) -> None:
    assert checked_where(where, EVERY_DIALECT[dialect]) is not None


@pytest.mark.parametrize("cast", ["x::regclass IS NULL", "CAST(x AS xml) IS NULL", "CAST(x AS json) IS NULL",
                                  "x::oid > 0"])
def test_a_cast_to_anything_but_a_plain_type_is_refused(cast: str) -> None:
    with pytest.raises(WhereRefused, match="a cast may only be to a plain type"):
        checked_where(cast, EVERY_DIALECT["postgresql"])


@pytest.mark.parametrize("depth", [21, 50, 3_000])
def test_a_where_nested_too_deep_is_a_where_mistake_not_a_crash(depth: int) -> None:
    """Issue 32, F10: 50 parentheses raised RecursionError, which named nothing and was retried."""
    where = "(" * depth + "customer_id = 1" + ")" * depth
    with pytest.raises(WhereRefused, match="it nests parentheses deeper than 20"):
        checked_where(where, EVERY_DIALECT["postgresql"])
    assert checked_where("(" * 20 + "customer_id = 1" + ")" * 20, EVERY_DIALECT["postgresql"]) is not None


def test_a_where_too_long_is_refused_and_a_long_list_of_keys_is_not() -> None:
    keys = ", ".join(str(key) for key in range(10_000))
    assert checked_where(f"customer_id IN ({keys})", EVERY_DIALECT["postgresql"]) is not None
    long_chain = " OR ".join(f"customer_id = {key}" for key in range(2_000))
    assert checked_where(long_chain, EVERY_DIALECT["postgresql"]) is not None
    with pytest.raises(WhereRefused, match="it is longer than 100,000 characters") as info:
        checked_where("customer_id = 1 OR " * 10_000 + "true", EVERY_DIALECT["postgresql"])
    assert len(str(info.value)) < 700  # the message shows the start of the text, not 190 KB of it


@pytest.mark.parametrize(("dialect", "where"), [
    ("mysql", "note = 'a\\' OR 1=1 -- '"), ("databricks", "note = 'a\\' OR 1=1 -- '"),
    ("redshift", "note = 'a\\' OR 1=1 -- '"), ("postgresql", "note = 'a\\' OR '' = ''"),
    ("bigquery", "note = 'it\\'s'"), ("sqlite", "note = 'a\\' OR '' = ''"),
])
def test_a_backslash_before_a_quote_is_refused(dialect: str, where: str) -> None:
    """MySQL reads ``'a\\' OR 1=1 -- '`` as one string by default, and as a string, code and a
    comment with NO_BACKSLASH_ESCAPES; PostgreSQL reads ``'a\\' OR '' = ''`` as a condition by
    default and as one string with standard_conforming_strings off. Each parses as one
    condition in sqlglot's reading, which is only one of the two. The rule holds on every
    warehouse (no engine name is decided outside the dialects)."""
    with pytest.raises(WhereRefused, match="no backslash before a quote"):
        checked_where(where, EVERY_DIALECT[dialect])
    assert checked_where("note LIKE 'a\\_b'", EVERY_DIALECT[dialect]) is not None  # no quote after it


def test_a_where_that_is_not_text_is_refused() -> None:
    with pytest.raises(WhereRefused, match="it is a list, not SQL text"):
        checked_where(["id > 0"], EVERY_DIALECT["sqlite"])


def test_a_column_the_source_lacks_is_named_with_the_nearest_ones() -> None:
    dialect = EVERY_DIALECT["postgresql"]
    available = ["customer_id", "first_name", "country", "signup_date"]
    check_where_columns(checked_where("COUNTRY = 'DE' AND signup_date > '2026-01-01'", dialect), available,
                        "source_table 'customers'")
    with pytest.raises(WhereRefused) as info:
        check_where_columns(checked_where("contry = 'DE'", dialect), available, "source_table 'customers'")
    assert str(info.value) == ("where reads contry, which is not a column of source_table 'customers' "
                               "(nearest: country); got \"contry = 'DE'\"")


def test_a_warehouse_message_about_a_where_keeps_no_value_it_quoted() -> None:
    assert without_values('invalid input syntax for type integer: "Anna Secret"') == (
        'invalid input syntax for type integer: "…"')
    assert without_values("Conversion Error: Could not convert string 'Anna' to INT32") == (
        "Conversion Error: Could not convert string '…' to INT32")


# Through Airflow: the check runs on the rendered where, so params and run conf are checked too ---------------

def _sharded(warehouse: Any, table: str, **extra: Any) -> str:
    return f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id={warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", where="{{{{ params.where }}}}",
                                params={{"where": "customer_id <= 2"}}, retries=2,
                                retry_delay=__import__("datetime").timedelta(minutes=10), **{extra!r})
    """


@pytest.mark.usefixtures("airflow_db")
@pytest.mark.parametrize("where", ["customer_id <= 2) OR (1=1", "customer_id <= 2; DELETE FROM {table}",
                                   "customer_id <= 2 OR customer_id IN (SELECT customer_id FROM {table})"])
def test_a_where_from_params_that_changes_the_query_fails_the_task_at_once(
        where: str, sqlite_warehouse: Any, write_dag: Any, namelookup: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    table = sqlite_warehouse.create_customers([(1, "Anna", None), (2, "Ben", None), (3, "Carla", None)])
    where = where.format(table=table)
    dag = write_dag(_sharded(sqlite_warehouse, table))
    run = dag.run(run_conf={"where": where})
    assert dag.state("enrich") == "failed" and run.get_task_instance("enrich").try_number == 1  # no retry
    captured = capfd.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert "where must be one boolean expression over the source's columns: " in logged
    assert f"got {where!r}" in logged
    assert namelookup.remaining() == 100
    assert sqlite_warehouse.rows(f"SELECT COUNT(*) FROM {table}") == [(3,)]
    assert sqlite_warehouse.rows("SELECT name FROM sqlite_master WHERE name = ?", [f"{table}_gender"]) == []


@pytest.mark.usefixtures("airflow_db")
def test_a_where_from_params_that_filters_runs_as_written(sqlite_warehouse: Any, write_dag: Any,
                                                          namelookup: Any) -> None:
    table = sqlite_warehouse.create_customers([(1, "Anna", None), (2, "Ben", None), (3, "Carla", None)])
    dag = write_dag(_sharded(sqlite_warehouse, table))
    assert str(dag.run().state) == "success"  # params' default: customer_id <= 2
    assert sqlite_warehouse.rows(f"SELECT customer_id FROM {table}_gender ORDER BY 1") == [(1,), (2,)]
    assert str(dag.run(run_conf={"where": "customer_id = 3"}).state) == "success"
    assert sqlite_warehouse.rows(f"SELECT customer_id FROM {table}_gender ORDER BY 1") == [(1,), (2,), (3,)]
    assert namelookup.remaining() == 97


# What is sent is judged (issue 48, item 1) ---------------------------------------------------------------------

AUDIT_EXPLOIT = "name = $$a\\$$ OR name = $$ OR 1=1) s0; CREATE TABLE pwned(x int); --$$"
"""The fourth audit's: sqlglot reads ``$$a\\$$`` as the string ``a\\`` and wrote it back as ``'a\\'``, which
PostgreSQL with ``standard_conforming_strings = off`` reads as a string running to the next quote."""


def test_a_string_holding_a_backslash_goes_to_postgresql_as_an_escape_string() -> None:
    """``E'...'`` is read alike whatever ``standard_conforming_strings`` says (``'a\\'`` is not)."""
    checked = checked_where(AUDIT_EXPLOIT, EVERY_DIALECT["postgresql"])
    assert checked is not None
    assert checked.sql == "\"name\" = E'a\\\\' OR \"name\" = ' OR 1=1) s0; CREATE TABLE pwned(x int); --'"
    assert checked_where("note LIKE 'a\\_b' OR note = 'it''s'", EVERY_DIALECT["postgresql"]).sql == (
        "\"note\" LIKE E'a\\\\_b' OR \"note\" = 'it''s'")


def test_what_is_sent_is_read_again_under_each_setting_and_refused_where_one_reads_it_otherwise() -> None:
    """The safety net behind the spellings: a dialect writing PostgreSQL's strings as sqlglot does
    (``'a\\'``) has its text read again with ``standard_conforming_strings = off``, and refused."""
    postgres = EVERY_DIALECT["postgresql"]

    class SqlglotSpelling(postgres):  # type: ignore[misc, valid-type]
        @classmethod
        def where_string(cls, value: str) -> str:
            return "'" + value.replace("'", "''") + "'"

    assert checked_where("name = 'plain' OR name = 'it''s'", SqlglotSpelling) is not None
    with pytest.raises(WhereRefused) as info:
        checked_where(AUDIT_EXPLOIT, SqlglotSpelling)
    assert "with standard_conforming_strings = off, postgresql would read the text it sends otherwise" in str(
        info.value)


@pytest.mark.parametrize(("dialect", "where", "sent"), [
    ("mysql", "note LIKE 'a\\_b%' AND note <> '100\\%'", "`note` LIKE 'a\\_b%' AND `note` <> '100\\%'"),
    ("mysql", "NULLIF(country, '') IS NULL", "NULLIF(`country`, REPEAT(' ', 0)) IS NULL"),
    ("mysql", "NOT country = 'DE' OR customer_id NOT IN (1, 2)",
     "NOT (`country` = 'DE') OR NOT (`customer_id` IN (1, 2))"),
    ("databricks", "name = \"O'Neil\" OR name = 'a\\\\b'",
     "`name` = CONCAT('O', CHR(39), 'Neil') OR `name` = CONCAT('a', CHR(92), 'b')"),
    ("mssql", "name = 'Zoë' AND NOT customer_id = 1", "[name] = N'Zoë' AND NOT ([customer_id] = 1)"),
    ("sqlite", "note = 'C:\\dir' AND NOT x", "\"note\" = 'C:\\dir' AND NOT (\"x\")"),
    ("mysql", "note = 'C:\\dir' OR note LIKE 'a\\\\_b'", "`note` = 'C:dir' OR `note` LIKE 'a\\_b'"),
])
def test_each_engine_is_sent_strings_and_operators_every_setting_reads_alike(dialect: str, where: str,
                                                                             sent: str) -> None:
    """MySQL: a backslash only before % or _ (alike with or without NO_BACKSLASH_ESCAPES), '' as
    ``REPEAT(' ', 0)`` (EMPTY_STRING_IS_NULL reads '' as NULL), NOT before parentheses
    (HIGH_NOT_PRECEDENCE); Databricks: a quote or backslash as CHR (escapedStringLiterals,
    doubleQuotedIdentifiers); SQL Server: N'...' (the database's code page). The text sent keeps the rules."""
    checked = checked_where(where, EVERY_DIALECT[dialect])
    assert checked is not None and checked.sql == sent
    again = checked_where(checked.sql, EVERY_DIALECT[dialect])
    assert again is not None and again.sql == sent


@pytest.mark.parametrize(("dialect", "where", "rule"), [
    ("mysql", "note = 'C:\\\\dir'", "on mysql a string holds a backslash only before % or _"),
    ("mysql", "note LIKE '100\\\\ %'", "on mysql a string holds a backslash only before % or _"),
    ("mssql", "note = 'a\\\nb'", "no backslash before a line break"),
    ("postgresql", "note = E'a\\\\b'", "write a string as '...', a quote in it doubled (not e'a\\\\b')"),
    ("postgresql", "note = U&'d\\0061t'", "write a string as '...'"),
    ("mysql", "note = _utf8mb4'x'", "write a string as '...'"),
    ("mysql", "note = X'41'", "write a string as '...'"),
    ("postgresql", "note = 'a\x00b'", "a string may not hold a NUL character"),
    ("postgresql", "country = NULL", "compare with NULL through IS NULL or IS NOT NULL"),
    ("mssql", "country <> NULL", "compare with NULL through IS NULL or IS NOT NULL"),
    ("sqlite", "country IN ('DE', NULL)", "compare with NULL through IS NULL or IS NOT NULL"),
])
def test_a_literal_no_setting_would_read_alike_is_refused_naming_the_rule(dialect: str, where: str,
                                                                          rule: str) -> None:
    with pytest.raises(WhereRefused) as info:
        checked_where(where, EVERY_DIALECT[dialect])
    assert str(info.value).startswith("where must be one boolean expression over the source's columns: ")
    assert rule in str(info.value), str(info.value)


def test_a_string_form_the_provider_writes_is_not_a_way_around_the_function_list() -> None:
    with pytest.raises(WhereRefused, match="REPEAT is not one of them"):
        checked_where("REPEAT(name, 100000000) = 'x'", EVERY_DIALECT["mysql"])
    with pytest.raises(WhereRefused, match="CONCAT is not one of them"):
        checked_where("CONCAT(name, 'x') = 'x'", EVERY_DIALECT["databricks"])
