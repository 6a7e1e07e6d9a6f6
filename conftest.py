"""Test-session environment, set before anything imports Airflow.

Every test session gets a throwaway AIRFLOW_HOME (its SQLite metadata database is
created on demand by the ``airflow_db`` fixture), so tests never touch a user's real
Airflow installation, and example DAGs are loaded from ``example_dags/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent
_HOME = tempfile.mkdtemp(prefix="namelookup-airflow-")
DAGS_FOLDER = Path(_HOME) / "dags"
os.environ.update({
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
})
REQUIRE_DATABASES = os.environ.get("NAMELOOKUP_REQUIRE_DATABASES") == "1"


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    """A migrated SQLite metadata database and a DAGs folder holding the example DAGs.

    ``dag.test()`` only runs DAGs it can serialise from the DAGs folder, so test DAGs
    are written there too (see ``tests/support.py``).
    """
    DAGS_FOLDER.mkdir(parents=True, exist_ok=True)
    # the key pseudonymising runs (e-mails and full names by default) read; a test of a missing key unsets it
    os.environ.setdefault("AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION",
                          json.dumps({"conn_type": "generic", "password": secrets.token_hex(32)}))
    for example in (ROOT / "example_dags").glob("*.py"):
        shutil.copy(example, DAGS_FOLDER / example.name)
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True,
                   env=os.environ.copy())
    yield DAGS_FOLDER


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``@pytest.mark.compat(warehouse="sqlite")`` puts only the variants with those parameters
    in the smoke subset (``pytest -m compat``)."""
    for item in items:
        wanted = {k: v for m in item.iter_markers("compat") for k, v in m.kwargs.items()}
        params = getattr(getattr(item, "callspec", None), "params", {})
        if wanted and any(params.get(name) != value for name, value in wanted.items()):
            item.own_markers = [m for m in item.own_markers if m.name != "compat"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


# Warehouses --------------------------------------------------------------------------------------

POSTGRES = {"conn_type": "postgres", "host": "127.0.0.1", "port": 5432, "login": "postgres", "schema": "test"}
SNOWFLAKE = {"conn_type": "snowflake", "login": "namelookup", "password": "fakesnow", "schema": "public",
             "extra": {"account": "namelookup", "database": "warehouse", "warehouse": "compute"}}
"""Answered by fakesnow (Snowflake's SQL run on DuckDB) in the test process, behind the real SnowflakeHook."""
BIGQUERY = {"conn_type": "gcpbigquery", "extra": {"project": "local-project", "location": "US", "is_anonymous": True,
                                                  "use_legacy_sql": False}}
"""Answered by bqemulator (tests/bigquery_emulator.py) through the real BigQueryHook's client."""
DATABRICKS = {"conn_type": "databricks", "host": "localhost", "password": "spark",
              "extra": {"http_path": "/sql/1.0/warehouses/local"}}
"""Answered by a local Spark 3.5.6 on Iceberg tables (a fresh warehouse directory per session), behind the
real DatabricksSqlHook: its ``databricks.sql.connect`` returns tests/warehouse/spark_dbapi.py's connection."""
CLICKHOUSE = {"conn_type": "clickhouse", "host": "localhost", "schema": "test"}
"""Answered by chdb (the ClickHouse engine in the test process) behind the real ClickHouseHook: its
``clickhouse_connect.get_client`` returns tests/warehouse/chdb_client.py's client; the dialect is found
through this checkout's entry points (:func:`tests.support.own_entry_points`), as an installed package's."""
MARIADB = {"conn_type": "mysql", "host": "127.0.0.1", "port": 3306, "login": "root", "password": "",
           "schema": "test", "extra": {"client": "mysql-connector-python"}}


def _unreachable(kind: str) -> str | None:
    """Why ``kind`` cannot be used here, or None when it can."""
    try:
        if kind == "duckdb":
            import airflow.providers.duckdb.hooks.duckdb
        elif kind == "snowflake":
            import airflow.providers.snowflake.hooks.snowflake
            import fakesnow  # noqa: F401
        elif kind == "bigquery":
            import airflow.providers.google.cloud.hooks.bigquery
            import google.cloud.bigquery  # noqa: F401

            from tests.bigquery_emulator import executable

            if executable() is None:
                return "bigquery cannot be used: bqemulator is not installed (make bigquery-emulator installs it)"
        elif kind == "databricks":
            import importlib

            from tests.warehouse.spark_dbapi import shared_spark

            importlib.import_module("airflow.providers.databricks.hooks.databricks_sql")

            shared_spark()
        elif kind == "clickhouse":
            import airflow.providers.clickhousedb.hooks.clickhouse  # noqa: F401
            import chdb  # noqa: F401
        elif kind == "postgres":
            import psycopg2

            psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", connect_timeout=3).close()
        elif kind == "mariadb":
            import mysql.connector

            mysql.connector.connect(host="127.0.0.1", port=3306, user="root", password="", database="test",
                                    connection_timeout=3).close()
    except Exception as err:
        if isinstance(err, ImportError):
            return f"{kind} cannot be used: {err} (the test extra installs it)"
        return f"{kind} is not reachable on 127.0.0.1: {type(err).__name__}: {err}"
    return None


def require_reachable(kind: str) -> None:
    """Skip the test when ``kind`` cannot be used here (:func:`_unreachable`); fail it instead in CI
    (NAMELOOKUP_REQUIRE_DATABASES=1)."""
    if reason := _unreachable(kind):
        if REQUIRE_DATABASES:
            pytest.fail(f"{reason} (NAMELOOKUP_REQUIRE_DATABASES=1 makes it mandatory)")
        pytest.skip(reason)


@pytest.fixture(params=["sqlite", "postgres", "mariadb", "duckdb", "snowflake", "bigquery"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A real warehouse behind an Airflow connection: SQLite always, PostgreSQL and MariaDB
    when reachable, DuckDB, Snowflake (fakesnow) and BigQuery (bqemulator) when their packages
    are installed (each mandatory when NAMELOOKUP_REQUIRE_DATABASES=1, as in CI)."""
    yield from _warehouse(request.param, tmp_path, request)


@pytest.fixture(scope="session")
def bigquery_emulator() -> Iterator[Any]:
    """bqemulator for the whole session; the BigQuery client of every BigQueryHook talks to it."""
    from tests.bigquery_emulator import executable, start

    program = executable()
    assert program is not None
    emulator = start(program)
    previous = os.environ.get("BIGQUERY_EMULATOR_HOST")
    os.environ["BIGQUERY_EMULATOR_HOST"] = emulator.url
    yield emulator
    emulator.stop()
    if previous is None:
        os.environ.pop("BIGQUERY_EMULATOR_HOST", None)
    else:
        os.environ["BIGQUERY_EMULATOR_HOST"] = previous


def _one_warehouse(kind: str, doc: str) -> Any:
    """A fixture of one warehouse kind (``<kind>_warehouse``), for tests that do not run on every one."""
    @pytest.fixture(name=f"{kind}_warehouse")
    def fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
        yield from _warehouse(kind, tmp_path, request)
    fixture.__doc__ = doc
    return fixture


sqlite_warehouse = _one_warehouse("sqlite", "SQLite, always there.")
postgres_warehouse = _one_warehouse("postgres", "PostgreSQL on 127.0.0.1:5432.")
mariadb_warehouse = _one_warehouse("mariadb", "MariaDB on 127.0.0.1:3306.")
databricks_warehouse = _one_warehouse(
    "databricks", "Databricks SQL's statements on a local Spark with Iceberg tables (slow: not in ``warehouse``).")
bigquery_warehouse = _one_warehouse(
    "bigquery", "BigQuery's statements on bqemulator, for the tests the ``warehouse`` fixture does not parametrize.")
duckdb_warehouse = _one_warehouse("duckdb", "DuckDB on a file of the test's own.")
clickhouse_warehouse = _one_warehouse(
    "clickhouse", "ClickHouse's statements on chdb, in process, behind the real ClickHouseHook (not in ``warehouse``).")


def _warehouse(kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> Iterator[Any]:
    from tests.support import Warehouse, set_connection

    if kind != "sqlite":
        require_reachable(kind)
    conn = {"sqlite": {"conn_type": "sqlite", "host": str(tmp_path / "warehouse.db")},
            "duckdb": {"conn_type": "duckdb", "host": str(tmp_path / "warehouse.duckdb")},
            "postgres": POSTGRES, "mariadb": MARIADB, "snowflake": SNOWFLAKE, "bigquery": BIGQUERY,
            "databricks": DATABRICKS, "clickhouse": CLICKHOUSE}[kind]
    conn_id = f"warehouse_{kind}"
    set_connection(conn_id, conn)
    house = Warehouse(kind, conn_id, conn,
                      several_processes=kind not in ("duckdb", "snowflake", "databricks", "clickhouse"),
                      concurrent_runs=kind not in ("snowflake", "databricks"))
    # Each test gets its own answers table (other sessions' tests share these databases).
    answers = house.table_name("answers")
    os.environ["AIRFLOW__NAMELOOKUP__ANSWERS_TABLE"] = answers
    house.answers_table = answers
    with contextlib.ExitStack() as stack:
        if kind == "snowflake":  # every Snowflake connection of the test process, for the whole test
            import fakesnow

            stack.enter_context(fakesnow.patch())
        if kind == "bigquery":
            assert request is not None
            request.getfixturevalue("bigquery_emulator")
            from unittest import mock

            from airflow.providers.google.cloud.hooks.bigquery import BigQueryHook

            from airflow_provider_namelookup.warehouse.dialects.bigquery import BigQueryDialect

            # The tests' own statements (hook.run, get_records) on the connection the table operators
            # use; BigQueryHook.get_conn() builds Google's discovery client, which cannot be pointed here.
            stack.enter_context(mock.patch.object(BigQueryHook, "get_conn", BigQueryDialect.connect))
        if kind == "databricks":  # DatabricksSqlHook's connections, for the whole test
            from unittest import mock

            from tests.warehouse import spark_dbapi

            stack.enter_context(mock.patch("databricks.sql.connect", spark_dbapi.connect))
        if kind == "clickhouse":  # ClickHouseHook's clients, for the whole test; the dialect by entry point
            from unittest import mock

            from tests.support import own_entry_points
            from tests.warehouse.chdb_client import chdb_client_factory

            assert request is not None
            stack.enter_context(own_entry_points(request.getfixturevalue("tmp_path_factory").mktemp("dist")))
            chdb_path = request.getfixturevalue("tmp_path_factory").getbasetemp() / "chdb"
            stack.enter_context(mock.patch("clickhouse_connect.get_client", chdb_client_factory(chdb_path)))
        yield house
        os.environ.pop("AIRFLOW__NAMELOOKUP__ANSWERS_TABLE", None)
        house.drop_created()


# The service ---------------------------------------------------------------------------------------

@pytest.fixture
def namelookup(emulator: Any, make_account: Any) -> Iterator[Any]:
    """A fresh emulator account (100 credits) behind ``namelookup_default``."""
    from tests.support import set_connection

    class Account:
        token = make_account(credits=100)
        url = emulator.url

        def remaining(self) -> int:
            return emulator.state.remaining_credits(self.token)

        def set_credits(self, remaining: int) -> None:
            emulator.top_up(self.token, remaining=remaining)

    account = Account()
    previous = os.environ.get("AIRFLOW_CONN_NAMELOOKUP_DEFAULT")
    set_connection("namelookup_default", {"conn_type": "namelookup", "host": emulator.url,
                                          "password": account.token, "extra": {"backoff_base": 0.01}})
    yield account
    if previous is None:
        os.environ.pop("AIRFLOW_CONN_NAMELOOKUP_DEFAULT", None)
    else:
        os.environ["AIRFLOW_CONN_NAMELOOKUP_DEFAULT"] = previous


@pytest.fixture
def write_dag(airflow_db: Path) -> Any:
    """``write_dag(body)`` → a DAG in the DAGs folder, ready to ``.run()``."""
    from tests.support import write_dag as _write

    return lambda body, dag_id=None: _write(airflow_db, body, dag_id)
