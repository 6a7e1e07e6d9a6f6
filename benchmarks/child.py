"""One measured run in a fresh Python interpreter: wall time, CPU time and peak RSS.

A job is a ``module:function`` taking a dict of parameters. The function does the
set-up (imports, opening connections) and returns the work as a callable; only the work
is timed (``seconds``, ``cpu_seconds``); ``process_cpu_seconds`` is the CPU time of the
whole child, start-up included. Each run gets its own interpreter, so its peak RSS (``VmHWM`` from
``/proc/self/status``, read when the work is done) is that run's alone and runs of
different sizes compare fairly. The child's output (Airflow's task log lines) goes
to a log file; the result comes back as JSON.

Example::

    result = run_in_child("benchmarks.provider:enrich_customers", {"sql_conn_id": "bench_warehouse"},
                          env=connections, log_path=Path("provider.log"))
    result["seconds"], result["cpu_seconds"], result["peak_rss_mb"], result["value"]

    python -m benchmarks.child benchmarks.naive:naive_loop '{"db": "w.db", ...}' result.json
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class ChildFailed(RuntimeError):
    """The child exited with an error, or ran past its time limit."""


def status_megabytes(field: str) -> float:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(job: str, params: dict[str, Any]) -> dict[str, Any]:
    """Set up ``job``, run its work once, and return the figures (in this process)."""
    module, _, name = job.partition(":")
    prepare = getattr(importlib.import_module(module), name)
    work = prepare(params)
    rss_before = status_megabytes("VmRSS")
    cpu = _cpu_seconds()
    started = time.perf_counter()
    value = work()
    elapsed = time.perf_counter() - started
    return {"job": job, "seconds": elapsed, "cpu_seconds": _cpu_seconds() - cpu,
            "process_cpu_seconds": _cpu_seconds(), "rss_before_mb": rss_before,
            "peak_rss_mb": status_megabytes("VmHWM"), "value": value}


def run_in_child(job: str, params: dict[str, Any], *, log_path: Path, env: Mapping[str, str] | None = None,
                 timeout: float = 3600.0) -> dict[str, Any]:
    """Run ``job`` in a fresh interpreter and return :func:`measure`'s figures.

    The child is killed if it outlives ``timeout`` or if this process is interrupted. Its output is
    appended to ``log_path`` (its folder made if missing).

    :raises ChildFailed: when the child fails or times out (its log says why).
    """
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), child_env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="namelookup-bench-child-") as scratch:
        result_path = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "benchmarks.child", job, json.dumps(params), str(result_path)]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            shown = {key: "***" if key == "token" else value for key, value in params.items()}  # never a token in a log
            log.write(f"\n=== {job} {json.dumps(shown)}\n".encode())
            log.flush()
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=child_env, cwd=ROOT)
            try:
                code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise ChildFailed(f"{job} ran longer than {timeout:.0f} s; see {log_path}") from None
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        if code != 0 or not result_path.exists():
            raise ChildFailed(f"{job} failed (exit code {code}); see {log_path}")
        return dict(json.loads(result_path.read_text()))


def main(argv: list[str] | None = None) -> int:
    job, params, result_path = argv if argv is not None else sys.argv[1:]
    result = measure(job, json.loads(params))
    Path(result_path).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
