"""The shipped example DAGs: they import cleanly and run to success against the emulator."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import dag_bag, load_dag

EXAMPLES = Path(__file__).resolve().parent.parent / "example_dags"
pytestmark = pytest.mark.usefixtures("airflow_db")


@pytest.mark.compat
def test_dagbag_imports_every_example_without_errors_or_warnings() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bag = dag_bag(EXAMPLES)
    assert bag.import_errors == {}
    assert sorted(bag.dags) == ["namelookup_approved_enrichment", "namelookup_credit_gate",
                                "namelookup_gender_accuracy", "namelookup_scale_out",
                                "namelookup_warehouse_enrichment", "namelookup_xcom_flow"]
    assert [str(w.message) for w in caught if "airflow_provider_namelookup" in str(w.filename)
            or "example_dags" in str(w.filename)] == []
    for dag in bag.dags.values():
        assert dag.doc_md and "namelookup" in dag.tags


@pytest.fixture
def customers(warehouse: Any, airflow_db: Path) -> Iterator[tuple[Any, str]]:
    """A customers table in the warehouse, and the enrichment DAG pointed at it."""
    table = warehouse.table_name()
    text = "TEXT" if warehouse.kind == "sqlite" else "VARCHAR(200)"
    warehouse.hook.run(f"CREATE TABLE {table} (customer_id INTEGER PRIMARY KEY, first_name {text}, "
                       f"country {text})")
    warehouse.insert(table, [(1, "Theresa", "DE"), (2, "Andrea", "IT"), (3, "Andrea", "DE"), (4, "Lars", None),
                             (5, "theresa", "DE"), (6, "", None), (7, "Giulia", "IT")])
    os.environ.update(NAMELOOKUP_WAREHOUSE_CONN_ID=warehouse.conn_id, NAMELOOKUP_CUSTOMERS_TABLE=table)
    yield warehouse, table
    for name in ("NAMELOOKUP_WAREHOUSE_CONN_ID", "NAMELOOKUP_CUSTOMERS_TABLE"):
        os.environ.pop(name, None)


@pytest.mark.compat(warehouse="sqlite")
@pytest.mark.database
def test_warehouse_enrichment(customers: tuple[Any, str], namelookup: Any, airflow_db: Path) -> None:
    warehouse, table = customers
    handle = load_dag(airflow_db / "namelookup_warehouse_enrichment.py", "namelookup_warehouse_enrichment")
    assert str(handle.run().state) == "success"
    assert handle.xcom("plan_gender")["credits_needed"] == 5  # theresa/DE, andrea/IT, andrea/DE, lars, giulia/IT
    assert handle.xcom("plan_origin")["credits_needed"] == 2 * 4  # theresa, andrea, lars, giulia
    assert handle.xcom("wait_for_credits")["remaining_credits"] == 100
    assert 100 - namelookup.remaining() == 13
    genders = dict(warehouse.rows(f"SELECT customer_id, gender FROM {table}_gender"))
    assert genders == {1: "female", 2: "male", 3: "female", 4: "male", 5: "female", 6: None, 7: "female"}
    origins = dict(warehouse.rows(f"SELECT customer_id, top_country FROM {table}_origin WHERE status = 'ok'"))
    assert origins[7] == "IT" and len(origins) == 6

    assert str(handle.run().state) == "success"  # the next day: nothing new, nothing paid
    assert handle.xcom("plan_gender")["credits_needed"] == 0 and 100 - namelookup.remaining() == 13


@pytest.mark.compat
def test_xcom_flow(namelookup: Any, airflow_db: Path) -> None:
    handle = load_dag(airflow_db / "namelookup_xcom_flow.py", "namelookup_xcom_flow")
    assert str(handle.run().state) == "success"
    report = handle.xcom("report")
    assert report["rows"] == 9 and report["by_gender"]["error"] == 1
    assert report["by_gender"]["female"] == 5 and report["by_gender"]["male"] == 3  # Andrea is female in DE
    assert 100 - namelookup.remaining() == 7


@pytest.mark.parametrize(("min_credits", "ran", "skipped"), [
    (50, {"enough_credits", "lookup_names"}, {"report_shortfall"}),
    (5000, {"report_shortfall"}, {"enough_credits", "lookup_names"}),
])
@pytest.mark.compat(min_credits=5000)  # the gate's wait, its soft fail and the shortfall branch
def test_credit_gate(namelookup: Any, airflow_db: Path, min_credits: int, ran: set[str], skipped: set[str]) -> None:
    handle = load_dag(airflow_db / "namelookup_credit_gate.py", "namelookup_credit_gate")
    handle.dag.get_task("enough_credits").timeout = 1  # the example waits ten minutes
    handle.dag.get_task("enough_credits").poke_interval = 0.2
    handle.run(run_conf={"min_credits": min_credits})
    assert {t for t in ran | skipped if handle.state(t) == "success"} == ran
    assert {t for t in ran | skipped if handle.state(t) == "skipped"} == skipped


@pytest.mark.database
def test_scale_out(warehouse: Any, namelookup: Any, airflow_db: Path) -> None:
    """The mapped shards of the scale-out example cover every row once and pay each distinct query once
    (here run one after another by ``dag.test()``; ``make scale-test`` runs them on two Celery workers)."""
    from namelookup_emulator.sample import customer_rows
    from scale_test.facts import count_queries

    rows = list(customer_rows(300, seed=10))
    table = warehouse.table_name()
    text = "TEXT" if warehouse.kind == "sqlite" else "VARCHAR(200)"
    warehouse.hook.run(f"CREATE TABLE {table} (customer_id INTEGER PRIMARY KEY, first_name {text}, country {text})")
    warehouse.insert(table, rows)
    namelookup.set_credits(1000)
    os.environ["NAMELOOKUP_WAREHOUSE_CONN_ID"] = warehouse.conn_id
    try:
        handle = load_dag(airflow_db / "namelookup_scale_out.py", "namelookup_scale_out")
        assert str(handle.run(run_conf={"table": table, "shards": 8}).state) == "success"
    finally:
        os.environ.pop("NAMELOOKUP_WAREHOUSE_CONN_ID", None)
    facts = count_queries((name, country) for _, name, country in rows)
    assert len(handle.xcom("key_ranges")) == 8
    assert handle.xcom("report") == {**handle.xcom("report"), "shards": 8, "rows_read": 300,
                                     "credits_used": facts.distinct_queries}
    assert 1000 - namelookup.remaining() == facts.distinct_queries
    keys = [key for (key,) in warehouse.rows(f"SELECT customer_id FROM {table}_gender")]
    assert sorted(keys) == [key for key, _, _ in rows]


@pytest.fixture
def small_customers(sqlite_warehouse: Any) -> Iterator[tuple[Any, str]]:
    """The customers table of the enrichment examples on SQLite, the examples pointed at it."""
    table = sqlite_warehouse.table_name()
    sqlite_warehouse.hook.run(f"CREATE TABLE {table} (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)")
    sqlite_warehouse.insert(table, [(1, "Theresa", "DE"), (2, "Andrea", "IT"), (3, "Andrea", "DE"),
                                    (4, "Lars", None), (5, "theresa", "DE"), (6, "", None), (7, "Giulia", "IT")])
    os.environ.update(NAMELOOKUP_WAREHOUSE_CONN_ID=sqlite_warehouse.conn_id, NAMELOOKUP_CUSTOMERS_TABLE=table)
    yield sqlite_warehouse, table
    for name in ("NAMELOOKUP_WAREHOUSE_CONN_ID", "NAMELOOKUP_CUSTOMERS_TABLE"):
        os.environ.pop(name, None)


@pytest.mark.compat
def test_approved_enrichment_goes_on_without_asking_under_the_limit(small_customers: tuple[Any, str],
                                                                   namelookup: Any, airflow_db: Path) -> None:
    """5 credits planned, auto_approve_below 500 (the default): no approval asked, the run pays 5.
    The approval and rejection paths, with a person answering through the REST API, are in
    tests/evaluation/test_approval_dag.py."""
    warehouse, table = small_customers
    handle = load_dag(airflow_db / "namelookup_approved_enrichment.py", "namelookup_approved_enrichment")
    assert str(handle.run().state) == "success"
    assert handle.xcom("plan")["credits_needed"] == 5 and handle.xcom("review", key="cost") == 5
    assert (handle.state("auto_approved"), handle.state("approve"), handle.state("enrich")) == (
        "success", "skipped", "success")
    assert 100 - namelookup.remaining() == 5
    assert "**100 credits** left" in handle.xcom("review", key="body")
    assert len(warehouse.rows(f"SELECT customer_id FROM {table}_gender WHERE status = 'ok'")) == 6

    assert str(handle.run(run_conf={"auto_approve_below": 0}).state) == "success"  # nothing left: 0 credits,
    assert handle.state("auto_approved") == "success"  # and a plan of 0 never waits for a person
    assert 100 - namelookup.remaining() == 5


@pytest.mark.compat
def test_approved_enrichment_refuses_to_ask_without_the_hitl_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow before 3.1, or an older standard provider (no operators.hitl): the DAG still parses, and
    its ``approve`` task fails saying what it needs; ``enrich`` then never runs, so nothing is spent."""
    import runpy
    import sys

    from airflow.providers.common.compat.sdk import AirflowFailException

    monkeypatch.setitem(sys.modules, "airflow.providers.standard.operators.hitl", None)
    dag = runpy.run_path(str(EXAMPLES / "namelookup_approved_enrichment.py"))["dag"]
    with pytest.raises(AirflowFailException, match=r"namelookup_approved_enrichment needs Airflow's human-in-the-loop "
                                                   r"ApprovalOperator .* on Airflow 3.1 or later.* Upgrade "
                                                   r"apache-airflow-providers-standard"):
        dag.get_task("approve").python_callable()
    assert dag.get_task("enrich").trigger_rule == "none_failed_min_one_success"
    assert dag.get_task("approve").downstream_task_ids == {"enrich"}


def test_gender_accuracy(sqlite_warehouse: Any, namelookup: Any, airflow_db: Path, tmp_path: Path) -> None:
    """The evaluation family's example: each enrichment pays its distinct queries, each evaluation reads
    them with the known genders for free and writes its report (not in the smoke subset: the report's
    plot needs matplotlib, which the version matrix's venvs do not hold)."""
    table = sqlite_warehouse.table_name()
    sqlite_warehouse.hook.run(f"CREATE TABLE {table} (customer_id INTEGER PRIMARY KEY, first_name TEXT, "
                              "country TEXT, true_gender TEXT)")
    sqlite_warehouse.insert(table, [(1, "Theresa", "DE", "f"), (2, "Andrea", "IT", "male"), (3, "Andrea", "DE", "F"),
                                    (4, "Lars", None, "m"), (5, "Kim", "US", None), (6, "", None, "f")])
    os.environ.update(NAMELOOKUP_WAREHOUSE_CONN_ID=sqlite_warehouse.conn_id, NAMELOOKUP_CUSTOMERS_TABLE=table,
                      NAMELOOKUP_REPORT_DIR=str(tmp_path / "reports"))
    try:
        handle = load_dag(airflow_db / "namelookup_gender_accuracy.py", "namelookup_gender_accuracy")
        assert str(handle.run().state) == "success"
    finally:
        for name in ("NAMELOOKUP_WAREHOUSE_CONN_ID", "NAMELOOKUP_CUSTOMERS_TABLE", "NAMELOOKUP_REPORT_DIR"):
            os.environ.pop(name, None)
    assert 100 - namelookup.remaining() == 5 + 4  # the table's 5 distinct valid queries, the list's 4
    table_result = handle.xcom("table_accuracy")
    assert (table_result["evaluated"], table_result["left_out"], table_result["not_answered"]) == (4, 1, 1)
    assert set(table_result["by_group"]) >= {"DE", "IT"}
    list_result = handle.xcom("list_accuracy")
    assert (list_result["evaluated"], list_result["left_out"]) == (3, 1)
    for result in (table_result, list_result):
        assert Path(result["report"]).is_file() and str(tmp_path / "reports") in result["report"]
