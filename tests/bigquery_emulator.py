"""bqemulator (BigQuery's REST and jobs API on DuckDB) in a process of its own, for the BigQuery tests.

The table operators reach it the way they reach BigQuery: a ``gcpbigquery`` connection's
``BigQueryHook`` gives its google-cloud-bigquery client, and ``BIGQUERY_EMULATOR_HOST`` (read by
that client) points the client here instead of at Google. bqemulator lives in a venv of its own
(``make bigquery-emulator``: it pins an older sqlglot than the provider); ``NAMELOOKUP_BQEMULATOR_PYTHON``
names that venv's Python, which runs it through :mod:`tests.bqemulator_launch` (one correction of
its wire, said there).

Example::

    emulator = start(executable())
    os.environ["BIGQUERY_EMULATOR_HOST"] = emulator.url
    ...
    emulator.stop()
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support import free_port

PROJECT = "local-project"
DATASET = "analytics"
DEFAULT_PYTHON = Path.home() / ".cache/airflow-provider-namelookup/bqemulator-venv/bin/python"
LAUNCHER = Path(__file__).with_name("bqemulator_launch.py")


def executable() -> Path | None:
    """The Python of bqemulator's venv, or None when it is not installed (``make bigquery-emulator``)."""
    path = Path(os.environ.get("NAMELOOKUP_BQEMULATOR_PYTHON") or DEFAULT_PYTHON)
    if not (path.is_file() and os.access(path, os.X_OK)):
        return None
    return path if (path.parent / "bqemulator").is_file() else None


@dataclass
class BigQueryEmulator:
    """A running bqemulator: ``url`` for ``BIGQUERY_EMULATOR_HOST``, dataset :data:`DATASET` created."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def start(program: Path, timeout: float = 60.0) -> BigQueryEmulator:
    """Start bqemulator (in memory, on free loopback ports) and wait until it answers; create :data:`DATASET`."""
    rest, grpc = free_port(), free_port()
    log = Path(tempfile.mkstemp(prefix="bqemulator-", suffix=".log")[1])
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(program), str(LAUNCHER), "start", "--ephemeral", "--rest-port", str(rest), "--grpc-port", str(grpc),
             "--project", PROJECT, "--log-level", "warning", "--log-format", "console"],
            stdout=out, stderr=subprocess.STDOUT)
    emulator = BigQueryEmulator(f"http://127.0.0.1:{rest}", process, log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"bqemulator exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{emulator.url}/readyz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            emulator.stop()
            raise RuntimeError(f"bqemulator did not answer within {timeout:.0f} s: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    response = httpx.post(f"{emulator.url}/bigquery/v2/projects/{PROJECT}/datasets",
                          json={"datasetReference": {"projectId": PROJECT, "datasetId": DATASET}}, timeout=30)
    if response.status_code not in (200, 409):
        emulator.stop()
        raise RuntimeError(f"bqemulator refused to create dataset {DATASET}: {response.text[:500]}")
    return emulator
