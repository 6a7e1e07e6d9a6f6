"""Shared checks of a dialect's distinctive spellings, run on the real engine."""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.warehouse.dialects import Names, Unchanged
from airflow_provider_namelookup.warehouse.session import WarehouseSession


def truth(session: WarehouseSession, condition: str) -> bool:
    """Evaluate a condition on literal values in the engine."""
    return bool(session.fetchall(f"SELECT CASE WHEN {condition} THEN 1 ELSE 0 END")[0][0])


def check_equalities(session: WarehouseSession) -> None:
    d = session.dialect
    assert truth(session, d.null_safe_equal("NULL", "NULL"))
    assert not truth(session, d.null_safe_equal("'Anna'", "NULL"))
    assert not truth(session, d.null_safe_equal("'José'", "'Jose'"))  # accents are not folded
    assert not truth(session, d.null_safe_equal("'anna'", "'Anna'"))  # nor case
    assert truth(session, d.exact_equal("'Anna'", "'Anna'")) and not truth(session, d.exact_equal("'ANNA'", "'Anna'"))


def roundtrip_timestamp(session: WarehouseSession, table: str, value: Any) -> Any:
    d = session.dialect

    session.execute(f"CREATE TABLE {table} (at {d.types['timestamp']})")
    session.execute(f"INSERT INTO {table} (at) VALUES ({d.placeholder})", [d.timestamp(value)])
    session.commit()
    return session.fetchall(f"SELECT at FROM {table}")[0][0]


def check_unchanged_forms(session: WarehouseSession, source: str, target: str) -> None:
    """A rerun's distinct pass reads the same values, counts and lowest keys whether it leaves unchanged
    rows out by an outer join or by ``NOT EXISTS``: a changed name or country, a NULL turned into a value,
    a row the target lacks, another query spec and a stale row are read; unchanged rows are not, and a
    target holding a key twice (no primary key: a table made by hand) repeats no source row."""
    d = session.dialect
    session.execute(f"CREATE TABLE {source} (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(50), country VARCHAR(8))")
    session.execute(f"CREATE TABLE {target} (id INTEGER NOT NULL, source_name VARCHAR(50), "
                    "source_country VARCHAR(8), query_spec VARCHAR(32), enriched_at VARCHAR(32))")
    rows = [(1, "Anna", "DE"), (2, "Anna", "DE"), (3, "Ben", None), (4, None, "FR"), (5, "Cleo", "IT"),
            (6, "Anna", None), (7, "Dan", "US"), (8, "Eve", "GB"), (9, "Ben", None), (10, "Fay", "ES"),
            (11, "José", "ES")]
    written = [(1, "Anna", "DE", "q1", "2026-11-02"), (2, "Anne", "DE", "q1", "2026-11-02"),
               (3, "Ben", None, "q1", "2026-11-02"), (4, None, None, "q1", "2026-11-02"),
               (5, "Cleo", "IT", "q0", "2026-11-02"), (7, "Dan", "US", "q1", "2026-10-01"),
               (8, "Eve", "GB", "q1", "2026-11-02"), (9, "Ben", None, "q1", "2026-11-02"),
               (11, "Jose", "ES", "q1", "2026-11-02"), (1, "Ann", "DE", "q1", "2026-11-02"),
               (2, "Anne", "DE", "q1", "2026-11-03")]
    p = d.placeholder
    session.executemany(f"INSERT INTO {source} VALUES ({p}, {p}, {p})", rows)
    session.executemany(f"INSERT INTO {target} VALUES ({p}, {p}, {p}, {p}, {p})", written)
    session.commit()
    names = Names(relation=f"(SELECT * FROM {source})", key_column="id", key="s.id", name="s.name",
                  country="s.country")
    conditions = ["t.id = s.id", d.null_safe_equal("t.source_name", "s.name"),
                  d.null_safe_equal("t.source_country", "s.country"), "t.query_spec = 'q1'",
                  "t.enriched_at >= '2026-11-01'"]
    unchanged = Unchanged(target, " AND ".join(conditions), matched="t.query_spec")

    class Flipped(type(d), name=d.name, credit_promise=d.credit_promise):  # type: ignore[misc]
        engine = d.engine.changed(unchanged_by_outer_join=not d.engine.unchanged_by_outer_join)

    forms = {d.engine.unchanged_by_outer_join: d.distinct_values(names, unchanged),
             not d.engine.unchanged_by_outer_join: Flipped(session.hook).distinct_values(names, unchanged)}
    assert "LEFT JOIN" in forms[True] and "NOT EXISTS" in forms[False]
    joined, correlated = (sorted(session.fetchall(forms[form]), key=repr) for form in (True, False))
    assert joined == correlated
    to_enrich = {(name, country): (int(count), int(first)) for total, name, country, count, first, _ in joined
                 if not total}
    assert to_enrich == {("Anna", "DE"): (1, 2), (None, "FR"): (1, 4), ("Cleo", "IT"): (1, 5), ("Anna", None): (1, 6),
                         ("Dan", "US"): (1, 7), ("Fay", "ES"): (1, 10), ("José", "ES"): (1, 11)}
    assert [int(count) for total, _, _, count, _, _ in joined if total] == [len(rows)]
