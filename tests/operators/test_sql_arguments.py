"""No string argument of an operator becomes SQL unchecked (issue 32, F1 and F2).

Every string argument of every operator is put in one of four classes below; an argument
nobody classed fails the first test, so a new one cannot reach SQL without a decision. Then
each SQL operator runs in a real DAG (``dag.test()``, SQLite) once per argument with a payload
that would create a table if it were pasted into a statement; every statement SQLite runs is
recorded (``set_trace_callback``, values bound to it expanded), and no statement may hold the
payload as written, and the table must not exist. The audit's reproductions (F1: the
evaluation's ``where`` ran stacked statements; F2: functions that read other tables, files,
sleep or write) run on PostgreSQL the same way."""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

import airflow_provider_namelookup.operators as operators

pytestmark = pytest.mark.usefixtures("airflow_db")

IDENTIFIERS = {"source_table", "target_table", "answers_table", "key_column", "name_column", "country_column",
               "last_name_column", "label_column", "group_column", "target_tables", "columns"}
"""Checked identifiers (letters, digits, ``_``; ``schema.table`` for tables), quoted by the dialect;
``columns`` may only name the lookup's own answer fields."""
WHERE = {"where"}
"""The one checked ``where`` path (``warehouse/where_clause.py``)."""
QUERIES = {"sql"}
"""The DAG author's own query, checked to be one query that only reads (``warehouse/select_text.py``)."""
NEVER_SQL = {
    "conn_id": "a connection id, looked up",
    "sql_conn_id": "a connection id, looked up",
    "namelookup_conn_id": "a connection id, looked up",
    "report_conn_id": "a connection id, looked up",
    "database": "handed to the warehouse hook as its schema (a connection setting)",
    "country": "a lookup hint: checked against the country table, sent to the service as JSON",
    "locale": "a lookup hint: checked, sent as JSON",
    "ip": "a lookup hint: checked, sent as JSON",
    "min_probability": "a number",
    "min_samples": "a number",
    "max_credits": "a number",
    "query_field": "a key of the XCom rows",
    "queries": "XCom rows, sent to the service as JSON",
    "answers": "an XCom list, read in Python",
    "labels": "an XCom list, read in Python",
    "groups": "an XCom list, read in Python",
    "group_name": "a heading of the report",
    "label_map": "label spellings, read in Python",
    "report_path": "a file or object-store path",
    "report_title": "a heading of the report",
    "report_base_dir": "the folder reports must land in (not templated)",
    "on_insufficient_credits": "one of fail, partial",
    "max_credits_scope": "one of try, dag_run",
    "retention": "a period (timedelta, seconds or ISO-8601 duration), checked; bound as a number",
    "older_than": "a period (timedelta, seconds or ISO-8601 duration), checked; bound as a number",
    "keys": "a list of strings or numbers (or a callable returning one), bound as parameters",
    "values": "a list of strings (or a callable returning one), compared in Python, never sent",
    "name_kind": "one of first_name, full_name, email",
    "pseudonymisation_conn_id": "a connection id, looked up",
}
"""Arguments that never reach SQL, and what becomes of them instead."""

PAYLOAD = "x') OR 1=1; CREATE TABLE pwned_{arg} (x INTEGER); --"


def _string_arguments(cls: type) -> set[str]:
    from airflow.sdk import BaseOperator

    own = set(inspect.signature(BaseOperator.__init__).parameters)
    names: set[str] = set()
    for klass in cls.__mro__:
        if isinstance(klass, type) and issubclass(klass, BaseOperator) and klass is not BaseOperator \
                and "__init__" in vars(klass):
            for parameter in inspect.signature(klass.__init__).parameters.values():
                annotation = str(parameter.annotation)
                if parameter.name not in own | {"self", "kwargs"} and ("str" in annotation or "Any" in annotation):
                    names.add(parameter.name)
    return names


def test_every_string_argument_of_every_operator_is_classed() -> None:
    for name in operators.__all__:
        cls = getattr(operators, name)
        unclassed = _string_arguments(cls) - IDENTIFIERS - WHERE - QUERIES - set(NEVER_SQL)
        assert not unclassed, f"{name} takes {sorted(unclassed)}: say how each may reach SQL (this module's classes)"


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement any SQLite connection of this process runs, bound values written in."""
    ran: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(ran.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    yield ran


def _arguments(baseline: dict[str, Any], arg: str, value: Any) -> dict[str, Any]:
    kwargs = {**baseline, arg: value}
    if arg == "sql":
        kwargs.pop("source_table")
    if arg in ("source_table", "sql") and "target_table" in baseline:
        kwargs["target_table"] = f"{baseline['target_table']}_{arg}"
    return kwargs


@pytest.mark.parametrize("operator", ["SqlGenderLookupOperator", "SqlCountryOfOriginOperator",
                                      "SqlGenderEvaluationOperator", "SqlNameLookupErasureOperator"])
def test_no_string_argument_reaches_a_statement_as_written(operator: str, sqlite_warehouse: Any, namelookup: Any,
                                                           write_dag: Any, statements: list[str]) -> None:
    """A templated argument gets the payload from the run's conf (as whoever triggers a run could
    send it); the others get it written in the DAG, and may refuse it when the DAG is parsed."""
    table = sqlite_warehouse.create_customers([(1, "Anna", "DE"), (2, "Ben", None)])
    cls = getattr(operators, operator)
    if operator == "SqlGenderEvaluationOperator":
        sqlite_warehouse.hook.run(f"CREATE TABLE {table}_gender (customer_id INTEGER, gender TEXT, probability REAL, "
                                  "samples INTEGER, status TEXT)")
        baseline: dict[str, Any] = {"conn_id": sqlite_warehouse.conn_id, "source_table": table,
                                    "key_column": "customer_id", "label_column": "name", "group_column": "country"}
    elif operator == "SqlNameLookupErasureOperator":  # a target and an answers table to erase from
        enrich = write_dag(f"SqlGenderLookupOperator(task_id='enrich', conn_id={sqlite_warehouse.conn_id!r}, "
                           f"source_table={table!r}, key_column='customer_id', name_column='name', "
                           f"target_table={table + '_out'!r})")
        assert str(enrich.run().state) == "success"
        baseline = {"conn_id": sqlite_warehouse.conn_id, "answers_table": sqlite_warehouse.answers_table,
                    "target_tables": [f"{table}_out"], "key_column": "customer_id", "keys": [1],
                    "values": ["Ben"], "older_than": 3600}
    else:
        baseline = {"conn_id": sqlite_warehouse.conn_id, "source_table": table, "key_column": "customer_id",
                    "name_column": "name", "country_column": "country", "target_table": f"{table}_out"}
    arguments = sorted(_string_arguments(cls) - {"queries", "answers", "labels", "groups", "label_map",
                                                 "sql_conn_id", "report_path"})
    tasks, refused_when_parsed = [], set()
    for arg in arguments:
        payload = PAYLOAD.format(arg=arg)
        if arg in cls.template_fields:
            kwargs = _arguments(baseline, arg, f"{{{{ params.{arg} }}}}")
            tasks.append(f"{operator}(task_id={arg!r}, retries=0, params={{{arg!r}: {payload!r}}}, **{kwargs!r})")
            continue
        try:
            cls(task_id=arg, **_arguments(baseline, arg, payload))
        except ValueError as err:
            assert arg in str(err), f"{arg}: {err}"
            refused_when_parsed.add(arg)
            continue
        tasks.append(f"{operator}(task_id={arg!r}, retries=0, **{_arguments(baseline, arg, payload)!r})")
    header = f"from airflow_provider_namelookup.operators import {operator}\n"
    dag = write_dag(header + "\n".join(tasks))
    dag.run()
    checked = (IDENTIFIERS | WHERE | QUERIES) & set(arguments)
    assert {arg for arg in checked - refused_when_parsed if dag.state(arg) != "failed"} == set()
    assert statements and not [s for s in statements if "pwned_" in s and "x') OR 1=1" in s]
    assert not {name for name in sqlite_warehouse.table_names() if name.startswith("pwned_")}


def _audit_dag(warehouse: Any, table: str, secrets: str) -> str:
    f1 = (f"true)) s LEFT JOIN {table}_gender t ON false; CREATE TABLE pwned_f1 AS SELECT s FROM {secrets}; "
          f"COMMIT; SELECT s.name, t.gender, t.probability, t.samples, t.status FROM (SELECT * FROM {table} "
          "WHERE (true")
    f2 = {"read": f"CAST(query_to_xml('select s from {secrets}',true,true,'')::text AS int) = 1",
          "files": "lo_import('/etc/hostname') > 0", "sleep": "pg_sleep(0.2) IS NULL",
          "settings": "set_config('search_path', 'pwned', false) IS NOT NULL"}
    source = {"conn_id": warehouse.conn_id, "source_table": table, "key_column": "customer_id"}
    return "\n".join([
        "from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator",
        f"SqlGenderEvaluationOperator(task_id='f1', label_column='name', where={f1!r}, retries=2, **{source!r})",
        *(f"SqlGenderLookupOperator(task_id='f2_{kind}', name_column='name', where={where!r}, retries=2, "
          f"**{source!r})" for kind, where in f2.items()),
    ])


def test_the_audits_where_payloads_run_nothing_on_postgresql(postgres_warehouse: Any, namelookup: Any,
                                                             write_dag: Any, capfd: pytest.CaptureFixture[str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    table = postgres_warehouse.create_customers([(1, "Anna", "DE"), (2, "Ben", None)])
    secrets = postgres_warehouse.table_name("secrets")
    postgres_warehouse.hook.run(f"CREATE TABLE {secrets} (s TEXT); INSERT INTO {secrets} VALUES ('top secret')")
    postgres_warehouse.hook.run(f"CREATE TABLE {table}_gender (customer_id INTEGER, gender TEXT, "
                                "probability REAL, samples INTEGER, status TEXT)")
    postgres_warehouse.created.append("pwned_f1")
    large_objects = postgres_warehouse.rows("SELECT COUNT(*) FROM pg_largeobject_metadata")
    dag = write_dag(_audit_dag(postgres_warehouse, table, secrets))
    capfd.readouterr()
    caplog.clear()  # the set-up's own statements named the secret
    run = dag.run()
    for task in ("f1", "f2_read", "f2_files", "f2_sleep", "f2_settings"):
        assert dag.state(task) == "failed" and run.get_task_instance(task).try_number == 1, task  # no retry
    assert "pwned_f1" not in {r[0] for r in postgres_warehouse.rows(
        "SELECT table_name FROM information_schema.tables WHERE table_name = 'pwned_f1'")}
    assert postgres_warehouse.rows("SELECT COUNT(*) FROM pg_largeobject_metadata") == large_objects
    captured = capfd.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert "top secret" not in logged
    for function in ("QUERY_TO_XML", "LO_IMPORT", "PG_SLEEP", "SET_CONFIG"):
        assert f"; {function} is not one of them" in logged
    assert ("where must be one boolean expression over the source's columns: it cannot be read at \")\" (line 1, "
            "column 5), after \"true\"") in logged
    assert namelookup.remaining() == 100


def test_the_fourth_audits_backslash_runs_nothing_where_postgresql_reads_backslashes_as_escapes(
        postgres_warehouse: Any, namelookup: Any, write_dag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48, item 1: with ``standard_conforming_strings = off`` (per server, database, role or
    session) the where below created the table before the task failed: sqlglot read ``$$a\\$$`` as the
    string ``a\\`` and the provider sent ``'a\\'``, which such a session reads as an escaped quote, so
    the last string's text ran as SQL. Now the string goes as ``E'a\\\\'``: the filter keeps the two
    rows whose names are its two strings, as the check read them."""
    import json

    from conftest import POSTGRES

    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE_POSTGRES_ESCAPING",
                       json.dumps({**POSTGRES, "extra": {"options": "-c standard_conforming_strings=off"}}))
    pwned = postgres_warehouse.table_name("pwned")
    second = f" OR 1=1) s0; CREATE TABLE {pwned}(x int); --"
    where = f"name = $$a\\$$ OR name = $${second}$$"  # the audit's, its table named for this test
    table = postgres_warehouse.create_customers([(1, "a\\", "DE"), (2, "Ben", "DE"), (3, second, None)])
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    assert PostgresHook(postgres_conn_id="warehouse_postgres_escaping").get_first(
        "SHOW standard_conforming_strings") == ("off",)
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id="warehouse_postgres_escaping", source_table={table!r},
                                key_column="customer_id", name_column="name", where="{{{{ params.where }}}}",
                                params={{"where": "customer_id = 2"}}, retries=0)
    """)
    dag.run(run_conf={"where": where})
    assert postgres_warehouse.rows(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = %s", [pwned]) == [(0,)]
    assert dag.state("enrich") == "success"
    assert postgres_warehouse.rows(f"SELECT customer_id FROM {table}_gender ORDER BY 1") == [(1,), (3,)]
