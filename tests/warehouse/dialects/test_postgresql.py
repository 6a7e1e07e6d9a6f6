"""PostgreSQL's spellings on the real server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, roundtrip_timestamp


@pytest.mark.database
def test_postgresql_compares_exactly_bulk_loads_with_copy_and_keeps_aware_times(postgres_warehouse: Any) -> None:
    session = WarehouseSession(postgres_warehouse.hook)
    assert isinstance(session.dialect, PostgresDialect) and session.dialect.engine.creates_target_at_fill
    check_equalities(session)
    moment = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert roundtrip_timestamp(session, postgres_warehouse.table_name("times"), moment) == moment
    table = postgres_warehouse.table_name("load")
    session.execute(f"CREATE TABLE {table} (a TEXT, b INTEGER)")
    before = session.statements
    session.load(table, ["a", "b"], [(f"v{i}", i) for i in range(5_000)] + [(None, None), ("tab\there", 1)])
    session.commit()
    assert session.statements - before == 1  # one COPY, whatever the number of rows
    assert session.fetchall(f"SELECT COUNT(*), COUNT(a) FROM {table}")[0] == (5_002, 5_001)
    assert session.fetchall(f"SELECT a FROM {table} WHERE b = 1 ORDER BY a")[0][0] == "tab\there"
    session.close()


@pytest.mark.database
def test_a_store_reaches_the_answers_rows_by_their_key_on_a_young_answers_table(postgres_warehouse: Any) -> None:
    """A store's update joins the incoming answers to the answers table by its primary key, never by a
    filter in a nested loop over the claimed_by index (on a table without statistics that plan took
    23 s for a store of 30,000 answers)."""
    from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
    from airflow_provider_namelookup.warehouse.incoming import IncomingAnswers
    from airflow_provider_namelookup.warehouse.schema import ANSWER_BOOKKEEPING, ANSWER_KEY, ANSWER_RESULTS, Column

    session = WarehouseSession(postgres_warehouse.hook)
    d: WarehouseDialect = session.dialect
    answers = d.quote(postgres_warehouse.table_name("answers_plan"))
    for statement in d.create_table(answers, ANSWER_KEY, (*ANSWER_BOOKKEEPING, *ANSWER_RESULTS)):
        session.execute(statement)
    session.execute(f"CREATE INDEX {postgres_warehouse.table_name('answers_plan_idx')} ON {answers} (claimed_by)")
    session.execute(f"INSERT INTO {answers} (query_hash, state, claimed_by) SELECT md5(i::text), 'claimed', 'run1' "
                    "FROM generate_series(1, 30000) i")
    session.commit()
    incoming = IncomingAnswers(session, answers, d.temp_name(postgres_warehouse.table_name("incoming_plan")))
    gender = [Column("gender", "text", 16)]
    rows = [(f"{i:032x}", "female") for i in range(10)]
    incoming.write(rows, gender, owner="run1", stamp=1.0, credits=1, paid_for="t")  # makes and fills the table
    plan = "\n".join(r[0] for r in session.fetchall("EXPLAIN " + d.store_answers(
        answers, incoming.name, 1, gender, owner="run1", stamp=1.0, credits=1, paid_for="t"), commit=False))
    assert "Join Filter" not in plan and "claimed_by_idx" not in plan, plan
    session.rollback()
    session.close()


@pytest.mark.database
def test_a_store_undone_by_a_conflict_finds_its_incoming_table_when_retried(postgres_warehouse: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's DDL is transactional: the first store's rollback (a deadlock between parallel
    shards) must not take the incoming table made in it along (the retry then failed with
    ``relation "namelookup_incoming_..." does not exist``)."""
    from airflow_provider_namelookup.warehouse.incoming import IncomingAnswers
    from airflow_provider_namelookup.warehouse.schema import ANSWER_BOOKKEEPING, ANSWER_KEY, ANSWER_RESULTS, Column

    session = WarehouseSession(postgres_warehouse.hook)
    d = session.dialect
    answers = d.quote(postgres_warehouse.table_name("answers_retry"))
    for statement in d.create_table(answers, ANSWER_KEY, (*ANSWER_BOOKKEEPING, *ANSWER_RESULTS)):
        session.execute(statement)
    session.execute(f"INSERT INTO {answers} (query_hash, state, claimed_by) VALUES ('h1', 'claimed', 'run1')")
    session.commit()
    incoming = IncomingAnswers(session, answers, d.temp_name(postgres_warehouse.table_name("incoming_retry")))
    gender = [Column("gender", "text", 16)]
    real_store = d.store_answers
    monkeypatch.setattr(d, "store_answers", lambda *a, **k: "SELECT 1 / 0")  # the conflict, as any failure
    with pytest.raises(Exception, match="division by zero"):
        incoming.write([("h1", "female")], gender, owner="run1", stamp=1.0, credits=1, paid_for="t")
    monkeypatch.setattr(d, "store_answers", real_store)
    assert incoming.write([("h1", "female")], gender, owner="run1", stamp=1.0, credits=1, paid_for="t") == {"h1"}
    session.commit()
    assert session.fetchall(f"SELECT gender FROM {answers} WHERE query_hash = 'h1'") == [("female",)]
    session.close()


@pytest.mark.database
def test_a_fill_that_creates_its_target_joins_in_parallel_workers(postgres_warehouse: Any) -> None:
    """The fill's ``CREATE TABLE ... AS`` joins the source to the stage in parallel workers while the
    leader writes (at the planner's default price of a row handed over, it never did: a 1,000,000-row
    fill took 1.65 s instead of 1.15 s); the settings end with the fill's transaction."""
    session = WarehouseSession(postgres_warehouse.hook)
    d = session.dialect
    source, stage, target = (d.quote(postgres_warehouse.table_name(n)) for n in ("fill_source", "fill_stage", "fill"))
    _create_parallel_sized_source(session, source, names=1000)
    session.execute(f"CREATE TABLE {stage} AS SELECT 'name' || i AS raw_name, 'DE' AS raw_country, "
                    "md5(i::text) AS query_hash, 'female' AS gender FROM generate_series(0, 999) i")
    session.execute(f"ANALYZE {stage}")
    session.commit()
    fill = (f"CREATE TABLE {target} AS SELECT s.customer_id, CAST(m.gender AS VARCHAR(16)) AS gender, "
            f"CAST(m.query_hash AS VARCHAR(64)) AS query_hash, s.first_name AS source_name FROM {source} s "
            f"JOIN {stage} m ON s.first_name = m.raw_name AND s.country IS NOT DISTINCT FROM m.raw_country")
    assert "Gather" not in _plan(session, fill, [])
    assert "Gather" in _plan(session, fill, d.before_fill_by_creating())
    assert session.fetchall("SHOW parallel_tuple_cost", commit=False)[0][0] == "0.1"  # SET LOCAL: gone with it
    session.rollback()
    session.close()


@pytest.mark.database
def test_a_first_runs_distinct_pass_groups_in_parallel_workers(postgres_warehouse: Any) -> None:
    """The distinct pass's ``GROUP BY`` runs partly in parallel workers (at the planner's default price
    of a row handed over, only its row count did)."""
    from airflow_provider_namelookup.warehouse.source import TableSource

    session = WarehouseSession(postgres_warehouse.hook)
    d = session.dialect
    table = postgres_warehouse.table_name("pass_source")
    _create_parallel_sized_source(session, d.quote(table), names=20_000)
    session.commit()
    source = TableSource(d, table=table, key_column="customer_id", name_column="first_name", country_column="country")
    statement = d.distinct_values(source.names(with_params=False), None)
    assert "Partial HashAggregate" not in _plan(session, statement, ["SET LOCAL work_mem = '64MB'"])
    assert "Partial HashAggregate" in _plan(session, statement, d.before_distinct_pass())
    session.close()


def _create_parallel_sized_source(session: WarehouseSession, table: str, *, names: int) -> None:
    """A 300,000-row customers table (past the 8 MB a parallel scan needs) of ``names`` distinct names, analyzed."""
    session.execute(f"CREATE TABLE {table} AS SELECT i AS customer_id, 'name' || (i % {names}) AS first_name, "
                    "'DE' AS country FROM generate_series(1, 300000) i")
    session.execute(f"ANALYZE {table}")


def _plan(session: WarehouseSession, statement: str, settings: list[str]) -> str:
    """PostgreSQL's plan of ``statement`` after ``settings``, in a transaction rolled back after it."""
    for setting in settings:
        session.execute(setting)
    text = "\n".join(row[0] for row in session.fetchall(f"EXPLAIN {statement}", commit=False))
    session.rollback()
    return text
