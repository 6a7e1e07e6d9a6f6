"""``columns=`` on the table operators (issue 53, item 2): a target of the answer fields a DAG asks
for, filled and rerun like a whole one, in real DAG runs (``dag.test()``) on real warehouses; every
mistake fails before a table is made or a credit spent."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airflow_provider_namelookup.errors import InvalidArgument
from airflow_provider_namelookup.operators import SqlCountryOfOriginOperator, SqlGenderLookupOperator
from tests.operators.test_warehouse import CUSTOMERS, VALID_DISTINCT, gender_task
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

OWN = {"customer_id", "status", "error", "credits_used", "query_hash", "enriched_at", "query_spec", "source_name",
       "source_country"}
"""The key and the provider's own columns of a gender target of the customers table (with its country)."""


def columns_of(warehouse: Any, table: str) -> set[str]:
    """A table's column names, in lower case, from a query that reads no row."""
    conn = warehouse.hook.get_conn()
    try:
        cursor = conn.cursor()
        cursor.execute(warehouse.dialect.no_rows("*", f"{table} s"))
        cursor.fetchall()
        return {str(d[0]).lower() for d in cursor.description}
    finally:
        conn.close()


def rows_of(warehouse: Any, table: str, columns: str) -> dict[Any, tuple[Any, ...]]:
    return {r[0]: r[1:] for r in warehouse.rows(f"SELECT customer_id, {columns} FROM {table} ORDER BY customer_id")}


@pytest.mark.database
@pytest.mark.compat(warehouse="sqlite")
def test_a_dag_asking_for_gender_and_probability_gets_a_target_of_them(warehouse: Any, write_dag: Any,
                                                                       namelookup: Any) -> None:
    """The first run pays exactly the distinct names and makes a target of the asked columns and the
    provider's own; a rerun pays 0; a changed name is looked up again for its row alone."""
    table = warehouse.create_customers(CUSTOMERS)
    target = f"{table}_gender"
    dag = write_dag(gender_task(warehouse, table, columns=["gender", "probability"]))
    assert str(dag.run().state) == "success"
    assert columns_of(warehouse, target) == OWN | {"gender", "probability"}
    assert 100 - namelookup.remaining() == VALID_DISTINCT == dag.xcom("enrich")["credits_used"]
    rows = rows_of(warehouse, target, "gender, probability, status, error, credits_used, query_hash, enriched_at")
    assert [rows[k][0] for k in (1, 2, 3, 4, 5, 9)] == ["female", "female", "male", "female", "male", "female"]
    assert all(0 < rows[k][1] <= 1 for k in (1, 2, 3, 4, 5, 9))
    assert {k for k, r in rows.items() if r[2] == "error"} == {6, 7, 8, 10}  # invalid rows still reported
    assert rows[8][3].startswith("invalid-country-code [country]")
    assert sum(r[4] for r in rows.values()) == VALID_DISTINCT

    assert str(dag.run().state) == "success"
    again = dag.xcom("enrich")
    assert (again["rows_unchanged"], again["lookups"], again["requests"], again["credits_used"]) == (10, 0, 0, 0)
    assert rows_of(warehouse, target, "gender, probability, status, error, credits_used, query_hash, "
                                      "enriched_at") == rows

    warehouse.hook.run(f"UPDATE {table} SET name = 'Giulia' WHERE customer_id = 3")
    assert str(dag.run().state) == "success"
    third = dag.xcom("enrich")
    assert (third["lookups"], third["rows_enriched"], third["rows_unchanged"]) == (1, 1, 9)
    assert namelookup.remaining() == 100 - VALID_DISTINCT - 1
    after = rows_of(warehouse, target, "gender, probability, status, error, credits_used, query_hash, enriched_at")
    assert after[3][0] == "female" and after[3][5] != rows[3][5]
    assert {k: r for k, r in after.items() if k != 3} == {k: r for k, r in rows.items() if k != 3}


def test_country_of_origin_keeps_its_own_fields_and_no_result_json_unless_asked(sqlite_warehouse: Any,
                                                                                write_dag: Any,
                                                                                namelookup: Any) -> None:
    table = sqlite_warehouse.create_customers([(1, "Giulia", None), (2, "giulia", None), (3, "", None)])
    dag = write_dag(f"""
        SqlCountryOfOriginOperator(task_id="origin", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                   key_column="customer_id", name_column="name",
                                   columns=["top_country", "language_of_origin"])
    """)
    assert str(dag.run().state) == "success" and namelookup.remaining() == 98
    assert columns_of(sqlite_warehouse, f"{table}_origin") == (OWN - {"source_country"}) | {
        "top_country", "language_of_origin"}
    rows = rows_of(sqlite_warehouse, f"{table}_origin", "top_country, language_of_origin, status")
    assert rows[1][0] == rows[2][0] == "IT" and rows[1][1] and rows[3][2] == "error"


@pytest.mark.parametrize(("operator", "columns", "said"), [
    (SqlGenderLookupOperator, ["gender", "gendr"],
     "columns: 'gendr' is no answer field of the gender lookup (did you mean 'gender'?); give some of: gender, "
     "probability, result_found, samples, first_name, last_name, country"),
    (SqlGenderLookupOperator, ["Probability"], "(did you mean 'probability'?)"),
    (SqlGenderLookupOperator, ["gender", "status"], "'status' is no answer field of the gender lookup (it is the "
                                                    "provider's own, in every target)"),
    (SqlGenderLookupOperator, [], "columns must name at least one answer field; give some of: gender,"),
    (SqlCountryOfOriginOperator, ["last_name"],
     "'last_name' is no answer field of the country_of_origin lookup; give some of: gender, probability, "
     "result_found, samples, first_name, top_country, top_country_probability, language_of_origin, ethnicity, "
     "meaning, result_json"),
])
def test_a_name_that_is_no_answer_field_fails_when_the_dag_is_parsed(operator: Any, columns: list[str],
                                                                     said: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        operator(task_id="t", conn_id="w", source_table="people", key_column="id", name_column="name",
                 columns=columns)
    assert said in str(refused.value)


def test_a_templated_column_list_is_checked_once_rendered_and_fails_at_once(sqlite_warehouse: Any,
                                                                           write_dag: Any,
                                                                           namelookup: Any) -> None:
    """Comma-separated text from a template works like a list; a wrong name in it fails the task on
    its first try, before the target exists or a credit is spent."""
    table = sqlite_warehouse.create_customers([(1, "Anna", None), (2, "John", None)])
    good = write_dag(gender_task(sqlite_warehouse, table, columns="{{ params.fields }}",
                                 params={"fields": "gender, samples"}))
    assert good.dag.get_task("enrich").columns == "{{ params.fields }}"
    assert "columns" in good.dag.get_task("enrich").template_fields
    assert str(good.run().state) == "success"
    assert columns_of(sqlite_warehouse, f"{table}_gender") == OWN | {"gender", "samples"}

    other = sqlite_warehouse.create_customers([(1, "Anna", None), (2, "Zoe", None)])
    bad = write_dag(gender_task(sqlite_warehouse, other, columns=["gender", "{{ params.field }}"],
                                params={"field": "sampels"}, retries=2, retry_delay=1))
    run = bad.run()
    assert str(run.state) == "failed" and int(run.get_task_instance("enrich").try_number) == 1
    assert not sqlite_warehouse.has_table(f"{other}_gender")
    assert namelookup.remaining() == 100 - 2


def test_an_existing_target_with_other_answer_columns_is_refused_before_anything_is_spent(
        sqlite_warehouse: Any, write_dag: Any, namelookup: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A whole target asked for fewer fields would keep a changed name's old samples beside its new
    gender: refused, naming the columns, on the first try, and nothing changes in the table."""
    table = sqlite_warehouse.create_customers([(1, "Anna", None), (2, "John", None)])
    assert str(write_dag(gender_task(sqlite_warehouse, table)).run().state) == "success"
    before = columns_of(sqlite_warehouse, f"{table}_gender")
    sqlite_warehouse.insert(table, [(3, "Giulia", None)])
    narrower = write_dag(gender_task(sqlite_warehouse, table, columns=["gender", "probability"], retries=2,
                                     retry_delay=1))
    run = narrower.run()
    assert str(run.state) == "failed" and int(run.get_task_instance("enrich").try_number) == 1
    assert (f"target table {table}_gender exists on connection {sqlite_warehouse.conn_id!r} with other answer "
            "columns than columns asks for: it holds "
            "result_found, samples, first_name, last_name, country, which columns does not list") in (
                capfd.readouterr().out + caplog.text)
    assert namelookup.remaining() == 98 and columns_of(sqlite_warehouse, f"{table}_gender") == before


@pytest.mark.database
def test_pseudonymised_echoes_are_answer_fields_kept_as_pseudonyms_when_asked(warehouse: Any, write_dag: Any,
                                                                             namelookup: Any) -> None:
    """The service's echo of the name (``first_name``) is an answer field like any other: absent
    unless asked for, and a pseudonym when asked for under ``pseudonymise=True``; the raw name is a
    pseudonym either way, and the rerun and a changed name behave as without ``columns``."""
    from airflow_provider_namelookup.personal.pseudonym import pseudonym, pseudonymisation_key

    table = warehouse.create_customers([(1, "Theresa", None), (2, "theresa", None), (3, "John", None),
                                        (4, "", None)])
    dag = write_dag(gender_task(warehouse, table, columns=["gender", "first_name"], pseudonymise=True))
    assert str(dag.run().state) == "success" and namelookup.remaining() == 98
    assert columns_of(warehouse, f"{table}_gender") == OWN | {"gender", "first_name"}
    rows = rows_of(warehouse, f"{table}_gender", "gender, first_name, source_name, status, enriched_at")
    key = pseudonymisation_key()
    assert rows[1][:2] == ("female", pseudonym(key, "Theresa")) and rows[3][0] == "male"
    assert rows[1][2] == pseudonym(key, "Theresa") and all(re.fullmatch("[0-9a-f]{64}", r[2]) for r in rows.values())
    assert rows[4][3] == "error"

    assert str(dag.run().state) == "success" and dag.xcom("enrich")["lookups"] == 0
    assert rows_of(warehouse, f"{table}_gender", "gender, first_name, source_name, status, enriched_at") == rows
    warehouse.hook.run(f"UPDATE {table} SET name = 'Anna' WHERE customer_id = 3")
    assert str(dag.run().state) == "success"
    assert (dag.xcom("enrich")["lookups"], namelookup.remaining()) == (1, 97)
    after = rows_of(warehouse, f"{table}_gender", "gender, first_name, source_name, status, enriched_at")
    assert after[3][:3] == ("female", pseudonym(key, "Anna"), pseudonym(key, "Anna"))
    assert {k: r for k, r in after.items() if k != 3} == {k: r for k, r in rows.items() if k != 3}


def test_abstaining_needs_no_probability_column(sqlite_warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    """``min_probability`` decides ``gender`` by the answer's probability, which the target need not hold."""
    names = ["Kim", "Robin", "Andrea", "Jean", "Theresa", "John", "Sasha", "Alex"]
    table = sqlite_warehouse.create_customers([(i, name, None) for i, name in enumerate(names, start=1)])
    whole = write_dag(gender_task(sqlite_warehouse, table, target_table=f"{table}_out"))
    assert str(whole.run().state) == "success"
    answered = rows_of(sqlite_warehouse, f"{table}_out", "gender, probability")
    threshold = sorted(p for _, p in answered.values())[len(answered) // 2]
    strict = write_dag(gender_task(sqlite_warehouse, table, columns=["gender"], min_probability=threshold))
    assert str(strict.run().state) == "success" and strict.xcom("enrich")["lookups"] == 0
    assert columns_of(sqlite_warehouse, f"{table}_gender") == OWN | {"gender"}
    genders = rows_of(sqlite_warehouse, f"{table}_gender", "gender")
    assert genders == {k: ("unknown" if p < threshold else g,) for k, (g, p) in answered.items()}
    assert {g for (g,) in genders.values()} >= {"unknown"} and len(set(genders.values())) > 1


house = warehouses("sqlite", "postgres")


def test_a_target_of_an_earlier_release_still_gets_its_new_columns_and_a_wrong_table_is_refused_untouched(
        house: Any, write_dag: Any, namelookup: Any) -> None:
    """An earlier release's target (every answer field, no raw columns) is completed as before; a
    table of the same name that holds no answer field is refused, naming them, before a column is
    added to it or a credit spent."""
    table = house.create_customers([(1, "Anna", None), (2, "John", "US")])
    text = house.sql_type("text")
    house.hook.run(f"CREATE TABLE {table}_gender (customer_id INTEGER PRIMARY KEY, gender {text}, probability FLOAT, "
                   f"result_found INTEGER, samples BIGINT, first_name {text}, last_name {text}, country {text}, "
                   f"status {text}, error {text}, credits_used INTEGER, query_hash {text})")
    assert str(write_dag(gender_task(house, table)).run().state) == "success"
    assert columns_of(house, f"{table}_gender") == OWN | {"gender", "probability", "result_found", "samples",
                                                         "first_name", "last_name", "country"}
    assert rows_of(house, f"{table}_gender", "gender") == {1: ("female",), 2: ("male",)}

    other = house.create_customers([(1, "Giulia", None)])
    house.hook.run(f"CREATE TABLE {other}_gender (customer_id INTEGER PRIMARY KEY, note {text})")
    refused = write_dag(gender_task(house, other, columns=["gender", "probability"], retries=2, retry_delay=1))
    run = refused.run()
    assert str(run.state) == "failed" and int(run.get_task_instance("enrich").try_number) == 1
    assert columns_of(house, f"{other}_gender") == {"customer_id", "note"}
    assert namelookup.remaining() == 98
