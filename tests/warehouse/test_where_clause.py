"""A table source's ``where`` is one boolean expression or refused (issue 25, item 6): checked
by sqlglot in the warehouse's dialect, after templating, before anything runs or is spent."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects import WAREHOUSES
from airflow_provider_namelookup.warehouse.where_clause import WhereRefused, checked_where

EVERY_DIALECT = {w.name: w.dialect_class() for w in WAREHOUSES}

FILTERS = ["customer_id % 2 = 0", "customer_id >= 10 AND customer_id < 20", "signup_date >= '2026-01-01'",
           "name LIKE 'A%' OR country IN ('DE', 'AT')", "lower(name) <> 'x' AND country IS NOT NULL",
           "NOT (customer_id BETWEEN 1 AND 5)", "note = 'a; -- not a comment /* nor this */'",
           "COALESCE(country, 'DE') = 'DE'", "CASE WHEN customer_id > 5 THEN 1 ELSE 0 END = 1"]


@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize("where", FILTERS)
def test_filters_pass_as_written(where: str, dialect: str) -> None:
    assert checked_where(f"  {where}\n", EVERY_DIALECT[dialect]) == where


@pytest.mark.parametrize("blank", [None, "", "   \n"])
def test_no_where_is_none(blank: str | None) -> None:
    assert checked_where(blank, EVERY_DIALECT["sqlite"]) is None


@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize(("where", "rule"), [
    ("id > 0) OR (1=1", "it does not parse as one"),  # the audit's: a closing parenthesis escaping
    ("id > 0) UNION SELECT customer_id, name, country FROM other WHERE (1=1", "it does not parse as one"),
    ("id > 0 ORDER BY 1", "it does not parse as one"),
    ("id > 0; DROP TABLE customers", "no ';'"),
    ("id > 0;", "no ';'"),
    ("id > 0 -- ) OR (1=1", "no comments"),
    ("id > 0 /* ) OR (1=1 */", "no comments"),
    ("/* hidden */ id > 0", "no comments"),
    ("SELECT 1", "it is SELECT, not a condition"),
    ("id > 0 UNION ALL SELECT 1", "it is UNION, not a condition"),
    ("DROP TABLE customers", "it is DROP, not a condition"),
    ("*", "it is *, not a condition"),
    ("id > 0 x", "it is ALIAS, not a condition"),
    ("customer_id IN (SELECT id FROM other)", "no subquery"),
    ("EXISTS (SELECT 1 FROM other WHERE other.id = 1)", "no subquery"),
    ("(SELECT COUNT(*) FROM other) > 0", "no subquery"),
    ("customer_id > ?", "no bind parameters"),
])
def test_anything_else_is_refused_naming_where_the_rule_and_the_text(where: str, rule: str, dialect: str) -> None:
    with pytest.raises(WhereRefused) as info:
        checked_where(where, EVERY_DIALECT[dialect])
    message = str(info.value)
    assert message.startswith("where must be one boolean expression over the source's columns: ")
    assert rule in message and message.endswith(f"; got {where!r}")
    assert isinstance(info.value, WarehouseInputError)  # failed at once, without the task's retries


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
    assert checked_where("note LIKE 'a\\_b'", EVERY_DIALECT[dialect]) == "note LIKE 'a\\_b'"  # no quote after it


def test_a_where_that_is_not_text_is_refused() -> None:
    with pytest.raises(WhereRefused, match="it is a list, not SQL text"):
        checked_where(["id > 0"], EVERY_DIALECT["sqlite"])


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
