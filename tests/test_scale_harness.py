"""The pieces of ``make scale-test`` that can be checked without a deployment."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules, plan_name
from namelookup_emulator.sample import customer_rows
from scale_test.facts import count_queries
from scale_test.hostname import HOSTNAME_ENV, worker_hostname
from scale_test.processes import Processes


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
