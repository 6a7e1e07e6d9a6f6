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


def _windows(token: str, width: int = 8) -> list[str]:
    """Every piece of ``token`` a cut could leave in a log line (the token itself when shorter)."""
    return [token[i:i + width] for i in range(max(1, len(token) - width + 1))]


@pytest.mark.parametrize("length", [10, 30, 43])
def test_no_piece_of_the_token_in_the_log_of_an_xcom_lookup_over_dict_rows(
        length: int, write_dag: Any, emulator: Any, airflow_db: Path, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """The audit's case: dict rows whose ``email`` (or another field) holds the connection's token
    were logged as a cut ``repr`` (``{'email': 'AUDITtok3nXq7Zp9Lm2Vb8Rw4Ky6H``), which Airflow's
    secrets masker no longer recognises. Tokens below and above the guard's 16 characters."""
    import secrets
    import string

    from tests.support import set_connection

    alphabet = string.ascii_letters + string.digits
    token = "".join(secrets.choice(alphabet) for _ in range(length))
    emulator.create_account(token=token, credits=100)
    conn_id = f"namelookup_tok{length}"
    set_connection(conn_id, {"conn_type": "namelookup", "host": emulator.url, "password": token,
                             "extra": {"backoff_base": 0.01}})
    # Invalid by the guard (a long token anywhere, any token as a whole value) or by another rule
    # (an empty name), the token riding along in a field no rule reads.
    rows = [{"email": f"{token}@example.com", "id": 6}, {"email": token}, {"email": "", "note": token},
            {"email": "", "meta": {"tags": [token], "pair": ("x", token)}}, {"email": "anna@example.com"}]
    objects = [{"first_name": token}, {"first_name": "", "comment": token}, {"first_name": "", "id": f"row-{token}"},
               {"full_name": f"Anna {token}"} if length >= 16 else {"full_name": ""}, "Anna"]
    dag = write_dag(f"""
        GenderLookupOperator(task_id="rows", namelookup_conn_id={conn_id!r}, queries={rows!r},
                             query_field="email", name_kind="email")
        GenderLookupOperator(task_id="objects", namelookup_conn_id={conn_id!r}, queries={objects!r})
    """)
    assert str(dag.run().state) == "success"

    out = capfd.readouterr()
    seen = [out.out, out.err, caplog.text]
    seen += [p.read_text(errors="replace") for p in (airflow_db.parent / "logs").rglob("*") if p.is_file()]
    logged = "\n".join(seen)
    assert logged.count("Invalid, costs nothing") >= 5  # the lines under test were written
    assert [(piece, logged[max(0, logged.find(piece) - 120):logged.find(piece) + 40])
            for piece in _windows(token) if piece in logged] == []
