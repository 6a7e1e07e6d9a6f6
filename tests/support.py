"""Helpers for tests that run real DAGs (``dag.test()``) and real warehouses.

DAG files are written into the session's DAGs folder (``dag.test()`` only runs DAGs it
can serialise from there), imported, and run.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DAG_HEADER = """\
import pendulum
from airflow.providers.common.compat.sdk import DAG, task
from airflow_provider_namelookup.operators import (
    CountryOfOriginOperator, GenderLookupOperator, SqlCountryOfOriginOperator, SqlGenderLookupOperator)
from airflow_provider_namelookup.sensors import NameLookupCreditsSensor

"""


@dataclass
class DagHandle:
    """A DAG written to the DAGs folder, ready to ``run()``."""

    dag_id: str
    path: Path
    dag: Any = None
    last_run: Any = None

    def run(self, **kwargs: Any) -> Any:
        self.last_run = self.dag.test(**kwargs)
        return self.last_run

    def state(self, task_id: str, map_index: int = -1) -> str | None:
        ti = self.last_run.get_task_instance(task_id, map_index=map_index)
        return None if ti is None or ti.state is None else str(ti.state)

    def xcom(self, task_id: str, map_index: int = -1, key: str = "return_value") -> Any:
        from airflow.utils.session import create_session

        from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS

        if not AIRFLOW_V_3_0_PLUS:  # Airflow 2 reads XCom through its XCom class
            from airflow.models.xcom import XCom

            return XCom.get_one(run_id=self.last_run.run_id, key=key, task_id=task_id, dag_id=self.dag_id,
                                map_index=map_index)
        from airflow.models.xcom import XComModel

        with create_session() as session:
            row = session.scalars(XComModel.get_many(
                run_id=self.last_run.run_id, key=key, task_ids=task_id, dag_ids=self.dag_id,
                map_indexes=map_index)).first()
            return None if row is None else XComModel.deserialize_value(row)


def dag_bag(dag_folder: Path | str) -> Any:
    """Parse the DAG files under ``dag_folder`` (``DagBag`` moved in Airflow 3.2)."""
    from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_2_PLUS

    if AIRFLOW_V_3_2_PLUS:
        from airflow.dag_processing.dagbag import DagBag
    else:
        from airflow.models.dagbag import DagBag
    return DagBag(dag_folder=str(dag_folder))


def load_dag(path: Path, dag_id: str) -> DagHandle:
    """Parse a DAG file (which must sit in the DAGs folder for ``dag.test()``)."""
    bag = dag_bag(path)
    assert not bag.import_errors, bag.import_errors
    return DagHandle(dag_id, path, bag.dags[dag_id])


def write_dag(dags_folder: Path, body: str, dag_id: str | None = None) -> DagHandle:
    """Write a DAG file whose ``with DAG(...)`` block is ``body`` (indented under it) and load it."""
    dag_id = dag_id or f"test_{uuid.uuid4().hex[:10]}"
    source = DAG_HEADER + (
        f"with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False) as dag:\n"
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", "    "))
    path = dags_folder / f"{dag_id}.py"
    path.write_text(source)
    return load_dag(path, dag_id)


@dataclass
class Warehouse:
    """A real SQL database reached through an Airflow connection id."""

    kind: str  # sqlite | postgres | mariadb | duckdb | snowflake | bigquery | databricks
    conn_id: str
    conn: dict[str, Any]
    created: list[str] = field(default_factory=list)
    answers_table: str = "namelookup_answers"
    several_processes: bool = True
    """Runs in several processes may write it at once (not DuckDB: one writing process per file;
    not fakesnow, which answers in the test process only)."""
    concurrent_runs: bool = True
    """Runs in several threads of the test process may write it at once (not fakesnow: its
    connections share one DuckDB database, whose optimistic transactions fail where Snowflake's
    table locks make a statement wait; not Databricks on the local Spark: Iceberg's optimistic
    commits are not Delta's, so what concurrent runs do there would prove nothing of Databricks)."""

    @property
    def capabilities(self) -> Any:
        """What the compliance suite may ask of it (the suite's ``Capabilities``)."""
        from airflow_provider_namelookup.testing.capabilities import Capabilities

        return Capabilities(concurrent_runs=self.concurrent_runs)

    @property
    def hook(self) -> Any:
        from airflow.providers.common.compat.sdk import BaseHook

        from airflow_provider_namelookup.operators.sql_hook import sql_hook

        return sql_hook(self.conn_id) or BaseHook.get_connection(self.conn_id).get_hook()

    @property
    def dialect(self) -> Any:
        """The provider's dialect of this warehouse: its bind marker and literals, as the engine writes them."""
        from airflow_provider_namelookup.warehouse.dialects import dialect_for

        return dialect_for(self.hook)

    def table_name(self, prefix: str = "customers") -> str:
        name = self.qualified(f"{prefix}_{uuid.uuid4().hex[:8]}")
        self.created += [name, f"{name}_gender", f"{name}_origin", f"{name}_out"]
        return name

    def qualified(self, name: str) -> str:
        """``name`` in the warehouse's test schema (BigQuery names every table's dataset)."""
        return f"analytics.{name}" if self.kind == "bigquery" and "." not in name else name

    def set_name(self, table: str, key: int, name: Any) -> None:
        """``UPDATE table SET name = <name> WHERE customer_id = key`` (google's DB-API cannot type a NULL parameter)."""
        if self.kind == "bigquery":
            self.hook.run(f"UPDATE {table} SET name = {self.dialect.literal(name)} WHERE customer_id = {key}")
            return
        self.hook.run(f"UPDATE {table} SET name = {self.dialect.placeholder} WHERE customer_id = {key}",
                      parameters=(name,))

    def create_customers(self, rows: list[tuple[Any, ...]], *, name: str | None = None, key_type: str = "integer",
                         name_type: str = "text", country_type: str = "text") -> str:
        """A customers(customer_id, name, country) table holding ``rows``; the types are the compliance
        suite's kinds (:data:`~airflow_provider_namelookup.testing.compliance.COLUMN_KINDS`)."""
        table = self.qualified(name) if name else self.table_name()
        key, names, countries = (self.sql_type(kind) for kind in (key_type, name_type, country_type))
        assert key and names and countries, f"{self.kind} has no type for {key_type}, {name_type} or {country_type}"
        if self.kind == "bigquery":  # no keys declared (bqemulator does not parse NOT ENFORCED)
            self.hook.run(f"CREATE TABLE {table} (customer_id {key} NOT NULL, name {names}, country {countries})")
        elif self.kind == "clickhouse":  # sorted by the key; UPDATE needs the block-number columns
            self.hook.run(f"CREATE TABLE {table} (customer_id {key}, name {names}, country {countries}) "
                          f"ENGINE = MergeTree ORDER BY customer_id {CLICKHOUSE_UPDATABLE}")
        else:
            primary = "" if self.kind == "databricks" else " PRIMARY KEY"  # Spark declares no keys (Unity Catalog does)
            self.hook.run(f"CREATE TABLE {table} (customer_id {key}{primary}, name {names}, country {countries})")
        self.insert(table, rows)
        return table

    def sql_type(self, kind: str) -> str | None:
        """This warehouse's type for one of the compliance suite's column kinds (None: it has none)."""
        if self.kind == "clickhouse":  # a column is not nullable unless it says so
            return {"integer": "Int32", "bigint": "Int64", "uuid": "UUID", "text": "Nullable(String)",
                    "varchar(20)": "Nullable(String)", "char(2)": "Nullable(FixedString(2))"}[kind]
        text = {"sqlite": "TEXT", "databricks": "STRING", "bigquery": "STRING"}.get(self.kind, "VARCHAR(2000)")
        has_uuid = self.kind in ("postgres", "mariadb", "duckdb")
        return {"integer": "INT64" if self.kind == "bigquery" else "INTEGER",
                "bigint": "INT64" if self.kind == "bigquery" else "BIGINT",
                "uuid": "UUID" if has_uuid else None,
                "text": text,
                "varchar(20)": "STRING(20)" if self.kind == "bigquery" else "VARCHAR(20)",
                "char(2)": "STRING(2)" if self.kind == "bigquery" else "CHAR(2)"}[kind]

    def create_people(self, rows: list[tuple[Any, ...]]) -> str:
        """A people(customer_id, name, last_name, country) table holding ``rows``: first and last names
        in two columns."""
        table = self.table_name("people")
        if self.kind == "bigquery":
            self.hook.run(f"CREATE TABLE {table} (customer_id INT64 NOT NULL, name STRING, last_name STRING, "
                          "country STRING)")
        elif self.kind == "clickhouse":
            text = "Nullable(String)"
            self.hook.run(f"CREATE TABLE {table} (customer_id Int32, name {text}, last_name {text}, country {text}) "
                          f"ENGINE = MergeTree ORDER BY customer_id {CLICKHOUSE_UPDATABLE}")
        else:
            text = {"sqlite": "TEXT", "databricks": "STRING"}.get(self.kind, "VARCHAR(2000)")
            key = "" if self.kind == "databricks" else " PRIMARY KEY"
            self.hook.run(f"CREATE TABLE {table} (customer_id INTEGER{key}, name {text}, last_name {text}, "
                          f"country {text})")
        self.insert(table, rows)
        return table

    def set_column(self, table: str, key: int, column: str, value: Any) -> None:
        """``UPDATE table SET column = <value> WHERE customer_id = key``, the value written as a literal."""
        self.hook.run(f"UPDATE {table} SET {column} = {self.dialect.literal(value)} WHERE customer_id = {key}")

    def insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            marks = "(" + self.dialect.marks(len(rows[0])) + ")"
            conn = self.hook.get_conn()
            try:
                cur = conn.cursor()
                if self.kind == "bigquery":  # one job; google's DB-API cannot type a NULL parameter
                    literal = self.dialect.literal
                    values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
                    cur.execute(f"INSERT INTO {table} VALUES {values}")
                elif self.kind in ("snowflake", "databricks"):  # executemany runs row by row on both
                    for start in range(0, len(rows), 1_000):
                        part = rows[start:start + 1_000]
                        cur.execute(f"INSERT INTO {table} VALUES {', '.join([marks] * len(part))}",
                                    [value for row in part for value in row])
                else:
                    cur.executemany(f"INSERT INTO {table} VALUES {marks}", rows)
                conn.commit()
            finally:
                conn.close()

    def table_names(self) -> set[str]:
        """The tables of the warehouse's test schema, by bare name."""
        listing = {"sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
                   "bigquery": "SELECT table_name FROM analytics.INFORMATION_SCHEMA.TABLES",
                   "databricks": "SHOW TABLES",
                   "clickhouse": "SELECT name FROM system.tables WHERE database = currentDatabase()"}[self.kind]
        return {str(row[-2 if self.kind == "databricks" else 0]) for row in self.rows(listing)}

    def has_table(self, table: str) -> bool:
        """Whether ``table`` can be read: ``assert not house.has_table(f"{table}_gender")`` for a run that
        must fail before it creates anything."""
        try:
            self.rows(f"SELECT 1 FROM {table} WHERE 1 = 0")
        except Exception:
            return False
        return True

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.hook.get_records(sql, params)]

    def drop_created(self) -> None:
        for table in self.created:
            with contextlib.suppress(Exception):  # best-effort cleanup
                self.hook.run(f"DROP TABLE IF EXISTS {table}")


class NoTransactions:
    """What an in-process fake DB-API connection does with transactions: nothing (each statement stands)."""

    def begin(self) -> None:
        """Nothing to begin."""

    def commit(self) -> None:
        """Nothing to commit."""

    def rollback(self) -> None:
        """Nothing to undo."""

    def close(self) -> None:
        """Nothing to release."""


def free_port() -> int:
    """A loopback TCP port free right now (for a server the test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CLICKHOUSE_UPDATABLE = "SETTINGS enable_block_number_column = 1, enable_block_offset_column = 1"
"""What a ClickHouse MergeTree needs for the tests' ``UPDATE`` of a source row (lightweight updates)."""


@contextlib.contextmanager
def own_entry_points(folder: Path) -> Iterator[None]:
    """This checkout's ``pyproject.toml`` entry points as an installed distribution's (a ``.dist-info``
    in ``folder``, put first on ``sys.path``), for the duration: what ``pip install .`` would register,
    without reinstalling the shared venv's editable install (which points at another checkout)."""
    import sys
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    info = folder / f"airflow_provider_namelookup-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) + "\n"
        for group, points in project["entry-points"].items()))
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def set_connection(conn_id: str, conn: dict[str, Any]) -> None:
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)


def require(module: str, reason: str) -> Any:
    """Import ``module``, or skip with ``reason``; mandatory when NAMELOOKUP_REQUIRE_DATABASES=1 (CI)."""
    import importlib

    import pytest

    if os.environ.get("NAMELOOKUP_REQUIRE_DATABASES") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason)


def warehouses(*kinds: str, name: str = "house") -> Any:
    """A fixture (``name``) parametrised over the warehouses ``kinds``, each its ``<kind>_warehouse``
    fixture (conftest.py): for tests that run on some engines only, and for a module that runs another
    module's tests on its own engine by overriding the fixture they take.

    Example, in a test module::

        house = warehouses("sqlite", "postgres")

        def test_something(house): ...  # test_something[sqlite], test_something[postgres]
    """
    import pytest

    @pytest.fixture(name=name, params=kinds)
    def fixture(request: pytest.FixtureRequest) -> Any:
        return request.getfixturevalue(f"{request.param}_warehouse")
    return fixture
