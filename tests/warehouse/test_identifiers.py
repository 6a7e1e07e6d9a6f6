"""Table and column names are checked before they reach SQL."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.identifiers import check_identifier


@pytest.mark.parametrize("bad", ["", "1abc", "a-b", "a b", "a;drop", "a.b.c", "é", None, 5, "a" * 64])
def test_identifiers_are_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="plain SQL identifier"):
        check_identifier(bad, "source_table", qualified=True)


@pytest.mark.parametrize("bad", ["t\n", "t\r\n", "a.t\n", "a\n.t", "\nt", "t\x00"])
def test_a_line_break_is_refused_wherever_it_sits(bad: str) -> None:
    """``$`` matched before a final newline: ``"t\\n"`` passed and a table named with it was created."""
    with pytest.raises(ValueError, match="plain SQL identifier") as info:
        check_identifier(bad, "target_table", qualified=True)
    assert repr(bad) in str(info.value)


@pytest.mark.usefixtures("airflow_db")
@pytest.mark.parametrize("parameter", ["source_table", "target_table", "key_column", "name_column"])
def test_a_table_run_refuses_a_name_ending_in_a_newline(parameter: str, sqlite_warehouse: Any, write_dag: Any,
                                                        namelookup: Any, capfd: pytest.CaptureFixture[str],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """The tables' names are templated: Jinja drops a template's own final newline, not one that
    comes from ``params`` or the run's conf, as here."""
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    args = {"sql_conn_id": sqlite_warehouse.conn_id, "source_table": table, "key_column": "customer_id",
            "name_column": "name", "target_table": f"{table}_out"}
    bad = args[parameter] + "\n"
    if not parameter.endswith("_table"):  # not templated: refused when the DAG is parsed
        from airflow_provider_namelookup.operators import SqlGenderLookupOperator

        with pytest.raises(ValueError, match=f"{parameter} must be a plain SQL identifier"):
            SqlGenderLookupOperator(task_id="enrich", **{**args, parameter: bad})
        return
    args[parameter] = "{{ params.name }}"
    rendered = ", ".join(f"{k}={v!r}" for k, v in args.items())
    dag = write_dag(f"SqlGenderLookupOperator(task_id='enrich', params={{'name': {bad!r}}}, {rendered})")
    assert str(dag.run().state) == "failed"
    captured = capfd.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert f"{parameter} must be a plain SQL identifier (letters, digits, _), got {bad!r}" in logged
    assert sqlite_warehouse.rows("SELECT name FROM sqlite_master WHERE name LIKE ?", [f"{table}%"]) == [(table,)]
    assert namelookup.remaining() == 100
