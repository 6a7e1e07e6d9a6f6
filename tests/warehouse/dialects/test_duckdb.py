"""DuckDB: one writing process per file (a second process's run is refused, naming the rule,
before it spends anything). (The table operators' own tests run on DuckDB files too: the
``warehouse`` fixture; its statements are parsed in test_recorded_runs.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

HOLDER = textwrap.dedent("""
    import sys, duckdb
    conn = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    sys.stdin.read()
""")


def test_a_run_on_a_file_another_process_holds_is_refused_before_it_spends(duckdb_warehouse: Any,
                                                                          namelookup: Any) -> None:
    warehouse = duckdb_warehouse
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator
    from airflow_provider_namelookup.warehouse.dialects.duckdb import DuckDBFileInUse

    table = warehouse.create_customers([(1, "Anna", None), (2, "Ben", None)])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, warehouse.conn["host"]], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        operator = SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                           key_column="customer_id", name_column="name")
        with pytest.raises(DuckDBFileInUse) as refused:
            operator.execute({})
    finally:
        holder.communicate("", timeout=30)
    message = str(refused.value)
    assert "one writing process per database file" in message and f"(PID {holder.pid})" in message
    assert warehouse.conn["host"] in message and "has spent nothing" in message
    assert namelookup.remaining() == 100

    summary = operator.execute({})  # the file is free again: the run goes ahead
    assert summary["credits_used"] == 2 and namelookup.remaining() == 98


def _loaded(session: Any, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    session.execute("CREATE TEMPORARY TABLE loaded (a VARCHAR, b BIGINT, c DOUBLE, d TIMESTAMP, e BOOLEAN)")
    session.load("loaded", ["a", "b", "c", "d", "e"], rows)
    read = session.fetchall("SELECT DISTINCT a, b, c, d, e FROM loaded ORDER BY b")
    assert session.fetchall("SELECT COUNT(*) FROM loaded")[0][0] == len(rows)
    session.execute("DROP TABLE loaded")
    return read


def test_a_load_reads_an_arrow_table_in_place_and_keeps_every_value(duckdb_warehouse: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows go into a run's table as an Arrow table the engine scans where it lies (one ``INSERT``),
    not as one bound list per column; a column Arrow cannot hold as one type exactly, a missing
    ``pyarrow``, or a pandas that converting would import first, binds lists as before, and both
    load the same values."""
    import importlib.util
    from datetime import datetime

    from airflow_provider_namelookup.warehouse import arrow_rows
    from airflow_provider_namelookup.warehouse.dialects.duckdb import DuckDBDialect
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    paths: list[str] = []

    def noted(name: str) -> Any:
        original = getattr(DuckDBDialect, name)
        return lambda self, *args: paths.append(name) or original(self, *args)

    for name in ("insert_arrow", "insert_unnest"):
        monkeypatch.setattr(DuckDBDialect, name, noted(name))
    if importlib.util.find_spec("pandas"):
        import pandas  # noqa: F401 - as in a worker whose DAG files import it
    session = WarehouseSession(duckdb_warehouse.hook)
    moment = datetime(2026, 11, 27, 11, 30, 5, 123456)
    rows = [("Zoë ✓", 2**62, 0.1, moment, True), (None, -3, None, None, None), ("x" * 5000, 7, 1e-300, moment, False)]
    expected = sorted(rows, key=lambda row: row[1])
    assert _loaded(session, rows * 400) == expected and paths == ["insert_arrow"]

    paths.clear()  # a text and a number in one column: Arrow would make one of the other
    mixed = [("Anna", 1, 0.5, None, None), (17, 2, 1, None, None)]
    assert _loaded(session, mixed) == [("Anna", 1, 0.5, None, None), ("17", 2, 1.0, None, None)]
    assert paths == ["insert_unnest"]

    paths.clear()  # pandas installed but not imported: converting would import it first
    with monkeypatch.context() as patched:
        patched.setattr(arrow_rows, "converts_without_pandas", lambda: False)
        assert _loaded(session, rows * 400) == expected and paths == ["insert_unnest"]

    paths.clear()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not installed: lists, the same values
    assert _loaded(session, rows * 400) == expected and paths == ["insert_unnest"]
    session.close()


def test_a_load_that_fails_raises_its_own_error(duckdb_warehouse: Any) -> None:
    """A failed insert aborts DuckDB's transaction, which then refuses to drop the Arrow view: the
    error raised is still the insert's (a duplicate key here), which the engine judges."""
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    session = WarehouseSession(duckdb_warehouse.hook)
    session.execute("CREATE TEMPORARY TABLE keyed (k BIGINT PRIMARY KEY)")
    session.commit()
    with pytest.raises(Exception, match=r"[Dd]uplicate key") as failed:
        session.load("keyed", ["k"], [(1,), (1,)])
    assert "aborted" not in str(failed.value)
    session.rollback()
    session.load("keyed", ["k"], [(1,), (2,)])  # the connection goes on
    assert session.fetchall("SELECT k FROM keyed ORDER BY k") == [(1,), (2,)]
    session.close()


def test_the_answers_table_has_no_claimed_by_index_and_claims_still_renew_and_release(duckdb_warehouse: Any,
                                                                                    namelookup: Any) -> None:
    """DuckDB runs an ``UPDATE`` of an indexed column as a delete and an insert, and every store sets
    ``claimed_by``: the answers table keeps only its key. A renewal and a release still find this
    run's claims (a column scan), and no other run's."""
    import asyncio
    import time

    from airflow_provider_namelookup.contract import LookupKind
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator
    from airflow_provider_namelookup.warehouse.answers import AnswersTable
    from airflow_provider_namelookup.warehouse.session import WarehouseSession
    from airflow_provider_namelookup.warehouse.source import TableSource
    from airflow_provider_namelookup.warehouse.valuemap import ValueMap

    warehouse = duckdb_warehouse
    table = warehouse.create_customers([(1, "Anna", None), (2, "Ben", None)])
    summary = SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                      answers_table="answers", key_column="customer_id", name_column="name").execute({})
    assert summary["credits_used"] == 2

    session = WarehouseSession(warehouse.hook)
    assert session.fetchall("SELECT index_name FROM duckdb_indexes() WHERE table_name = 'answers'") == []
    session.execute("INSERT INTO answers (query_hash, state, claimed_by, lease_expires) VALUES "
                    "('h-mine', 'claimed', 'me', 1), ('h-other', 'claimed', 'other', 1)")
    session.commit()
    source = TableSource(session.dialect, table=table, key_column="customer_id", name_column="name")
    answers = AnswersTable(session, "answers", ValueMap(session, source.names(with_params=False)),
                           lookup=LookupKind.GENDER, paid_for=f"{table}_gender", owner="me", lease_seconds=60)
    asyncio.run(answers.renew())
    leases = dict(session.fetchall("SELECT query_hash, lease_expires FROM answers WHERE query_hash LIKE 'h-%'"))
    assert leases["h-mine"] > time.time() and leases["h-other"] == 1
    asyncio.run(answers.release())  # every claim of the run
    assert session.fetchall("SELECT query_hash FROM answers WHERE query_hash LIKE 'h-%'") == [("h-other",)]
    assert session.fetchall("SELECT COUNT(*) FROM answers WHERE state = 'answered'") == [(2,)]
    session.shutdown()


def test_a_store_reaches_the_answers_rows_by_their_key_and_writes_only_the_rows_the_run_holds(
        duckdb_warehouse: Any) -> None:
    """A store's update names its hashes, so that DuckDB reads the answers table by its key's index
    (the rows of the store, not all 20,000), and still writes none of the rows another run holds,
    that nobody holds, or that are gone; a store larger than an index scan reads the table, and
    writes the same. Its answers come straight from their JSON document, each value cast back to its
    column's type."""
    from airflow_provider_namelookup.warehouse.incoming import IncomingAnswers
    from airflow_provider_namelookup.warehouse.schema import ANSWER_BOOKKEEPING, ANSWER_KEY, ANSWER_RESULTS, Column
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    session = WarehouseSession(duckdb_warehouse.hook)
    d = session.dialect
    answers = d.quote("answers_by_key")
    for statement in d.create_table(answers, ANSWER_KEY, (*ANSWER_BOOKKEEPING, *ANSWER_RESULTS)):
        session.execute(statement)
    session.execute(f"INSERT INTO {answers} (query_hash, state, claimed_by) SELECT 'h' || i, 'claimed', 'run1' "
                    "FROM range(20000) t(i)")
    session.execute(f"UPDATE {answers} SET claimed_by = 'run2' WHERE query_hash = 'h1'")
    session.execute(f"UPDATE {answers} SET state = 'answered', claimed_by = NULL WHERE query_hash = 'h2'")
    session.commit()
    incoming = IncomingAnswers(session, answers, d.temp_name("incoming_by_key"))
    gender = [Column("gender", "text", 16)]
    small = [(f"h{i}", "female") for i in range(10)] + [("gone", "female")]
    assert incoming.write(small, gender, owner="run1", stamp=1.0, credits=1, paid_for="t") == {
        f"h{i}" for i in range(10) if i not in (1, 2)}
    session.commit()
    large = [(f"h{i}", "male") for i in range(10, 2_500)]
    assert incoming.write(large, gender, owner="run1", stamp=2.0, credits=1, paid_for="t") == {h for h, _ in large}
    session.commit()
    assert session.fetchall(f"SELECT query_hash, claimed_by, gender FROM {answers} WHERE query_hash IN "
                            "('h0', 'h1', 'h2', 'gone', 'h2499') ORDER BY query_hash") == [
        ("h0", None, "female"), ("h1", "run2", None), ("h2", None, None), ("h2499", None, "male")]
    assert not incoming.made
    typed = [Column("probability", "float"), Column("samples", "bigint"), Column("first_name", "text", 255)]
    assert incoming.write([("h3000", 0.1 + 0.2, 2**40, "Zoë 'Z' \"Ann\""), ("h3001", None, None, None)], typed,
                          owner="run1", stamp=4.0, credits=1, paid_for="t") == {"h3000", "h3001"}
    assert session.fetchall(f"SELECT probability, samples, first_name, state FROM {answers} WHERE query_hash IN "
                            "('h3000', 'h3001') ORDER BY query_hash") == [
        (0.1 + 0.2, 2**40, "Zoë 'Z' \"Ann\"", "answered"), (None, None, None, "answered")]

    rows = [(f"h{i}", "female") for i in range(20, 30)]
    store = d.store_answers(answers, incoming.name, 3, gender, owner="run1", stamp=3.0, credits=1, paid_for="t",
                            source=d.answers_document(["query_hash", "gender"]), hashes=[h for h, _ in rows])
    plan = session.fetchall("EXPLAIN ANALYZE " + store.replace("RETURNING a.query_hash", ""), [d.json_document(rows)],
                            commit=False)[0][1]
    assert "Index Scan" in plan, plan
    session.rollback()
    session.shutdown()
