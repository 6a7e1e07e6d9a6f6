"""The pieces of ``make scale-test`` that can be checked without a deployment."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules, plan_name
from namelookup_emulator.sample import customer_rows
from scale_test.facts import count_queries
from scale_test.hostname import HOSTNAME_ENV, worker_hostname
from scale_test.processes import Processes

# scale_test.deployment and .warehouse read PostgreSQL through psycopg2 (the [test] extra): imported in
# the tests that use them, so that the version matrix's venvs, which lack it, still collect this file


def test_independent_count_agrees_with_the_plan_step() -> None:
    rows = list(customer_rows(5_000, seed=3))
    facts = count_queries((name, country) for _, name, country in rows)
    planned = [plan_name(name, QueryRules(LookupKind.GENDER), country=country, ref=key) for key, name, country in rows]
    assert facts.rows == 5_000
    assert facts.invalid_rows == sum(1 for p in planned if p.query is None) > 0
    assert facts.distinct_queries == len({p.query_hash for p in planned if p.query is not None}) < 5_000


def test_count_normalises_like_the_service() -> None:
    facts = count_queries([("Anna", "de"), (" anna", "DE"), ("ANNA", ""), ("Anna", None), ("x" * 51, None),
                           ("Anna", "XX")])
    assert (facts.rows, facts.invalid_rows, facts.distinct_queries) == (6, 2, 2)


def test_worker_hostname(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOSTNAME_ENV, "worker-7")
    assert worker_hostname() == "worker-7"
    monkeypatch.delenv(HOSTNAME_ENV)
    assert worker_hostname()


# The grandchild moves to a process group of its own, as Airflow's task supervisor does with a task.
GRANDCHILD = ("import os, subprocess, sys, time; "
              "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); time.sleep(60)']); "
              "print('started', flush=True); time.sleep(60)")


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_processes_end_with_their_whole_session(tmp_path: Path, how: str) -> None:
    """SIGKILL and stop reach a grandchild in another process group too, and pgrep then finds
    nothing of the session."""
    procs = Processes(tmp_path, {"PATH": "/usr/bin:/bin"})
    procs.start("parent", [sys.executable, "-c", GRANDCHILD])
    deadline = time.monotonic() + 20
    while (len(procs.leftovers()) < 2 or "started" not in procs.tail("parent")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(procs.leftovers()) == 2  # the parent and its grandchild, in the parent's session
    getattr(procs, how)("parent")
    deadline = time.monotonic() + 10
    while procs.leftovers() and time.monotonic() < deadline:  # the orphaned grandchild is reaped by init
        time.sleep(0.1)
    assert procs.leftovers() == []


def test_check_alive_names_a_dead_process(tmp_path: Path) -> None:
    with Processes(tmp_path, {"PATH": "/usr/bin:/bin"}) as procs:
        procs.start("quitter", [sys.executable, "-c", "raise SystemExit(3)"])
        procs.started["quitter"].popen.wait()
        with pytest.raises(RuntimeError, match=r"quitter \(code 3\)"):
            procs.check_alive()


def test_the_deployment_parses_both_dags_with_the_approval_dags_settings(tmp_path: Path) -> None:
    """Each deployed file holds the DAG it is named after, and the environment every process shares
    gives the approval DAG a low ceiling, its table and a retry (it sets none itself), and no scheduled runs."""
    from scale_test.deployment import APPROVAL_DAG_ID, DAG_FILES, Deployment, DeploymentOptions
    from scale_test.warehouse import SOURCE_TABLE

    for dag_id, path in DAG_FILES.items():
        assert f'dag_id="{dag_id}"' in path.read_text()
    assert "retries" not in DAG_FILES[APPROVAL_DAG_ID].read_text()  # [core] default_task_retries applies
    env = Deployment(tmp_path, DeploymentOptions(auto_approve_ceiling=7)).env()
    assert env["NAMELOOKUP_AUTO_APPROVE_CEILING"] == "7"
    assert env["NAMELOOKUP_CUSTOMERS_TABLE"] == SOURCE_TABLE and env["NAMELOOKUP_WAREHOUSE_CONN_ID"]
    assert env["AIRFLOW__CORE__DEFAULT_TASK_RETRIES"] == "1"
    assert env["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] == "False"


@pytest.mark.database
@pytest.mark.usefixtures("postgres_warehouse")  # skips, or fails in CI, when PostgreSQL is not reachable
def test_added_rows_ask_only_queries_the_table_did_not_hold() -> None:
    from scale_test.warehouse import SOURCE_TABLE, PostgresServer, Warehouse

    server, database = PostgresServer(), f"nl_scale_test_{uuid.uuid4().hex[:8]}"
    server.create(database)
    try:
        house = Warehouse(server, database)
        before = house.fill(500, seed=5)
        added = house.add_new_queries(40)
        assert (added.rows, added.invalid_rows, added.distinct_queries) == (40, 0, 40)
        conn = server.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT first_name, country FROM {SOURCE_TABLE}")
                after = count_queries(cur.fetchall())
                cur.execute(f"SELECT MIN(customer_id), MAX(customer_id) FROM {SOURCE_TABLE}")
                assert cur.fetchone() == (1, 540)
        finally:
            conn.close()
        assert (after.rows, after.distinct_queries) == (540, before.distinct_queries + 40)
    finally:
        server.drop(database)


def test_the_logs_printed_on_failure_mask_the_emulators_token(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The emulator prints its token when it starts; a failed run prints the tail of its log."""
    from scale_test.__main__ import _print_logs
    from scale_test.deployment import Deployment, DeploymentOptions

    deployment = Deployment(tmp_path, DeploymentOptions())
    deployment.log_dir.mkdir(parents=True)
    (deployment.log_dir / "emulator.log").write_text(f"API token: {deployment.token} (an account)\n")
    _print_logs(deployment, [])
    printed = capsys.readouterr().out
    assert "API token: ***" in printed and deployment.token not in printed
