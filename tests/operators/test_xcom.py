"""GenderLookupOperator and CountryOfOriginOperator in real DAG runs against the emulator."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("airflow_db")


@pytest.mark.compat
def test_gender_results_align_with_rows_and_each_distinct_query_is_paid_once(write_dag: Any,
                                                                            namelookup: Any) -> None:
    queries = ["Theresa", " theresa ", {"full_name": "John Smith"},
               {"email": "theresa.miller14@example.com", "id": "c-7"}, "", {"first_name": "Anna", "country": "XX"},
               42, "Theresa"]
    dag = write_dag(f"GenderLookupOperator(task_id='genders', queries={queries!r})")
    assert str(dag.run().state) == "success"
    out = dag.xcom("genders")
    assert len(out) == len(queries)
    assert [r.get("gender") for r in out[:4]] == ["female", "female", "male", "female"]
    assert out[0]["input"] == {"first_name": "Theresa"} and out[1]["input"] == {"first_name": "theresa"}
    assert out[3]["input"] == {"email": "theresa.miller14@example.com", "id": "c-7"}
    assert out[3]["last_name"] == "Miller"
    assert out[4]["error"]["status_id"] == "parameter-first-name-invalid"
    assert out[5]["error"] == {"status_id": "invalid-country-code", "field": "country",
                               "detail": out[5]["error"]["detail"]}
    assert out[6]["error"]["status_id"] == "mandatory-parameter-missing"
    assert out[7]["gender"] == "female"
    assert namelookup.remaining() == 100 - 3  # Theresa, John Smith, the e-mail; invalid rows are free


def test_rows_from_a_query_pass_through_with_query_field(write_dag: Any, namelookup: Any) -> None:
    dict_rows = [{"customer_id": 1, "name": "Andrea Rossi", "country": "IT"},
                 {"customer_id": 2, "name": "Andrea Weber", "country": "DE"}, {"customer_id": 3}]
    tuple_rows = [[1, "Andrea"], [2, "Giulia"]]
    dag = write_dag(f"""
        GenderLookupOperator(task_id="dicts", queries={dict_rows!r}, query_field="name", name_kind="full_name",
                             pseudonymise=False)  # the full names echoed in clear, as the DAG gave them
        GenderLookupOperator(task_id="tuples", queries={tuple_rows!r}, query_field=1, country="IT")
    """)
    assert str(dag.run().state) == "success"
    dicts = dag.xcom("dicts")
    assert [r.get("gender") for r in dicts[:2]] == ["male", "female"]  # Andrea is localised by the row's country
    assert dicts[0]["input"] == {"full_name": "Andrea Rossi", "country": "IT"}
    assert dicts[2]["error"]["field"] == "name"
    tuples = dag.xcom("tuples")
    assert [r["gender"] for r in tuples] == ["male", "female"] and tuples[0]["details"]["country"] == "IT"


@pytest.mark.compat
def test_country_of_origin_costs_two_credits_per_distinct_name(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("CountryOfOriginOperator(task_id='origins', queries=['Giulia', 'giulia', 'Sven'])")
    assert str(dag.run().state) == "success"
    giulia, again, sven = dag.xcom("origins")
    assert giulia["country_of_origin"][0]["country"] == "IT"
    assert again["country_of_origin"] == giulia["country_of_origin"]
    assert sven["country_of_origin"][0]["continental_region"] == "Europe"
    assert giulia["ethnicity"]["id"] and 99 <= sum(d["percentage"] for d in giulia["ethnicity"]["distribution"]) <= 101
    assert namelookup.remaining() == 100 - 4


def test_budget_fails_before_spending(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("GenderLookupOperator(task_id='genders', queries=['Anna', 'Ben', 'Carla', 'Dora'], "
                    "max_credits='{{ 1 + 2 }}')")
    assert str(dag.run().state) == "failed"
    assert dag.state("genders") == "failed"
    assert namelookup.remaining() == 100


def test_account_credits_are_checked_before_spending(write_dag: Any, namelookup: Any) -> None:
    namelookup.set_credits(2)
    dag = write_dag("GenderLookupOperator(task_id='genders', queries=['Anna', 'Ben', 'Carla'])")
    assert str(dag.run().state) == "failed"
    assert namelookup.remaining() == 2


def test_partial_budget_spends_what_it_may(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("GenderLookupOperator(task_id='genders', queries=['Anna', 'Ben', 'anna', 'Carla', 'Dora'], "
                    "max_credits=2, on_insufficient_credits='partial')")
    assert str(dag.run().state) == "success"
    out = dag.xcom("genders")
    assert [r.get("gender") for r in out[:3]] == ["female", "male", "female"]
    assert [r["error"]["status_id"] for r in out[3:]] == ["insufficient-credits"] * 2
    assert namelookup.remaining() == 98


@pytest.mark.compat
def test_limit_exceeded_midway_keeps_answers_for_the_retry(write_dag: Any, namelookup: Any, emulator: Any) -> None:
    names = [f"Name{i:03d}" for i in range(250)]
    namelookup.set_credits(120)
    dag = write_dag(f"""
        from datetime import timedelta

        def top_up(context):
            import httpx
            httpx.post({emulator.url!r} + "/emulator/accounts/credits",
                       json={{"api_token": {namelookup.token!r}, "add": 1000}})

        GenderLookupOperator(task_id="genders", queries={names!r}, check_remaining_credits=False,
                             max_concurrency=1, retries=1, retry_delay=timedelta(0), on_retry_callback=top_up)
    """)
    assert str(dag.run().state) == "success"
    out = dag.xcom("genders")
    assert len(out) == 250 and all("gender" in r for r in out)
    # 100 answered before the limit; the retry reused them and paid only for the other 150.
    assert namelookup.remaining() == 120 - 100 + 1000 - 150


@pytest.mark.compat
def test_dynamic_task_mapping_over_chunks(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("""
        @task
        def chunks():
            return [["Anna", "Ben"], ["Carla"], []]

        GenderLookupOperator.partial(task_id="genders").expand(queries=chunks())
    """)
    assert str(dag.run().state) == "success"
    assert [r["gender"] for r in dag.xcom("genders", map_index=0)] == ["female", "male"]
    assert [r["gender"] for r in dag.xcom("genders", map_index=1)] == ["female"]
    assert dag.xcom("genders", map_index=2) == []
    assert namelookup.remaining() == 97


def test_single_string_queries_is_a_clear_error(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("GenderLookupOperator(task_id='genders', queries='Anna')")
    assert str(dag.run().state) == "failed"
    assert namelookup.remaining() == 100


def test_an_invalid_token_fails_the_task_without_spending_its_retries(write_dag: Any, namelookup: Any) -> None:
    from tests.support import set_connection

    set_connection("namelookup_bad_token", {"conn_type": "namelookup", "host": namelookup.url,
                                            "password": "not-a-valid-token", "extra": {"backoff_base": 0.01}})
    dag = write_dag("""
        from datetime import timedelta

        GenderLookupOperator(task_id="genders", queries=["Anna"], namelookup_conn_id="namelookup_bad_token",
                             retries=2, retry_delay=timedelta(0))
    """)
    assert str(dag.run().state) == "failed"
    ti = dag.last_run.get_task_instance("genders")
    assert str(ti.state) == "failed" and ti.try_number == 1


def test_without_a_task_state_store_answers_survive_the_retry_in_a_variable(write_dag: Any, namelookup: Any,
                                                                           emulator: Any) -> None:
    """Airflow < 3.3 offers no ``task_state_store``: the answers of a failed try go to an
    Airflow Variable for the retry (which may run on another worker), deleted on success."""
    names = [f"Name{i:03d}" for i in range(250)]
    namelookup.set_credits(120)
    dag = write_dag(f"""
        from datetime import timedelta
        from airflow.providers.common.compat.sdk import Variable

        class WithoutStateStore(GenderLookupOperator):
            def execute(self, context):
                context.pop("task_state_store", None)   # as Airflow 3.1 and 3.2 hand it over
                return super().execute(context)

        def top_up(context):
            import httpx
            key = "namelookup_answers__" + context["dag"].dag_id + "__genders__" + context["run_id"] + "__-1"
            assert len(Variable.get(key, deserialize_json=True)["answers"]) == 100, "the first try's answers are kept"
            httpx.post({emulator.url!r} + "/emulator/accounts/credits",
                       json={{"api_token": {namelookup.token!r}, "add": 1000}})

        WithoutStateStore(task_id="genders", queries={names!r}, check_remaining_credits=False,
                          max_concurrency=1, retries=1, retry_delay=timedelta(0), on_retry_callback=top_up)
    """)
    assert str(dag.run().state) == "success"
    assert len(dag.xcom("genders")) == 250
    assert namelookup.remaining() == 120 - 100 + 1000 - 150  # the retry paid only for the other 150
    from airflow.models.variable import Variable as VariableModel
    from airflow.utils.session import create_session

    with create_session() as session:
        # the answers' Variable is gone (the usage records of the two tries stay: namelookup_usage__...)
        assert not session.query(VariableModel).filter(
            VariableModel.key.like(f"namelookup_answers__%{dag.dag_id}%")).count()


def test_answers_below_min_samples_are_unknown_with_their_numbers_kept(write_dag: Any, namelookup: Any) -> None:
    queries = ["Theresa", "John", "Giulia", "Sven"]
    plain = write_dag(f"GenderLookupOperator(task_id='genders', queries={queries!r})")
    assert str(plain.run().state) == "success"
    answers = plain.xcom("genders")
    threshold = sorted(a["details"]["samples"] for a in answers)[2]
    strict = write_dag(f"GenderLookupOperator(task_id='genders', queries={queries!r}, min_samples={threshold})")
    assert str(strict.run().state) == "success"
    for before, after in zip(answers, strict.xcom("genders"), strict=True):
        assert after["gender"] == ("unknown" if before["details"]["samples"] < threshold else before["gender"])
        assert (after["probability"], after["details"]["samples"]) == (before["probability"],
                                                                       before["details"]["samples"])


def test_a_bad_threshold_fails_when_the_dag_is_parsed() -> None:
    from airflow_provider_namelookup.operators import GenderLookupOperator, SqlGenderLookupOperator

    with pytest.raises(ValueError, match="min_probability must be a number from 0 to 1, got 80"):
        GenderLookupOperator(task_id="g", queries=["Anna"], min_probability=80)
    with pytest.raises(ValueError, match="min_samples must be a whole number from 0, got 'ten'"):
        SqlGenderLookupOperator(task_id="g", sql_conn_id="w", source_table="t", key_column="k", name_column="n",
                                min_samples="ten")
