"""Who shares the answers cache (issue 49, item 6): by default each DAG has its own answers table;
sharing one across DAGs is a choice made by naming it."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.operators.warehouse import answers_table_of_dag, default_answers_table

pytestmark = pytest.mark.usefixtures("airflow_db")


def test_each_dag_has_its_own_answers_table_unless_one_is_named(sqlite_warehouse: Any, write_dag: Any,
                                                                 namelookup: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__NAMELOOKUP__ANSWERS_TABLE")  # the test fixture's; no configuration now
    table = sqlite_warehouse.create_customers([(1, "Theresa", None), (2, "John", None)])
    task = (f"SqlGenderLookupOperator(task_id='enrich', conn_id={sqlite_warehouse.conn_id!r}, "
            f"source_table={table!r}, key_column='customer_id', name_column='name', target_table=TARGET{{}})")
    first = write_dag(task.replace("TARGET", repr(f"{table}_a")).format(""), dag_id="Team-A.daily")
    second = write_dag(task.replace("TARGET", repr(f"{table}_b")).format(""), dag_id="team_b_daily")
    assert str(first.run().state) == str(second.run().state) == "success"
    assert first.xcom("enrich")["answers_table"] == "namelookup_answers_team_a_daily"
    assert second.xcom("enrich")["answers_table"] == "namelookup_answers_team_b_daily"
    assert {"namelookup_answers_team_a_daily", "namelookup_answers_team_b_daily"} <= sqlite_warehouse.table_names()
    assert namelookup.remaining() == 100 - 2 - 2  # the second DAG found nothing of the first's

    shared = ", answers_table='namelookup_answers_team_a_daily'"
    third = write_dag(task.replace("TARGET", repr(f"{table}_c")).format(shared), dag_id="team_c_daily")
    assert str(third.run().state) == "success"  # a knowing choice: the first DAG's answers, for nothing
    assert (third.xcom("enrich")["credits_used"], namelookup.remaining()) == (0, 96)


def test_the_configured_answers_table_stays_the_default_of_every_dag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__NAMELOOKUP__ANSWERS_TABLE", "warehouse_wide_answers")
    assert default_answers_table("any_dag") == "warehouse_wide_answers"
    monkeypatch.delenv("AIRFLOW__NAMELOOKUP__ANSWERS_TABLE")
    assert default_answers_table("any_dag") == answers_table_of_dag("any_dag") == "namelookup_answers_any_dag"
    assert default_answers_table(None) == "namelookup_answers"


def test_a_clear_and_a_pseudonymised_run_never_share_answers(sqlite_warehouse: Any, write_dag: Any,
                                                              namelookup: Any) -> None:
    """One answers table named by both: the pseudonymised run's keys are keyed hashes, another key space,
    so it finds none of the clear run's answers (and stores no clear value beside them)."""
    table = sqlite_warehouse.create_customers([(1, "Theresa", None), (2, "John", None)])
    task = (f"SqlGenderLookupOperator(task_id='enrich', conn_id={sqlite_warehouse.conn_id!r}, "
            f"source_table={table!r}, key_column='customer_id', name_column='name', "
            f"answers_table={sqlite_warehouse.answers_table!r}, ")
    clear = write_dag(task + f"target_table={table + '_clear'!r})")
    hidden = write_dag(task + f"target_table={table + '_hidden'!r}, pseudonymise=True)")
    assert str(clear.run().state) == str(hidden.run().state) == "success"
    assert namelookup.remaining() == 100 - 2 - 2
    rows = sqlite_warehouse.rows(f"SELECT query_hash, first_name FROM {sqlite_warehouse.answers_table} "
                                 f"ORDER BY first_name")
    assert len(rows) == 4 and [r[1] for r in rows if r[1] in ("John", "Theresa")] == ["John", "Theresa"]
    assert str(hidden.run().state) == "success" and namelookup.remaining() == 96  # each finds its own again
