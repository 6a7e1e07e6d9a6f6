"""An operator's ``sql`` is one query that only reads, read as its engine reads it (issue 48, item 4).

sqlglot reads the text in the warehouse's dialect, which knows where each engine's comments end;
what no reading can settle is refused: MySQL's and MariaDB's executable comments (``/*! */``,
``/*M! */``) and a comment inside a comment, which PostgreSQL and DuckDB end at its last ``*/``
and SQLite and MySQL at its first. On SQLite, MariaDB, PostgreSQL and DuckDB each query below is
refused, or runs and returns the rows of the query sqlglot read, written without its comments.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlglot

from airflow_provider_namelookup.warehouse.select_text import checked_select
from airflow_provider_namelookup.warehouse.where_clause import WhereRefused, sqlglot_dialect

DIALECTS = ["sqlite", "mysql", "postgres", "duckdb", "snowflake", "bigquery", "databricks", "redshift", "tsql"]

HELD = [  # what the audits found refused, and keep so
    ("SELECT 1; DROP TABLE people", "one statement"),
    ("INSERT INTO people VALUES (1)", "not a query"),
    ("WITH gone AS (DELETE FROM people RETURNING *) SELECT * FROM gone", "which writes or locks"),
    ("SELECT * INTO copied FROM people", "which writes or locks"),
    ("SELECT * FROM people FOR UPDATE", "which writes or locks"),
    ("SELECT id FROM people WHERE id = ?", "no bind parameters"),
    ("SELECT id, name FROM people /*! FOR UPDATE */", "no /*! ... */ or /*M! ... */ comment"),
    ("SELECT id FROM people WHERE name = 'a\\' OR 1=1 -- '", "no backslash before a quote"),
]
EXECUTABLE = ["SELECT id, name FROM people /*M! FOR UPDATE */", "SELECT id, name FROM people /*M!, SLEEP(1) */",
              "SELECT id, name FROM people /*M!50100 FOR UPDATE */", "SELECT id, name FROM people /*m! FOR UPDATE */"]
NESTED = ["SELECT id, name FROM people /* /* */ UNION SELECT 99, sql FROM sqlite_master /* */",  # the audit's
          "SELECT id, name FROM people /* a /* b */ c */", "/* /* */ SELECT 1 /* */ */ SELECT id FROM people"]


@pytest.mark.parametrize("read", DIALECTS)
@pytest.mark.parametrize(("sql", "rule"), HELD + [(sql, "no /*! ... */ or /*M! ... */ comment") for sql in EXECUTABLE]
                         + [(sql, "no comment inside a comment") for sql in NESTED])
def test_what_engines_could_read_otherwise_is_refused_naming_the_rule(read: str, sql: str, rule: str) -> None:
    with pytest.raises(WhereRefused) as info:
        checked_select(sql, read)
    message = str(info.value)
    assert message.startswith("sql must be one query that reads: ")
    unread = ("it cannot be read at", "it cannot be split into SQL words")  # dialects with no such statement
    assert rule in message or any(reason in message for reason in unread), message


@pytest.mark.parametrize("read", DIALECTS)
def test_comments_that_every_engine_ends_alike_are_kept(read: str) -> None:
    sql = "/* the people */ SELECT id, name -- who\nFROM people WHERE name <> '/* not a comment */'"
    assert checked_select(f"{sql};", read) == sql


# On the engines ---------------------------------------------------------------------------------------------

ROWS = [(1, "Anna", "DE"), (2, "Ben", "AT"), (3, "Carla", None)]
ON_ENGINES = {  # a query, and the engines whose reading the check accepts ("*": every one)
    "SELECT customer_id, name FROM {t} /* /* */ UNION SELECT 99, 'hidden' /* */": set(),  # the audit's
    "SELECT customer_id, name FROM {t} /* a /* b */ c */": set(),
    "SELECT customer_id, name FROM {t} /*M! WHERE 1 = 0 */": set(),
    "SELECT customer_id, name FROM {t} /*!100000 WHERE 1 = 0 */": set(),
    "SELECT customer_id, name FROM {t} -- all of them\n": {"*"},
    "/* who */ SELECT customer_id, name FROM {t} WHERE customer_id > 1 /* not the first */": {"*"},
    "SELECT customer_id, name FROM {t} WHERE name <> '/* not -- a comment */'": {"*"},
    "SELECT customer_id, name FROM {t} WHERE customer_id > 0 --1\n": {"*"},  # MySQL: 0 - -1, not a comment
    "SELECT customer_id, name FROM {t} # MySQL's comment\n": {"mariadb"},
}


@pytest.fixture(params=["sqlite", "mariadb", "postgres", "duckdb"])
def engine(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(f"{request.param}_warehouse")


def _rows(warehouse: Any, sql: str) -> set[tuple[Any, ...]] | str:
    try:
        return {tuple(row) for row in warehouse.rows(sql)}
    except Exception as err:  # each driver raises its own class
        return f"error: {type(err).__name__}"


def test_each_engine_reads_what_the_check_accepts_as_the_check_read_it(engine: Any) -> None:
    table = engine.create_customers(ROWS)
    read = sqlglot_dialect(engine.dialect)
    accepted = set()
    for template in ON_ENGINES:
        sql = template.format(t=table)
        try:
            text = checked_select(sql, read)
        except WhereRefused:
            continue
        accepted.add(template)
        as_checked = sqlglot.transpile(text, read=read, write=read, comments=False)[0]
        assert _rows(engine, text) == _rows(engine, as_checked), (engine.kind, sql, as_checked)
    assert accepted == {t for t, engines in ON_ENGINES.items() if "*" in engines or engine.kind in engines}
    rows = _rows(engine, checked_select(f"SELECT customer_id FROM {table} WHERE customer_id > 0 --1\n", read))
    assert rows == ({(2,), (3,)} if engine.kind == "mariadb" else {(1,), (2,), (3,)})  # read as each engine does


def test_the_engines_disagree_on_a_comment_inside_a_comment(engine: Any) -> None:
    """Why the check refuses it: SQLite and MariaDB run what PostgreSQL and DuckDB read as a comment."""
    table = engine.create_customers(ROWS)
    rows = _rows(engine, f"SELECT customer_id FROM {table} /* /* */ UNION SELECT 99 /* */ */")
    if engine.kind in ("sqlite", "mariadb"):
        assert isinstance(rows, str)  # the UNION ran, then a stray */
        assert _rows(engine, f"SELECT customer_id FROM {table} /* /* */ UNION SELECT 99 /* */") == {
            (1,), (2,), (3,), (99,)}
    else:
        assert rows == {(1,), (2,), (3,)}  # one comment


def test_mariadb_runs_what_its_executable_comments_hold(mariadb_warehouse: Any) -> None:
    """Why ``/*M! */`` is refused: MariaDB runs it (and ``/*M!<version> */`` from that version on)."""
    table = mariadb_warehouse.create_customers(ROWS)
    assert _rows(mariadb_warehouse, f"SELECT customer_id FROM {table} /*M! WHERE customer_id = 2 */") == {(2,)}
    assert _rows(mariadb_warehouse, f"SELECT customer_id FROM {table} /*M!100000 WHERE customer_id = 2 */") == {(2,)}


@pytest.mark.usefixtures("airflow_db")
def test_the_audits_nested_comment_reads_nothing_more_on_sqlite(sqlite_warehouse: Any, namelookup: Any,
                                                                write_dag: Any) -> None:
    """Issue 48, item 4: the UNION hidden between the comments ran, and a row of sqlite_master reached the target."""
    table = sqlite_warehouse.create_customers(ROWS)
    sql = f"SELECT customer_id, name FROM {table} /* /* */ UNION SELECT 99, sql FROM sqlite_master /* */"
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id={sqlite_warehouse.conn_id!r}, sql="{{{{ params.sql }}}}",
                                params={{"sql": "SELECT customer_id, name FROM {table}"}},
                                target_table={table + '_out'!r}, key_column="customer_id", name_column="name",
                                retries=2, retry_delay=__import__("datetime").timedelta(minutes=10))
    """)
    run = dag.run(run_conf={"sql": sql})
    assert dag.state("enrich") == "failed" and run.get_task_instance("enrich").try_number == 1
    assert sqlite_warehouse.rows("SELECT name FROM sqlite_master WHERE name = ?", [f"{table}_out"]) == []
    assert namelookup.remaining() == 100
