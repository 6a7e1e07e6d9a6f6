"""The token never shows: not in task logs, XCom, rendered template fields or errors,
for DAG runs that succeed and DAG runs that fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("airflow_db")


def test_token_appears_nowhere(write_dag: Any, namelookup: Any, sqlite_warehouse: Any, airflow_db: Path,
                               capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    table = sqlite_warehouse.create_customers([(i, f"Name{i}", None) for i in range(1, 300)])
    token = namelookup.token
    succeeding = write_dag(f"""
        GenderLookupOperator(task_id="xcom", queries=["Anna", "Ben"])
        SqlGenderLookupOperator(task_id="table", sql_conn_id={sqlite_warehouse.conn_id!r},
                                source_table={table!r}, key_column="customer_id", name_column="name",
                                max_credits=10, on_insufficient_credits="partial")
        NameLookupCreditsSensor(task_id="sensor", min_credits=1, poke_interval=0.1, timeout=5)
        GenderLookupOperator(task_id="templated", queries=["{{{{ conn.namelookup_default.password }}}}"])
    """)
    failing = write_dag(f"""
        SqlGenderLookupOperator(task_id="table", sql_conn_id={sqlite_warehouse.conn_id!r},
                                source_table={table!r}, key_column="customer_id", name_column="name",
                                check_remaining_credits=False)
        NameLookupCreditsSensor(task_id="sensor", min_credits=10_000, poke_interval=0.1, timeout=1)
    """)
    runs = [succeeding.run()]
    namelookup.set_credits(150)
    runs.append(failing.run())
    assert [str(r.state) for r in runs] == ["success", "failed"]

    seen: list[str] = []
    out = capfd.readouterr()
    seen += [out.out, out.err, caplog.text]
    seen += [p.read_text(errors="replace") for p in (airflow_db.parent / "logs").rglob("*") if p.is_file()]
    with create_session() as session:
        for run in runs:
            for xcom in session.scalars(XComModel.get_many(run_id=run.run_id, dag_ids=run.dag_id)):
                seen.append(repr(XComModel.deserialize_value(xcom)))
            for rtif in session.query(RenderedTaskInstanceFields).filter_by(run_id=run.run_id, dag_id=run.dag_id):
                seen.append(repr(rtif.rendered_fields))
    assert any("templated" in text for text in seen)  # the captures are not empty
    assert [text[max(0, text.find(token) - 200):text.find(token) + 50] for text in seen if token in text] == []
