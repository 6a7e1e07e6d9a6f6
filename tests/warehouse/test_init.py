"""``table_run``: what a run on a warehouse whose SQL the tests only parse says before it starts."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.run import RunOptions
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.warehouse import TableRunSpec, table_run
from airflow_provider_namelookup.warehouse.source import TableSource
from tests.warehouse.dialects.recording import RecordingHook, RecordingSession, Warehouse


def made_run(conn_type: str, caplog: pytest.LogCaptureFixture, **options: bool) -> list[logging.LogRecord]:
    caplog.clear()
    session = RecordingSession(RecordingHook(conn_type, Warehouse([])))
    source = TableSource(session.dialect, table="customers", key_column="customer_id", name_column="first_name")
    job = TableRunSpec(source=source, target="customers_gender", answers="namelookup_answers",
                       rules=QueryRules(LookupKind.GENDER))
    with caplog.at_level(logging.INFO, logger="made"):
        table_run(session, job, NameLookupAsyncHook.for_url("http://127.0.0.1:9", "t" * 32), logging.getLogger("made"),
                  RunOptions(**options))
    session.shutdown()
    return [r for r in caplog.records if r.name == "made"]


@pytest.mark.parametrize("conn_type", ["redshift", "mssql"])
def test_a_warehouse_the_tests_only_parse_is_named_in_a_warning(conn_type: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    warnings = [r.getMessage() for r in made_run(conn_type, caplog) if r.levelno == logging.WARNING]
    assert len([w for w in warnings if "has not been run on" in w and conn_type in w]) == 1


@pytest.mark.parametrize("conn_type", ["snowflake", "bigquery", "databricks"])
def test_a_warehouse_the_tests_run_on_an_emulator_is_not_said_to_be_parsed_only(
        conn_type: str, caplog: pytest.LogCaptureFixture) -> None:
    warnings = [r.getMessage() for r in made_run(conn_type, caplog) if r.levelno == logging.WARNING]
    assert not [w for w in warnings if "has not been run on" in w]


@pytest.mark.parametrize(("conn_type", "seconds"), [("snowflake", 30), ("bigquery", 30), ("mssql", 10)])
def test_a_longer_store_interval_is_a_warning(conn_type: str, seconds: int, caplog: pytest.LogCaptureFixture) -> None:
    warnings = [r.getMessage() for r in made_run(conn_type, caplog) if r.levelno == logging.WARNING]
    assert [w for w in warnings if f"at most every {seconds} s" in w and "loses up to that long's answers" in w]
    assert not [r for r in made_run(conn_type, caplog, plan_only=True) if "stored" in r.getMessage()]


@pytest.mark.parametrize("conn_type", ["sqlite", "duckdb"])
def test_warehouses_the_tests_run_at_full_promise_get_no_warning(conn_type: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    assert [r for r in made_run(conn_type, caplog) if r.levelno >= logging.WARNING] == []
