"""Mistakes in what a DAG author wrote are named and fail the task at once (issue 19, item 2)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")


def _operator(warehouse: Any, **arguments: Any) -> SqlGenderLookupOperator:
    options = {"task_id": "enrich", "conn_id": warehouse.conn_id, "key_column": "customer_id",
               "name_column": "name", "country_column": "country", **arguments}
    return SqlGenderLookupOperator(**options)


@pytest.mark.database
@pytest.mark.parametrize(("arguments", "expected"), [
    ({"source_table": "customerz"}, "source_table 'customerz' cannot be read on connection 'warehouse_{kind}'"),
    ({"name_column": "nmae"}, "name_column 'nmae' is not a column of source_table '{table}'"),
    ({"country_column": "land"}, "country_column 'land' is not a column of source_table '{table}'"),
    ({"key_column": "id"}, "key_column 'id' is not a column of source_table '{table}'"),
    ({"where": "customer_id >"}, "where must be one boolean expression over the source's columns: it ends too early: "
                                 'something must follow ">" (line 1, column 13)'),
    ({"where": "nope > 1"}, "where reads nope, which is not a column of source_table '{table}' (its columns: "),
    ({"where": "nmae > 'A'"}, "where reads nmae, which is not a column of source_table '{table}' (nearest: name)"),
    ({"sql": "SELEC customer_id, name FROM x", "source_table": None, "target_table": "out"},
     'sql must be one query that reads: it cannot be read at "," (line 1, column 18), after "SELEC customer_id": '
     "is SELEC meant to be SELECT?"),
    ({"sql": "SELECT customer_id, name FROM no_such_table", "source_table": None, "target_table": "out"},
     "sql does not run"),
])
def test_a_mistake_in_the_source_is_named_before_anything_is_spent(warehouse: Any, namelookup: Any,
                                                                   arguments: dict[str, Any], expected: str) -> None:
    table = warehouse.create_customers([(1, "Anna", "DE")])
    arguments = {"source_table": table, **arguments}
    if arguments["source_table"] is None:
        del arguments["source_table"]
    with pytest.raises(Exception) as info:
        _operator(warehouse, **arguments).execute({})
    message = str(info.value)
    assert expected.format(kind=warehouse.kind, table=table).lower() in message.lower()  # Snowflake's NAME
    assert isinstance(info.value.__cause__, WarehouseInputError)
    assert "SELECT * FROM (" not in message  # only what the author wrote, never the engine's statement
    assert namelookup.remaining() == 100


def test_a_missing_table_fails_the_task_without_its_retries(sqlite_warehouse: Any, namelookup: Any,
                                                            write_dag: Any) -> None:
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id={sqlite_warehouse.conn_id!r}, source_table="customerz",
                                key_column="customer_id", name_column="name", retries=2,
                                retry_delay=__import__("datetime").timedelta(minutes=10))
    """)
    run = dag.run()
    assert str(run.state) == "failed" and dag.state("enrich") == "failed"  # not up_for_retry: no retry can fix it
    ti = run.get_task_instance("enrich")
    assert ti.try_number == 1


house = warehouses("sqlite", "postgres")


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"name_column": "frist_name"}, "name_column 'frist_name' is not a column of source_table '{table}' on "
                                    "connection 'warehouse_{kind}' (nearest: first_name, last_name): "),
    ({"key_column": "persn_id"}, "key_column 'persn_id' is not a column of source_table '{table}' on "
                                 "connection 'warehouse_{kind}' (nearest: person_id): "),
    ({"country_column": "contry"}, "country_column 'contry' is not a column of source_table '{table}' on "
                                   "connection 'warehouse_{kind}' (nearest: country): "),
    ({"country_column": "zzz"}, "country_column 'zzz' is not a column of source_table '{table}' on connection "
                                "'warehouse_{kind}' (its columns: person_id, first_name, last_name, country): "),
    ({"source_table": "{misspelled}"}, "source_table '{misspelled}' cannot be read on connection "
                                       "'warehouse_{kind}' (does it exist?) (nearest: {table}"),  # best first
])
def test_a_misspelled_column_or_table_fails_at_once_naming_the_nearest_ones(
        house: Any, namelookup: Any, write_dag: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, arguments: dict[str, Any], expected: str) -> None:
    """Issue 36, item 4: ``name_column 'frist_name' is not a column of source_table ...: column
    s.frist_name does not exist``, PostgreSQL's own hint dropped. The provider knows the table's
    columns (and, cheaply, the schema's tables): it names the nearest ones on every warehouse, and
    keeps the warehouse's hint where it gives one."""
    table = house.table_name("people")
    text = "TEXT" if house.kind == "sqlite" else "VARCHAR(200)"
    house.hook.run(f"CREATE TABLE {table} (person_id INTEGER PRIMARY KEY, first_name {text}, last_name {text}, "
                   f"country {text})")
    house.insert(table, [(1, "Anna", "Berg", "DE")])
    misspelled = table.replace("people_", "peopel_")
    given = {"source_table": table, "key_column": "person_id", "name_column": "first_name",
             "country_column": "country", **arguments}
    given["source_table"] = given["source_table"].format(misspelled=misspelled)
    rendered = ", ".join(f"{k}={v!r}" for k, v in given.items())
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id={house.conn_id!r}, {rendered}, retries=2,
                                retry_delay=__import__("datetime").timedelta(minutes=10))
    """)
    run = dag.run()
    assert dag.state("enrich") == "failed" and run.get_task_instance("enrich").try_number == 1
    out = capfd.readouterr()
    logged = out.out + out.err + caplog.text
    assert expected.format(kind=house.kind, table=table, misspelled=misspelled) in logged
    if house.kind == "postgres" and "is not a column" in expected and "nearest" in expected:  # its own hint, kept
        assert "(HINT: Perhaps you meant to reference the column" in logged
    assert "LINE 1" not in logged  # the statement the warehouse quotes is the engine's, not the author's
    assert namelookup.remaining() == 100


@pytest.mark.parametrize("kind", ["bigquery", "databricks"])
def test_a_misspelled_table_is_named_with_its_neighbours_on_bigquery_and_databricks(
        kind: str, request: pytest.FixtureRequest, namelookup: Any) -> None:
    """Issue 48, item 6: the statement that lists a schema's tables (``table_names``) run on bqemulator
    and on the local Spark, through the dialects' own spelling: a misspelled ``source_table`` names the
    table that exists beside it, as on the other warehouses."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    house = request.getfixturevalue(f"{kind}_warehouse")
    table = house.create_customers([(1, "Anna", "DE")], name=house.table_name("people"))
    misspelled = table.replace("people_", "peopel_")
    with pytest.raises(AirflowFailException) as info:
        _operator(house, source_table=misspelled).execute({})
    assert f"source_table '{misspelled}' cannot be read on connection 'warehouse_{kind}' (does it exist?) " \
           f"(nearest: {table})" in str(info.value)
    assert namelookup.remaining() == 100
    if kind == "databricks":  # its tables are the current schema's above: the same listing, named
        from airflow_provider_namelookup.warehouse.diagnosis import Catalog
        from airflow_provider_namelookup.warehouse.session import WarehouseSession

        session = WarehouseSession(house.hook)
        try:
            schema = session.fetchall("SELECT current_database()")[0][0]
            catalog = Catalog(session.dialect, session.probe, session.fetchall, session.column_names)
            assert f"{schema}.{table}" in catalog.table_names(f"{schema}.{misspelled}")
        finally:
            session.shutdown()
