"""The service token, typed or sent by a run's conf into a templated field or a row, shows nowhere
(issue 32, F6, F7, F11): not on the *Rendered Template* tab (the rendered fields Airflow stores),
not in XCom, not in the answers table, not in the evaluation's report, log or XCom value; and a
variant of it (lower case, digits as an ``int`` id) is never sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("airflow_db")


def _rendered(dag: Any, task_id: str) -> dict[str, Any]:
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(RenderedTaskInstanceFields).filter_by(
            dag_id=dag.dag_id, task_id=task_id, run_id=dag.last_run.run_id).one()
        return dict(row.rendered_fields)


def test_a_token_in_a_templated_field_is_masked_where_the_rendering_is_stored(
        sqlite_warehouse: Any, namelookup: Any, write_dag: Any) -> None:
    token = namelookup.token
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(f"""
        GenderLookupOperator(task_id="xcom", queries=["Anna", "{{{{ params.pasted }}}}"],
                             params={{"pasted": {token!r}}})
        SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name",
                                where="name <> '{{{{ params.pasted }}}}'", params={{"pasted": {token!r}}})
    """)
    dag.run()
    for task_id in ("xcom", "table"):
        rendered = repr(_rendered(dag, task_id))
        assert token not in rendered and "***" in rendered, (task_id, rendered)
    assert token not in repr(dag.xcom("xcom")) and token not in repr(dag.xcom("table"))
    assert dag.state("table") == "failed"  # a where holding the token is never sent to the warehouse (issue 48)
    assert namelookup.remaining() == 99  # Anna once: the token as a name was refused, not sent


@pytest.mark.parametrize("variant", ["lower", "upper"])
def test_the_token_in_another_case_is_never_sent(variant: str, namelookup: Any, emulator: Any,
                                                 write_dag: Any) -> None:
    """Issue 32, F7: the service folds names, so the token in lower case is the same query; it was
    sent (a credit) and echoed in XCom."""
    token = getattr(namelookup.token, variant)()
    dag = write_dag(f"GenderLookupOperator(task_id='g', queries=[{{'first_name': {token!r}}}, 'Anna'])")
    dag.run()
    results = dag.xcom("g")
    assert results[0]["error"]["field"] == "first_name" and "API token" in results[0]["error"]["detail"]
    assert token not in repr(results) and token.lower() not in repr(results).lower()
    assert namelookup.remaining() == 99


def test_a_numeric_token_as_an_int_id_is_never_sent(emulator: Any, write_dag: Any) -> None:
    from tests.support import set_connection

    token = "4921558812345678"
    emulator.create_account(token=token, credits=10)
    set_connection("namelookup_numeric", {"conn_type": "namelookup", "host": emulator.url, "password": token})
    dag = write_dag("GenderLookupOperator(task_id='g', namelookup_conn_id='namelookup_numeric', "
                    f"queries=[{{'first_name': 'Anna', 'id': {int(token)}}}, {{'first_name': 'Ben', 'id': 7}}])")
    dag.run()
    results = dag.xcom("g")
    assert results[0]["error"]["field"] == "id" and token not in repr(results)
    assert results[1]["gender"] == "male"
    assert emulator.state.remaining_credits(token) == 9


def test_the_evaluation_masks_the_token_in_labels_groups_and_title(namelookup: Any, write_dag: Any,
                                                                   tmp_path: Path,
                                                                   capfd: pytest.CaptureFixture[str],
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Issue 32, F11: the report, the log and the XCom showed labels, groups and titles as given."""
    token = namelookup.token
    report = tmp_path / "accuracy.html"
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import GenderEvaluationOperator
        answers = [{{"gender": "female", "probability": 0.9}}, {{"gender": "male", "probability": 0.8}}]
        GenderEvaluationOperator(task_id="accuracy", answers=answers, labels=["f", {token!r}],
                                 groups=["DE", {token!r}], report_path={str(report)!r},
                                 report_title="Accuracy for {{{{ params.who }}}}", params={{"who": {token!r}}})
    """)
    capfd.readouterr()
    assert str(dag.run().state) == "success"
    captured = capfd.readouterr()
    shown = [report.read_text(), repr(dag.xcom("accuracy")), captured.out, captured.err, caplog.text]
    for piece in (token, token[: len(token) // 2], token[len(token) // 2:]):
        assert [text[:200] for text in shown if piece in text] == []
    assert "***" in report.read_text()


@pytest.mark.parametrize("variant", ["same", "lower", "upper"])
def test_a_where_or_sql_holding_the_token_is_refused_without_quoting_it_and_masked_where_rendered(
        variant: str, sqlite_warehouse: Any, namelookup: Any, write_dag: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 48, item 5: a refused where holding the token repeated it in clear in the exception (twice in
    the task's output), and a case variant of it in a conf-templated where was stored unmasked in the
    rendered fields. A where or sql holding it (in any case: the rule of the queries) is now refused
    before anything runs, its text not shown, and every case variant the templates rendered is masked."""
    token = {"same": namelookup.token, "lower": namelookup.token.lower(), "upper": namelookup.token.upper()}[variant]
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    source = {"conn_id": sqlite_warehouse.conn_id, "key_column": "customer_id", "name_column": "name"}
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator
        SqlGenderLookupOperator(task_id="typo", source_table={table!r}, where="{{{{ params.typo }}}}", **{source!r})
        SqlGenderLookupOperator(task_id="where", source_table={table!r}, where="{{{{ params.where }}}}", **{source!r})
        SqlGenderLookupOperator(task_id="sql", sql="{{{{ params.sql }}}}", target_table={table + '_out'!r},
                                **{source!r})
        SqlGenderEvaluationOperator(task_id="evaluation", conn_id={sqlite_warehouse.conn_id!r},
                                    source_table={table!r}, key_column="customer_id", label_column="name",
                                    where="{{{{ params.where }}}}")
    """)
    capfd.readouterr()
    caplog.clear()
    run = dag.run(run_conf={"typo": f"name = '{token}' ANDD customer_id = 1", "where": f"name <> '{token}'",
                            "sql": f"SELECT customer_id, name FROM {table} WHERE name <> '{token}'"})
    captured = capfd.readouterr()
    output = captured.out + captured.err + caplog.text
    assert token.lower() not in output.lower()
    for task_id in ("typo", "where", "sql", "evaluation"):
        rendered = repr(_rendered(dag, task_id))
        assert token.lower() not in rendered.lower() and "***" in rendered, (task_id, rendered)
        assert dag.state(task_id) == "failed" and run.get_task_instance(task_id).try_number == 1, task_id
    for argument in ("where", "sql"):
        assert f"{argument} holds the service connection's API token: it is never sent to the warehouse" in output
    assert namelookup.remaining() == 100
