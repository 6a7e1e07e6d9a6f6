"""SQLite's spellings on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow_provider_namelookup.warehouse.dialects import Names, Unchanged
from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, roundtrip_timestamp


def test_sqlite_compares_raw_values_exactly_and_keeps_times_as_iso_text(sqlite_warehouse: Any) -> None:
    session = WarehouseSession(sqlite_warehouse.hook)
    assert isinstance(session.dialect, SqliteDialect)
    check_equalities(session)
    table = sqlite_warehouse.table_name("times")
    moment = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert roundtrip_timestamp(session, table, moment) == "2026-11-23T12:00:00+00:00"
    assert session.fetchall("PRAGMA busy_timeout")[0][0] == 120_000  # several runs may write one file
    session.close()


def test_a_load_is_one_statement_that_keeps_each_value_of_its_own_type(sqlite_warehouse: Any) -> None:
    """Rows go into a run's table by one ``INSERT ... SELECT`` over one JSON document, so that the
    driver steps once, not once a row (each step lets go of the interpreter and waits up to 5 ms
    to get it back while the lookups keep the event loop busy). SQLite keeps a type per value,
    not per column, and so does the load: a text that looks like a number stays text."""
    session = WarehouseSession(sqlite_warehouse.hook)
    steps: list[str] = []
    session.conn.set_trace_callback(steps.append)
    session.execute("CREATE TEMP TABLE loaded (a, b, c)")
    rows = [("Anna", 1, 0.1), ("7", 2**62, 1e-300), (None, -3, 1.0), (17, "x" * 500, None), ("Zoë ✓", True, 2.5)]
    session.load("loaded", ["a", "b", "c"], rows * 200)
    assert len([s for s in steps if s.startswith("INSERT")]) == 1
    read = session.fetchall("SELECT a, typeof(a), b, typeof(b), c, typeof(c) FROM loaded LIMIT 5")
    assert read == [("Anna", "text", 1, "integer", 0.1, "real"), ("7", "text", 2**62, "integer", 1e-300, "real"),
                    (None, "null", -3, "integer", 1.0, "real"), (17, "integer", "x" * 500, "text", None, "null"),
                    ("Zoë ✓", "text", 1, "integer", 2.5, "real")]
    session.close()


def test_rows_json_cannot_carry_are_loaded_as_they_are(sqlite_warehouse: Any) -> None:
    """A NUL inside a text (SQLite's JSON functions end the text there) or bytes go by ``executemany``."""
    session = WarehouseSession(sqlite_warehouse.hook)
    session.execute("CREATE TEMP TABLE loaded (a, b)")
    rows = [("Ann\x00a", 1), (b"\x00\xff", 2)]
    for row in rows:
        session.load("loaded", ["a", "b"], [row])
    assert session.fetchall("SELECT a, b FROM loaded ORDER BY b") == rows
    session.close()



def test_a_reruns_outer_join_reads_exactly_the_rows_not_exists_would(sqlite_warehouse: Any) -> None:
    """SQLite runs a correlated ``NOT EXISTS`` once a row, so its distinct pass leaves unchanged rows out
    by a ``LEFT JOIN`` instead; both read the same values, counts and lowest keys: a changed name or
    country, a NULL turned into a value, a row the target lacks, another query spec, a stale row."""
    session = WarehouseSession(sqlite_warehouse.hook)
    dialect = session.dialect
    assert isinstance(dialect, SqliteDialect) and dialect.unchanged_by_outer_join
    source, target = sqlite_warehouse.table_name("src"), sqlite_warehouse.table_name("tgt")
    session.execute(f"CREATE TABLE {source} (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    session.execute(f"CREATE TABLE {target} (id INTEGER NOT NULL PRIMARY KEY, source_name, source_country, "
                    "query_spec TEXT, enriched_at TEXT)")
    rows = [(1, "Anna", "DE"), (2, "Anna", "DE"), (3, "Ben", None), (4, None, "FR"), (5, "Cleo", "IT"),
            (6, "Anna", None), (7, "Dan", "US"), (8, "Eve", "GB"), (9, "Ben", None), (10, "Fay", "ES")]
    session.executemany(f"INSERT INTO {source} VALUES (?, ?, ?)", rows)
    written = [(1, "Anna", "DE", "q1", "2026-11-02"), (2, "Anne", "DE", "q1", "2026-11-02"),
               (3, "Ben", None, "q1", "2026-11-02"), (4, None, None, "q1", "2026-11-02"),
               (5, "Cleo", "IT", "q0", "2026-11-02"), (7, "Dan", "US", "q1", "2026-10-01"),
               (8, "Eve", "GB", "q1", "2026-11-02"), (9, "Ben", None, "q1", "2026-11-02")]
    session.executemany(f"INSERT INTO {target} VALUES (?, ?, ?, ?, ?)", written)
    session.commit()
    names = Names(relation=f"(SELECT * FROM {source})", key_column="id", key="s.id", name="s.name",
                  country="s.country")
    conditions = ["t.id = s.id", "t.source_name IS s.name", "t.source_country IS s.country", "t.query_spec = 'q1'",
                  "t.enriched_at >= '2026-11-01'"]
    unchanged = Unchanged(target, " AND ".join(conditions), matched="t.query_spec")

    class CorrelatedSqlite(SqliteDialect, name="sqlite", credit_promise="as SQLite's"):
        unchanged_by_outer_join = False

    joined = dialect.distinct_values(names, unchanged)
    correlated = CorrelatedSqlite(sqlite_warehouse.hook).distinct_values(names, unchanged)
    assert "LEFT JOIN" in joined and "NOT EXISTS" in correlated
    read = sorted(session.fetchall(joined), key=repr)
    assert read == sorted(session.fetchall(correlated), key=repr)
    to_enrich = {(name, country): (count, first) for total, name, country, count, first, _ in read if not total}
    assert to_enrich == {("Anna", "DE"): (1, 2), (None, "FR"): (1, 4), ("Cleo", "IT"): (1, 5), ("Anna", None): (1, 6),
                         ("Dan", "US"): (1, 7), ("Fay", "ES"): (1, 10)}
    assert [count for total, *_, count, _, _ in read if total] == [10]
    session.close()
