"""Usage records any task can forge do not reach the credits view (issue 25, item 2), on a real
api-server: a task of one DAG writes records (Airflow Variables, through the Task SDK, as any task
may) naming another DAG with 987,654 credits, 300 made-up connections, a real connection that is
not a Name Lookup one, and a date in 2099; a real lookup task that uses that other connection
fails. Before, the view showed the forged spending as the other DAG's, listed 300 accounts more,
named the other connection's type, and showed the 2099 record in every period."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.conftest import MINE, THEIRS, UI_CONN, ApiServer, records

pytestmark = pytest.mark.usefixtures("airflow_db")

SECRET_CONN, SECRET_TYPE = "warehouse_payroll", "postgres"


@pytest.fixture
def non_lookup_connection(airflow_db: Path) -> Iterator[str]:
    """A real connection of another type in the connection table."""
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        session.add(Connection(conn_id=SECRET_CONN, conn_type=SECRET_TYPE, host="payroll.internal", login="hr"))
    yield SECRET_CONN
    with create_session() as session:
        session.query(Connection).filter(Connection.conn_id == SECRET_CONN).delete()


def _forged(now: datetime) -> list[dict[str, Any]]:
    template = {"v": 2, "dag_id": THEIRS, "task_id": "genders", "run_id": "manual__2026-11-23T08:00:00+00:00",
                "map_index": -1, "try_number": 1, "ti_id": str(uuid.uuid4()), "conn_id": UI_CONN,
                "lookup": "gender", "state": "success", "credits_used": 987_654, "requests": 1, "retries": 0,
                "cache_hits": 0, "lookups": 987_654, "remaining_credits": 1, "start": now.isoformat(),
                "end": (now + timedelta(seconds=1)).isoformat(), "error": None, "status_id": None}
    forged = [template]  # another DAG's name and a run of it that is not there
    forged += [{**template, "dag_id": "forger", "conn_id": f"namelookup_fake_{i:03d}", "credits_used": 1,
                "start": (now + timedelta(microseconds=i + 1)).isoformat()} for i in range(300)]
    forged.append({**template, "dag_id": "forger", "conn_id": SECRET_CONN, "credits_used": 5})
    forged.append({**template, "start": "2099-01-01T00:00:00+00:00", "end": "2099-01-01T00:00:01+00:00"})
    return forged


def _numbers(usage: dict[str, Any], dag_id: str) -> int:
    return sum(d["credits_used"] for d in usage["daily"] if d["dag_id"] == dag_id)


def test_forged_records_and_other_connections_do_not_reach_the_view(api_server: ApiServer, spent: dict[str, Any],
                                                                     non_lookup_connection: str,
                                                                     airflow_db: Path) -> None:
    from tests.support import write_dag

    before = api_server.get("/namelookup/api/usage?days=366", user="admin").json()
    forged = _forged(datetime.now(UTC))
    forger = write_dag(airflow_db, f"""
        import json

        @task
        def forge():
            from airflow_provider_namelookup.usage import store
            from airflow_provider_namelookup.usage.record import UsageRecord

            return [store.write(UsageRecord.from_dict(fields)) for fields in json.loads({json.dumps(forged)!r})]

        forge()
        GenderLookupOperator(task_id="misconfigured", queries=["Anna"], namelookup_conn_id={SECRET_CONN!r})
    """)
    forger.run()
    assert forger.state("forge") == "success" and forger.state("misconfigured") == "failed"
    try:
        after = api_server.get("/namelookup/api/usage?days=366", user="admin").json()
        text = json.dumps(after)
        # another DAG's spending: as the records its own tries wrote, and as before
        assert _numbers(after, THEIRS) == _numbers(before, THEIRS) == sum(r.credits_used for r in records(THEIRS))
        assert _numbers(after, MINE) == _numbers(before, MINE)
        assert "987654" not in text
        assert not [t for t in after["tasks"] if t["dag_id"] == "forger"]
        # accounts: the connection table's Name Lookup connections, no made-up ones, nothing of another type
        conn_ids = [c["conn_id"] for c in after["connections"]]
        assert conn_ids == [c["conn_id"] for c in before["connections"]] and UI_CONN in conn_ids
        assert not [c for c in conn_ids if c.startswith("namelookup_fake_")]
        assert SECRET_CONN not in conn_ids and SECRET_TYPE not in text and "payroll.internal" not in text
        # the real try on the other connection is shown (its DAG's usage), its connection's account is not
        misconfigured = [t for t in after["tries"] if t["dag_id"] == forger.dag_id]
        assert [(t["task_id"], t["state"], t["conn_id"]) for t in misconfigured] == [
            ("misconfigured", "failed", SECRET_CONN)]
        # a record dated 2099 is in no period
        assert not [t for t in after["tries"] if t["start"].startswith("2099")]
        assert not [d for d in after["daily"] if d["date"].startswith("2099")]
    finally:
        _delete(forger.xcom("forge") or [])


def _delete(keys: list[str]) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_namelookup.usage import store

    with create_session() as session:
        variable = store._variable_model()
        session.query(variable).filter(variable.key.in_(keys)).delete(synchronize_session=False)


def test_delete_before_now_removes_a_record_dated_in_2099(airflow_db: Path) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_namelookup.usage import store
    from airflow_provider_namelookup.usage.record import UsageRecord

    [*_, future] = _forged(datetime.now(UTC))
    key = store.key_of(UsageRecord.from_dict(future))
    with create_session() as session:
        variable = store._variable_model()
        session.add(variable(key=key, val=json.dumps(future)))
    with create_session() as session:
        store.delete_before(session, datetime.now(UTC) - timedelta(days=3650))  # keeps every record of 10 years
        assert session.query(store._variable_model()).filter_by(key=key).count() == 0
