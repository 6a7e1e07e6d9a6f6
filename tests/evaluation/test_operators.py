"""The evaluation operators as a user runs them: real DAG runs (``dag.test()``), real warehouses
(SQLite and PostgreSQL), the emulator over loopback for the enrichment before them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_namelookup.evaluation import evaluate
from tests.evaluation.labelled import labelled_people
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

PEOPLE = labelled_people(120, seed=11)
"""120 labelled people (12 with no recorded gender); rows 121 and 122 get names the service refuses."""


house = warehouses("sqlite", "postgres")


def people_table(house: Any) -> str:
    table = house.table_name("people")
    text = "TEXT" if house.kind == "sqlite" else "VARCHAR(200)"
    house.hook.run(f"CREATE TABLE {table} (person_id INTEGER PRIMARY KEY, first_name {text}, country {text}, "
                   f"true_gender {text})")
    spelled = {"m": "male", "f": "Female", None: None}
    rows = [(i, p["first_name"], p["country"], spelled[p["label"]] if i % 2 else p["label"])
            for i, p in enumerate(PEOPLE, start=1)]
    house.insert(table, [*rows, (121, "", "DE", "f"), (122, "x" * 60, "IT", "m")])
    return table


def printed(capfd: pytest.CaptureFixture[str]) -> str:
    """What the DAG runs printed: ``dag.test()`` sends the task logs to the console."""
    out = capfd.readouterr()
    return out.out + out.err


@pytest.mark.database
def test_enrich_then_evaluate_a_table(house: Any, namelookup: Any, write_dag: Any, tmp_path: Path,
                                      capfd: pytest.CaptureFixture[str]) -> None:
    """The documented two-task pattern: the enrichment pays for what is not answered yet, the
    evaluation reads the labels beside what it wrote and writes the report through ObjectStoragePath."""
    namelookup.set_credits(1_000)
    table = people_table(house)
    report = tmp_path / "reports" / "accuracy.html"
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        enrich = SqlGenderLookupOperator(task_id="enrich", conn_id={house.conn_id!r}, source_table={table!r},
                                         key_column="person_id", name_column="first_name", country_column="country")
        accuracy = SqlGenderEvaluationOperator(
            task_id="accuracy", conn_id={house.conn_id!r}, source_table={table!r}, key_column="person_id",
            label_column="true_gender", group_column="country", max_error_without_na=0.05,
            report_path="file://{report}", report_title="Accuracy of {{{{ dag.dag_id }}}}")
        enrich >> accuracy
    """)
    run = dag.run()
    assert str(run.state) == "success"
    spent = 1_000 - namelookup.remaining()
    assert spent == len({(p["first_name"].lower(), p["country"]) for p in PEOPLE})  # each distinct query once

    result = dag.xcom("accuracy")
    assert "tuning" not in result and result["report"] == f"file://{report}"
    # The same rows evaluated from what the enrichment wrote, read here by key: the operator's join agrees.
    written = dict((key, (gender, probability, samples)) for key, gender, probability, samples in house.rows(
        f"SELECT person_id, gender, probability, samples FROM {table}_gender WHERE status = 'ok'"))
    expected = evaluate([{"label": p["label"], "gender": written[i][0], "probability": written[i][1],
                          "samples": written[i][2], "country": p["country"]}
                         for i, p in enumerate(PEOPLE, start=1)]
                        + [{"label": "f", "gender": None, "country": "DE"},  # rows 121 and 122: lookup failed
                           {"label": "m", "gender": None, "country": "IT"}], group_key="country")
    assert result["confusion"] == expected["confusion"] and result["best"] == expected["best"]
    assert result["by_group"] == expected["by_group"]
    assert result["left_out"] == sum(p["label"] is None for p in PEOPLE) == 12
    assert result["not_answered"] == 2  # the empty and the overlong name: status 'error'
    assert result["settings"]["group_key"] == "country"

    html = report.read_text()
    assert f"Accuracy of {dag.dag_id}" in html and "<svg" in html and "By country" in html
    assert f"min_probability = {result['best']['min_probability']}" in html
    assert not re.search(r"<script|<link|src=\"http|href=\"http|@import", html)  # nothing fetched from outside

    log = printed(capfd)
    assert f"Evaluated {result['evaluated']} of 122 rows" in log
    assert f"Best: min_probability={result['best']['min_probability']}" in log

    # The next run pays nothing more; with a where, and fsspec's in-memory filesystem (no provider
    # registers it: attached by the DAG file, as any fsspec filesystem can be).
    again = write_dag(f"""
        from airflow.sdk.io import attach
        from fsspec.implementations.memory import MemoryFileSystem
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        attach("memory", fs=MemoryFileSystem())
        enrich = SqlGenderLookupOperator(task_id="enrich", conn_id={house.conn_id!r}, source_table={table!r},
                                         key_column="person_id", name_column="first_name", country_column="country")
        accuracy = SqlGenderEvaluationOperator(
            task_id="accuracy", conn_id={house.conn_id!r}, source_table={table!r}, key_column="person_id",
            label_column="true_gender", where="country = 'IT'", report_path="memory://reports/{{{{ run_id }}}}.html")
        enrich >> accuracy
    """)
    run = again.run()
    assert str(run.state) == "success" and 1_000 - namelookup.remaining() == spent
    italian = again.xcom("accuracy")
    assert italian["confusion"] == expected["by_group"]["IT"]["confusion"]
    import fsspec

    with fsspec.filesystem("memory").open(f"/reports/{run.run_id}.html", "r") as stored:
        assert "<svg" in stored.read()


@pytest.mark.database
def test_evaluate_a_select_without_enrichment(house: Any, namelookup: Any, write_dag: Any) -> None:
    """``sql`` instead of a source table: labels and answers that came from anywhere; bad labels counted."""
    table = house.table_name("labelled")
    text = "TEXT" if house.kind == "sqlite" else "VARCHAR(50)"
    house.hook.run(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, truth {text}, g {text}, p FLOAT, n INTEGER)")
    house.insert(table, [(1, "1", "male", 0.99, 50), (2, "2", "female", 0.6, 3), (3, "2", "male", 0.55, 4),
                         (4, "9", "female", 0.9, 9), (5, "robot", "male", 0.9, 9)])
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        SqlGenderEvaluationOperator(
            task_id="accuracy", conn_id={house.conn_id!r}, label_map={{"1": "m", "2": "f", "9": "u"}},
            sql="SELECT truth AS label, g AS gender, p AS probability, n AS samples FROM {table}",
            max_error_without_na=0.0)
    """)
    assert str(dag.run().state) == "success"
    result = dag.xcom("accuracy")
    # mm 1, ff 1 (p 0.6), fm 1 (p 0.55): without NA 1/3; from 0.56 the fm abstains: errorCoded 1/3, without NA 0.
    assert result["confusion"] == {"mm": 1, "mf": 0, "mu": 0, "fm": 1, "ff": 1, "fu": 0}
    assert result["best"]["min_probability"] == 0.56
    assert result["left_out"] == 1 and result["unreadable"]["rows"] == 1
    assert result["unreadable"]["examples"][0]["row"] == 5 and result["report"] is None


def test_an_unreadable_label_can_fail_the_task_naming_the_row(sqlite_warehouse: Any, write_dag: Any,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    table = sqlite_warehouse.table_name("labelled")
    sqlite_warehouse.hook.run(f"CREATE TABLE {table} (label TEXT, gender TEXT, probability FLOAT)")
    sqlite_warehouse.insert(table, [("m", "male", 0.9), ("robot", "male", 0.9)])
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        SqlGenderEvaluationOperator(task_id="accuracy", conn_id={sqlite_warehouse.conn_id!r},
                                    sql="SELECT * FROM {table}", on_unreadable="raise")
    """)
    dag.run()
    assert dag.state("accuracy") == "failed"
    assert "row 2: label 'robot' is not a gender" in printed(capfd)


def test_evaluate_an_xcom_list(namelookup: Any, write_dag: Any, tmp_path: Path) -> None:
    """GenderLookupOperator's output and aligned labels; an error row is not answered."""
    people = PEOPLE[:40]
    queries = [{"first_name": p["first_name"], "country": p["country"]} for p in people] + [{"first_name": ""}]
    labels = [p["label"] for p in people] + ["f"]
    groups = [p["country"] for p in people] + ["DE"]
    report = tmp_path / "xcom.html"
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import GenderEvaluationOperator
        genders = GenderLookupOperator(task_id="genders", queries={queries!r})
        GenderEvaluationOperator(task_id="accuracy", answers=genders.output, labels={labels!r},
                                 groups={groups!r}, group_name="country", report_path={str(report)!r})
    """)
    assert str(dag.run().state) == "success"
    answers = dag.xcom("genders")
    assert "error" in answers[-1]
    result = dag.xcom("accuracy")
    expected = evaluate([{"label": label, "gender": a["gender"], "probability": a["probability"],
                          "samples": a["details"]["samples"], "group": g}
                         for label, a, g in zip(labels[:-1], answers[:-1], groups[:-1], strict=True)]
                        + [{"label": "f", "gender": None, "group": "DE"}], group_key="group")
    assert result["confusion"] == expected["confusion"] and result["by_group"] == expected["by_group"]
    assert result["not_answered"] == 1 and result["left_out"] == sum(label is None for label in labels)
    assert result["report"] == str(report) and "By country" in report.read_text()


def test_misaligned_labels_fail_naming_the_fields(namelookup: Any, write_dag: Any,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    dag = write_dag("""
        from airflow_provider_namelookup.operators import GenderEvaluationOperator
        genders = GenderLookupOperator(task_id="genders", queries=["Anna", "Ben"])
        GenderEvaluationOperator(task_id="accuracy", answers=genders.output, labels=["f"], retries=2,
                                 retry_delay=__import__("datetime").timedelta(seconds=1))
    """)
    run = dag.run()
    # the same lists at every try: failed at once (issue 50, item 1; it was retried)
    assert dag.state("accuracy") == "failed" and run.get_task_instance("accuracy").try_number == 1
    assert "labels must hold one value per answer: 1 labels for 2 answers" in printed(capfd)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"source_table": "people"}, "key_column is required with source_table"),
    ({"source_table": "people; drop", "key_column": "id"}, "source_table must be a plain SQL identifier"),
    ({"sql": "SELECT 1", "where": "x = 1"}, "where filters source_table; put the filter in the sql instead"),
    ({"source_table": "p", "key_column": "id", "max_error_without_na": 5},
     "max_error_without_na must be a number from 0 to 1, got 5"),
    ({"source_table": "p", "key_column": "id", "label_map": {"9": "other"}}, "label_map maps '9' to 'other'"),
])
def test_bad_arguments_fail_when_the_dag_is_parsed(kwargs: dict[str, Any], message: str) -> None:
    from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator

    with pytest.raises(ValueError, match=re.escape(message)):
        SqlGenderEvaluationOperator(task_id="accuracy", conn_id="warehouse", **kwargs)


# What a new user tripped on (issue 36, item 5) ------------------------------------------------------------

def _enrich_then_evaluate(house: Any, table: str, report: Path, **evaluation: Any) -> str:
    given = {"source_table": table, "key_column": "person_id", "label_column": "true_gender",
             "group_column": "country", "report_path": f"file://{report}", **evaluation}
    return f"""
        from datetime import timedelta
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        enrich = SqlGenderLookupOperator(task_id="enrich", conn_id={house.conn_id!r}, source_table={table!r},
                                         key_column="person_id", name_column="first_name", country_column="country")
        accuracy = SqlGenderEvaluationOperator(task_id="accuracy", conn_id={house.conn_id!r}, retries=2,
                                               retry_delay=timedelta(seconds=1),
                                               {", ".join(f"{k}={v!r}" for k, v in given.items())})
        enrich >> accuracy
    """


@pytest.mark.database
def test_without_the_plot_library_the_report_is_written_without_its_plot_and_says_so(
        house: Any, namelookup: Any, write_dag: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the evaluation failed on the missing matplotlib after its enrichment had paid; the
    report's tables need no plot library. A rerun of the pair pays only for what is missing."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where the plot library is not installed
    namelookup.set_credits(1_000)
    table = people_table(house)
    report = tmp_path / "accuracy.html"
    dag = write_dag(_enrich_then_evaluate(house, table, report))
    run = dag.run()
    assert str(run.state) == "success" and run.get_task_instance("accuracy").try_number == 1
    spent = 1_000 - namelookup.remaining()
    assert spent == len({(p["first_name"].lower(), p["country"]) for p in PEOPLE})
    html = report.read_text()
    assert "<svg" not in html and "No plot in this report: " in html and "matplotlib" in html
    assert "By country" in html and f"min_probability = {dag.xcom('accuracy')['best']['min_probability']}" in html
    assert "The report has no plot (it says so; every figure is in its tables)" in printed(capfd)

    # Two new people: the rerun pays for them only, the answers paid before are reused.
    house.insert(table, [(123, "Zoltan", "HU", "m"), (124, "Ilona", "HU", "f")])
    assert str(dag.run().state) == "success"
    assert 1_000 - namelookup.remaining() == spent + 2
    assert dag.xcom("accuracy")["by_group"]["HU"]["evaluated"] == 2


@pytest.mark.database
@pytest.mark.parametrize(("evaluation", "expected"), [
    ({"label_column": "true_gendr"}, "label_column 'true_gendr' is not a column of source_table '{table}' on "
                                     "connection 'warehouse_{kind}' (nearest: true_gender): "),
    ({"group_column": "contry"}, "group_column 'contry' is not a column of source_table '{table}' on connection "
                                 "'warehouse_{kind}' (nearest: country): "),
    ({"target_table": "{table}_gendr"}, "target_table '{table}_gendr' (the enrichment's) cannot be read on "
                                        "connection 'warehouse_{kind}' (does it exist?) (nearest: {table}_gender, "),
    ({"conn_id": "namelookup_default"}, "conn_id 'namelookup_default' is a 'namelookup' connection "
                                        "(NameLookupHook), not a SQL warehouse's: conn_id must name the connection "
                                        "of the warehouse holding the table"),
])
def test_a_wrong_name_or_connection_fails_the_evaluation_at_once_saying_what_to_change(
        house: Any, namelookup: Any, write_dag: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str],
        evaluation: dict[str, Any], expected: str) -> None:
    namelookup.set_credits(1_000)
    table = people_table(house)
    evaluation = {k: v.format(table=table) for k, v in evaluation.items()}
    body = _enrich_then_evaluate(house, table, tmp_path / "accuracy.html", **evaluation)
    if "conn_id" in evaluation:  # the argument given twice: the service's connection as the warehouse's
        body = body.replace(f"task_id=\"accuracy\", conn_id={house.conn_id!r}, ", "task_id=\"accuracy\", ")
    run = write_dag(body).run()
    ti = run.get_task_instance("accuracy")
    assert (str(ti.state), ti.try_number) == ("failed", 1)
    assert expected.format(table=table, kind=house.kind) in printed(capfd)
