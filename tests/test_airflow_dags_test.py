"""The smoke test every supported Airflow runs, the oldest included (``make test-compat``'s af2.11 and af3.0
targets run only the ``floor`` tests): one DAG through the ``airflow dags test`` command, as a user tries a
DAG, with the credit sensor in its three modes, the table operator on SQLite and the XCom operator, each
distinct name paid once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import write_dag

pytestmark = [pytest.mark.compat, pytest.mark.floor]

CUSTOMERS = [(1, "Anna", "DE"), (2, "anna", "DE"), (3, "Ben", None), (4, "Ben", None), (5, "Carla", "IT")]
"""Three distinct (name, country) queries: a name is looked up once whatever its case."""
XCOM_NAMES = ["Mia", "mia", "Sven", "Anna"]
"""Three more: "Anna" without a country is another query than ("Anna", "DE")."""


def test_airflow_dags_test_runs_the_sensor_in_each_mode_and_both_operator_kinds_paying_once_per_name(
        airflow_db: Path, namelookup: Any, sqlite_warehouse: Any) -> None:
    table = sqlite_warehouse.create_customers(CUSTOMERS)
    handle = write_dag(airflow_db, f"""
        waits = [NameLookupCreditsSensor(task_id=f"wait_{{name}}", min_credits=6, poke_interval=0.2, timeout=60,
                                         mode=mode, deferrable=deferrable)
                 for name, mode, deferrable in [("poke", "poke", False), ("reschedule", "reschedule", False),
                                                ("deferrable", "poke", True)]]
        table = SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r},
                                        source_table={table!r}, target_table={table + "_gender"!r},
                                        key_column="customer_id", name_column="name", country_column="country")
        xcom = GenderLookupOperator(task_id="xcom", queries={XCOM_NAMES!r})
        waits >> table >> xcom
    """)
    out = subprocess.run([sys.executable, "-m", "airflow", "dags", "test", handle.dag_id], capture_output=True,
                         text=True, timeout=600, env=os.environ.copy())
    assert out.returncode == 0, out.stderr[-4000:]
    from airflow.models.dagrun import DagRun

    (run,) = DagRun.find(dag_id=handle.dag_id)
    assert str(run.state) in ("success", "DagRunState.SUCCESS"), (out.stdout + out.stderr)[-4000:]
    assert 100 - namelookup.remaining() == 3 + 3
    genders = dict(sqlite_warehouse.rows(f"SELECT customer_id, gender FROM {table}_gender ORDER BY customer_id"))
    assert genders == {1: "female", 2: "female", 3: "male", 4: "male", 5: "female"}
