"""SqlGenderLookupOperator and SqlCountryOfOriginOperator in real DAG runs, on real warehouses."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

house = warehouses("sqlite")
"""The warehouse of the whole-run tests that ``warehouse`` does not run on every engine: SQLite here.
The modules of engines left out of ``warehouse`` (test_warehouse_bigquery.py, test_warehouse_databricks.py,
test_warehouse_clickhouse.py) import some of these tests and override ``house`` with their engine."""

CUSTOMERS = [
    (1, "Theresa", None), (2, "theresa ", None), (3, "Andrea", "IT"), (4, "Andrea", "DE"), (5, "John", "US"),
    (6, "", None), (7, "x" * 60, None), (8, "Anna", "Germany"), (9, "Theresa", None), (10, None, None),
]
VALID_DISTINCT = 4  # theresa, andrea/IT, andrea/DE, john/US


def gender_task(warehouse: Any, table: str, **extra: Any) -> str:
    args = {"sql_conn_id": warehouse.conn_id, "source_table": table, "key_column": "customer_id",
            "name_column": "name", "country_column": "country", **extra}
    rendered = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"SqlGenderLookupOperator(task_id='enrich', {rendered})"


def target_rows(warehouse: Any, table: str) -> dict[Any, dict[str, Any]]:
    rows = warehouse.rows(f"SELECT customer_id, gender, probability, status, error, credits_used, query_hash, "
                          f"enriched_at, country FROM {table}_gender ORDER BY customer_id")
    names = ("gender", "probability", "status", "error", "credits_used", "query_hash", "enriched_at", "country")
    return {r[0]: dict(zip(names, r[1:], strict=True)) for r in rows}


@pytest.mark.compat(house="sqlite")
def test_table_enrichment_is_correct_frugal_and_incremental(house: Any, write_dag: Any, namelookup: Any) -> None:
    """The table operator end to end in a DAG run (its summary in XCom); every warehouse keeps the
    same promises through the compliance suite (tests/warehouse/test_compliance.py)."""
    table = house.create_customers(CUSTOMERS)
    dag = write_dag(gender_task(house, table))
    assert str(dag.run().state) == "success"

    rows = target_rows(house, table)
    assert set(rows) == {c[0] for c in CUSTOMERS}  # every row has an outcome
    assert [rows[k]["gender"] for k in (1, 2, 3, 4, 5, 9)] == ["female", "female", "male", "female", "male", "female"]
    assert rows[3]["country"] == "IT" and rows[1]["country"] is None
    assert {k for k, r in rows.items() if r["status"] == "error"} == {6, 7, 8, 10}
    assert rows[7]["error"].startswith("parameter-first-name-invalid [first_name]: first_name must be 1 to 50")
    assert rows[8]["error"].startswith("invalid-country-code [country]")
    assert rows[10]["error"].startswith("mandatory-parameter-missing")
    spent = 100 - namelookup.remaining()
    assert spent == VALID_DISTINCT
    assert sum(r["credits_used"] for r in rows.values()) == spent
    summary = dag.xcom("enrich")
    assert (summary["rows_read"], summary["rows_enriched"], summary["rows_invalid"]) == (10, 6, 4)
    assert (summary["lookups"], summary["credits_used"], summary["requests"]) == (4, 4, 2)  # statistic + 1 batch
    assert summary["target"] == f"{table}_gender"

    # A second run over the unchanged table spends nothing and sends no request at all.
    assert str(dag.run().state) == "success"
    again = dag.xcom("enrich")
    assert (again["rows_unchanged"], again["lookups"], again["requests"], again["credits_used"]) == (10, 0, 0, 0)
    assert namelookup.remaining() == 100 - spent
    assert target_rows(house, table) == rows

    # A changed name is looked up again; a new row with a known name costs nothing.
    house.hook.run(f"UPDATE {table} SET name = 'Giulia' WHERE customer_id = 5")
    house.insert(table, [(11, "JOHN", "US"), (12, "Theresa", None)])
    assert str(dag.run().state) == "success"
    third = dag.xcom("enrich")
    assert (third["lookups"], third["cache_hits"], third["rows_unchanged"]) == (1, 2, 9)
    assert namelookup.remaining() == 100 - spent - 1
    after = target_rows(house, table)
    assert after[5]["gender"] == "female" and after[5]["query_hash"] != rows[5]["query_hash"]
    # Row 5 carried john/US's price; it changed, so the price moved to row 11, which holds john/US now.
    assert after[11]["gender"] == "male" and after[11]["credits_used"] == 1 and after[5]["credits_used"] == 1
    held = {r["query_hash"] for r in after.values() if r["status"] == "ok"}
    assert sum(r["credits_used"] for r in after.values()) == len(held) == 5  # every answer held, priced once
    assert after[1] == rows[1]  # untouched rows keep their enriched_at


def test_a_budget_fails_whole_or_spends_part_and_the_next_run_the_rest(house: Any, write_dag: Any,
                                                                       namelookup: Any) -> None:
    table = house.create_customers([(i, f"Name{i}", None) for i in range(1, 41)])
    failing = write_dag(gender_task(house, table, max_credits=25))
    assert str(failing.run().state) == "failed"
    assert namelookup.remaining() == 100

    partial = write_dag(gender_task(house, table, max_credits=25, on_insufficient_credits="partial"))
    assert str(partial.run().state) == "success"
    summary = partial.xcom("enrich")
    assert (summary["credits_used"], summary["rows_deferred"], summary["credits_needed"]) == (25, 15, 40)
    assert len(target_rows(house, table)) == 25 and namelookup.remaining() == 75

    assert str(partial.run().state) == "success"  # the next run picks up the rest
    assert len(target_rows(house, table)) == 40 and namelookup.remaining() == 60


def test_sql_source_where_shards_and_mapping(sqlite_warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    table = sqlite_warehouse.create_customers([(i, n, None) for i, n in enumerate(
        ["Anna", "Anna", "Carla", "Dora", "Emil", "Fritz", "Gina", "Hans"], start=1)])
    dag = write_dag(f"""
        SqlGenderLookupOperator.partial(
            task_id="enrich", sql_conn_id={sqlite_warehouse.conn_id!r}, key_column="customer_id",
            name_column="name", sql="SELECT customer_id, name FROM {table}", target_table="{table}_out",
        ).expand(where=["customer_id % 2 = 0", "customer_id % 2 = 1"])
    """)
    assert str(dag.run().state) == "success"
    rows = sqlite_warehouse.rows(f"SELECT customer_id, gender FROM {table}_out ORDER BY customer_id")
    assert [g for _, g in rows] == ["female", "female", "female", "female", "male", "male", "female", "male"]
    even, odd = dag.xcom("enrich", 0), dag.xcom("enrich", 1)
    assert even["rows_read"] == odd["rows_read"] == 4
    # dag.test() runs the shards one after the other, so the second finds Anna already
    # answered in the shared answers table (tests/operators/test_warehouse_concurrency.py runs them at once).
    assert (even["lookups"] + odd["lookups"], even["cache_hits"] + odd["cache_hits"]) == (7, 1)
    assert namelookup.remaining() == 100 - 7


@pytest.mark.database
def test_country_of_origin_table(warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    table = warehouse.create_customers([(1, "Giulia", None), (2, "Sven", None), (3, "giulia", None), (4, "", None)])
    dag = write_dag(f"""
        SqlCountryOfOriginOperator(task_id="origin", sql_conn_id={warehouse.conn_id!r}, source_table={table!r},
                                   key_column="customer_id", name_column="name")
    """)
    assert str(dag.run().state) == "success"
    rows = warehouse.rows(f"SELECT customer_id, top_country, ethnicity, language_of_origin, status, credits_used, "
                          f"result_json FROM {table}_origin ORDER BY customer_id")
    assert [r[1] for r in rows[:3]] == ["IT", rows[1][1], "IT"] and rows[1][1] in {"SE", "NO", "DK", "FI", "DE"}
    assert rows[0][2] == "ITALIAN" and rows[0][3]
    assert rows[3][4] == "error"
    assert sum(r[5] for r in rows) == 4 and namelookup.remaining() == 96
    assert '"country_of_origin"' in rows[0][6]


PEOPLE = [  # (key, first name, last name, country)
    (1, "Theresa", "Miller", "DE"), (2, " theresa", "MILLER ", "DE"), (3, "Theresa", None, "DE"),
    (4, "Theresa", " ", "DE"), (5, None, "Miller", "DE"), (6, "", "Miller", None), (7, "John", "Smith", "US"),
    (8, "Anna", "Schmidt", None), (9, "x" * 60, "y" * 45, None),
]


@pytest.mark.database
def test_full_names_from_a_first_and_a_last_name_column(warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    """Issue 50, item 2: ``last_name_column`` beside ``name_column``, on both table operators. A first and a
    last name are one full name, each distinct one paid once (rows 1 and 2); a NULL or blank last name leaves
    the first name alone (rows 3 and 4, one query); a row without a first name breaks the first name's
    rule whatever its last name (5, 6); a full name over 100 characters the full name's (9). A changed last
    name is looked up again; a last name that makes a full name answered before costs nothing."""
    table = warehouse.create_people(PEOPLE)
    common = (f"sql_conn_id={warehouse.conn_id!r}, source_table={table!r}, key_column='customer_id', "
              "name_column='name', last_name_column='last_name', pseudonymise=False")  # the echoes read in clear
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="gender", {common}, country_column="country")
        SqlCountryOfOriginOperator(task_id="origin", {common})
    """)
    assert str(dag.run().state) == "success"
    gender = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, status, error, gender, first_name, last_name, credits_used, query_hash "
        f"FROM {table}_gender ORDER BY customer_id")}
    assert {k for k, r in gender.items() if r[0] == "ok"} == {1, 2, 3, 4, 7, 8}
    assert gender[1][3:5] == ("Theresa", "Miller") and gender[1][6] == gender[2][6] != gender[3][6]
    assert gender[3][4] is None and gender[3][6] == gender[4][6]  # Theresa/DE, without a last name
    assert gender[5][1] == "mandatory-parameter-missing [first_name]: first_name is null; one of first_name, " \
                           "full_name or email must be set"
    assert gender[6][1].startswith("parameter-first-name-invalid [first_name]: first_name must be 1 to 50")
    assert gender[9][1].startswith("parameter-full-name-invalid [full_name]: full_name must be 1 to 100")
    origin = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, status, credits_used FROM {table}_origin ORDER BY customer_id")}
    assert {k for k, r in origin.items() if r[0] == "ok"} == {1, 2, 3, 4, 7, 8}
    # 4 distinct questions each: theresa miller(/DE), theresa(/DE), john smith(/US), anna schmidt
    assert (dag.xcom("gender")["credits_used"], dag.xcom("origin")["credits_used"]) == (4, 8)
    assert sum(r[5] for r in gender.values()) == 4 and sum(r[1] for r in origin.values()) == 8
    assert namelookup.remaining() == 100 - 12

    assert str(dag.run().state) == "success"  # a rerun reads no changed row and pays nothing
    assert (dag.xcom("gender")["rows_unchanged"], dag.xcom("gender")["credits_used"]) == (9, 0)
    assert namelookup.remaining() == 100 - 12

    warehouse.set_column(table, 7, "last_name", "Jones")  # a new full name: paid
    warehouse.set_column(table, 3, "last_name", "Miller")  # theresa miller/DE: answered before, free
    assert str(dag.run().state) == "success"
    summary = dag.xcom("gender")
    assert (summary["rows_unchanged"], summary["lookups"], summary["cache_hits"]) == (7, 1, 1)
    assert namelookup.remaining() == 100 - 12 - 1 - 2
    after = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, last_name, query_hash, credits_used FROM {table}_gender ORDER BY customer_id")}
    assert after[7][0] == "Jones" and after[7][1] != gender[7][6] and after[7][2] == 1
    assert after[3][0] == "Miller" and after[3][1] == gender[1][6]
    held = {r[1] for k, r in after.items() if k in gender and gender[k][0] == "ok"}
    assert sum(r[2] for r in after.values()) == len(held) == 4  # every answer the rows hold, priced once


def test_bad_configuration_fails_clearly(sqlite_warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(gender_task(sqlite_warehouse, table, target_table="x; DROP TABLE y"))
    assert str(dag.run().state) == "failed"
    assert sqlite_warehouse.rows(f"SELECT COUNT(*) FROM {table}") == [(1,)]


def test_plan_only_counts_credits_and_creates_nothing(house: Any, write_dag: Any, namelookup: Any) -> None:
    """``plan_only`` counts the credits, asks nothing and creates no table (no target, no answers
    table, no staging table); after a paying run it counts only what is new."""
    table = house.create_customers(CUSTOMERS)
    before = house.table_names()
    assert table.split(".")[-1] in before
    plan = write_dag(gender_task(house, table, plan_only=True))
    assert str(plan.run().state) == "success"
    summary = plan.xcom("enrich")
    assert (summary["credits_needed"], summary["distinct_queries"], summary["plan_only"]) == (VALID_DISTINCT,) * 2 + (
        True,)
    assert summary["requests"] == 0 and namelookup.remaining() == 100
    assert house.table_names() == before

    write_dag(gender_task(house, table)).run()
    house.insert(table, [(11, "Zoe", None)])
    assert str(plan.run().state) == "success"
    assert plan.xcom("enrich")["credits_needed"] == 1  # only the new name


def test_openlineage_names_source_and_target(sqlite_warehouse: Any, namelookup: Any) -> None:
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    op = SqlGenderLookupOperator(task_id="enrich", sql_conn_id=sqlite_warehouse.conn_id, source_table=table,
                                 key_column="customer_id", name_column="name")
    op.execute({})
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [d.name for d in lineage.inputs] == [table]
    assert [d.name for d in lineage.outputs] == [f"{table}_gender"]
    assert lineage.inputs[0].namespace == lineage.outputs[0].namespace
    assert lineage.inputs[0].namespace.startswith("sqlite://")


def test_an_invalid_token_fails_the_table_task_without_spending_its_retries(sqlite_warehouse: Any, write_dag: Any,
                                                                            namelookup: Any) -> None:
    from tests.support import set_connection

    set_connection("namelookup_bad_token", {"conn_type": "namelookup", "host": namelookup.url,
                                            "password": "not-a-valid-token", "extra": {"backoff_base": 0.01}})
    table = sqlite_warehouse.create_customers(CUSTOMERS)
    dag = write_dag(f"""
        from datetime import timedelta

        SqlGenderLookupOperator(task_id="enrich", sql_conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name",
                                namelookup_conn_id="namelookup_bad_token", retries=2, retry_delay=timedelta(0))
    """)
    assert str(dag.run().state) == "failed"
    ti = dag.last_run.get_task_instance("enrich")
    assert str(ti.state) == "failed" and ti.try_number == 1
    assert namelookup.remaining() == 100


def test_the_table_operators_are_common_sql_operators(sqlite_warehouse: Any, namelookup: Any,
                                                      write_dag: Any) -> None:
    from airflow.providers.common.sql.operators.sql import BaseSQLOperator

    table = sqlite_warehouse.create_customers([(1, "Anna", "DE"), (2, "Ben", None)])
    # conn_id and hook_params are templated, as in every common-sql operator; the earlier name still works
    conn = sqlite_warehouse.conn_id
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="enrich", conn_id="{{{{ params.warehouse }}}}", source_table={table!r},
                                key_column="customer_id", name_column="name", params={{"warehouse": {conn!r}}})
        SqlGenderLookupOperator(task_id="old_name", sql_conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", target_table="{table}_old")
    """)
    sqlite_warehouse.created.append(f"{table}_old")
    assert str(dag.run().state) == "success"
    summaries = [dag.xcom("enrich"), dag.xcom("old_name")]
    assert [s["rows_enriched"] for s in summaries] == [2, 2]
    assert sorted(s["cache_hits"] for s in summaries) == [0, 2]  # whichever ran second paid nothing
    task = dag.dag.get_task("old_name")
    assert isinstance(task, BaseSQLOperator) and task.conn_id == task.sql_conn_id == sqlite_warehouse.conn_id
    assert {"conn_id", "database", "hook_params"} <= set(task.template_fields)
    assert type(task.get_db_hook()).__name__ == "SqliteHook"
    with pytest.raises(ValueError, match="conn_id is required"):
        SqlGenderLookupOperator(task_id="x", source_table=table, key_column="customer_id", name_column="name")


@pytest.mark.database
def test_statements_do_not_grow_with_rows(warehouse: Any, namelookup: Any) -> None:
    """On a cloud warehouse every statement costs: a run's count is a constant plus a few per
    10,000 new distinct questions, whatever the row count."""
    namelookup.set_credits(1_000)
    counts = {}
    for rows in (500, 5_000):
        table = warehouse.create_customers([(i, f"Name{i % 50:02d}", None) for i in range(rows)])
        answers = warehouse.table_name("answers")  # each run pays for its 50 names
        first, rerun = (SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                                key_column="customer_id", name_column="name",
                                                answers_table=answers).execute({}) for _ in range(2))
        counts[rows] = (first["statements"], rerun["statements"])
    assert counts[500] == counts[5_000]
    first, rerun = counts[500]
    assert first <= 25 and rerun <= 6, counts


def test_a_warehouse_whose_provider_is_missing_fails_at_once_saying_what_to_install(namelookup: Any) -> None:
    pytest.importorskip("airflow.providers.common.sql")
    try:
        import airflow.providers.microsoft.mssql  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("apache-airflow-providers-microsoft-mssql is installed here: no provider is missing")
    from airflow.providers.common.compat.sdk import AirflowFailException

    from tests.support import set_connection

    set_connection("warehouse_mssql", {"conn_type": "mssql", "host": "db.example.com", "login": "u", "password": "p"})
    operator = SqlGenderLookupOperator(task_id="enrich", conn_id="warehouse_mssql", source_table="customers",
                                       key_column="customer_id", name_column="name")
    with pytest.raises(AirflowFailException) as failed:
        operator.execute({})
    assert "pip install 'apache-airflow-providers-microsoft-mssql>=4.0' (what the mssql extra" in str(
        failed.value) and "no retry can fix this" in str(failed.value)
    assert namelookup.remaining() == 100


@pytest.mark.database
def test_abstaining_below_a_probability_keeps_the_answer_and_a_new_threshold_costs_nothing(
        warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    names = ["Kim", "Robin", "Andrea", "Jean", "Theresa", "John", "Kim", "Sasha", "Alex", "Jordan"]
    table = warehouse.create_customers([(i, name, None) for i, name in enumerate(names, start=1)])
    plain = write_dag(gender_task(warehouse, table))
    assert str(plain.run().state) == "success"
    answered = {k: r for k, r in target_rows(warehouse, table).items() if r["status"] == "ok"}
    spent = 100 - namelookup.remaining()
    threshold = sorted(r["probability"] for r in answered.values())[len(answered) // 2]  # about half abstain
    below = {k for k, r in answered.items() if r["probability"] < threshold}
    assert below and below != set(answered)

    strict = write_dag(gender_task(warehouse, table, min_probability=str(threshold)))  # as a template renders it
    assert str(strict.run().state) == "success"
    rows = target_rows(warehouse, table)
    for key, before in answered.items():
        gender = "unknown" if key in below else before["gender"]
        assert (rows[key]["gender"], rows[key]["probability"]) == (gender, before["probability"]), key
    assert namelookup.remaining() == 100 - spent  # rewritten from the answers already paid for
    assert strict.xcom("enrich")["lookups"] == 0

    assert str(plain.run().state) == "success"  # and back, still at 0 credits
    assert {k: r["gender"] for k, r in target_rows(warehouse, table).items() if k in answered} == {
        k: r["gender"] for k, r in answered.items()}
    assert namelookup.remaining() == 100 - spent


@pytest.mark.parametrize(("arguments", "message"), [
    ({"last_name_column": "last name"}, "last_name_column must be a plain SQL identifier"),
    ({"last_name_column": "last_name", "name_kind": "email"},
     "last_name_column reads last names beside the first names of name_column: name_kind must be 'first_name'"),
])
def test_a_last_name_column_that_cannot_work_fails_when_the_dag_is_parsed(arguments: dict[str, Any],
                                                                        message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SqlGenderLookupOperator(task_id="t", conn_id="w", source_table="people", key_column="id",
                                name_column="name", **arguments)
