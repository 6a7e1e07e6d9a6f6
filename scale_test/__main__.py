"""``make scale-test`` (``python -m scale_test``): the provider on a real distributed executor.

Starts a real Airflow deployment on this machine (:mod:`scale_test.deployment`: the
CeleryExecutor with two workers, PostgreSQL, Redis, the emulator), runs the two
scenarios of :mod:`scale_test.scenarios` on a 200,000-row PostgreSQL table (**exact**,
then **kill**), then the **approval** scenario of :mod:`scale_test.approval` (an approved
spend across a failed try, its retry and a clear, on a 12,000-row table), stops
everything (also on failure, Ctrl-C or SIGTERM) and checks with ``pgrep`` that nothing
is left. Logs and ``results.json`` stay in the run directory it prints; on failure the
tails of the relevant logs are printed. Exit code 0 when every expectation held.

Example::

    make scale-test
    .venv/bin/python -m scale_test --rows 50000 --shards 12 --run-dir /tmp/scale
    .venv/bin/python -m scale_test --only-approval      # the approval scenario alone
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

from scale_test.approval import run_approval
from scale_test.deployment import Deployment, DeploymentOptions
from scale_test.scenarios import ScenarioResult, run_exact, run_kill

STARTED = time.monotonic()


def log(message: str) -> None:
    print(f"[scale-test +{time.monotonic() - STARTED:5.0f}s] {message}", flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scale_test", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the customers table (%(default)s)")
    parser.add_argument("--shards", type=int, default=8, help="mapped task instances (%(default)s)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the table's rows (%(default)s)")
    parser.add_argument("--run-dir", type=Path, default=None, help="where logs go (default: a new temp dir)")
    parser.add_argument("--approval-rows", type=int, default=12_000,
                        help="rows of the approval scenario's table (%(default)s)")
    parser.add_argument("--budget", type=float, default=680.0,
                        help="seconds the whole test may take before it gives up and cleans up (%(default)s)")
    parser.add_argument("--no-kill", action="store_true", help="skip the worker-kill scenario")
    parser.add_argument("--no-approval", action="store_true", help="skip the approval scenario")
    parser.add_argument("--only-approval", action="store_true",
                        help="run the approval scenario alone (no exact, no kill)")
    return parser


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise SystemExit(128 + signum)  # unwinds through the `finally` that stops everything


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="namelookup-scale-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    log(f"run directory (logs, results.json): {run_dir}")
    deployment = Deployment(run_dir, DeploymentOptions())
    results: list[ScenarioResult] = []
    error: str | None = None

    def remaining() -> float:
        return max(30.0, args.budget - (time.monotonic() - STARTED) - 30.0)  # 30 s kept for the clean-up

    try:
        deployment.start(log)
        if not args.only_approval:
            results.append(run_exact(deployment, rows=args.rows, shards=args.shards, seed=args.seed,
                                     timeout=remaining(), log=log))
            _report(results[-1])
        if not (args.no_kill or args.only_approval):
            results.append(run_kill(deployment, rows=args.rows, shards=args.shards, seed=args.seed + 1,
                                    timeout=remaining(), log=log))
            _report(results[-1])
        if not args.no_approval:
            results.append(run_approval(deployment, rows=args.approval_rows, seed=args.seed + 2,
                                        timeout=remaining(), log=log))
            _report(results[-1])
    except BaseException as exc:  # also KeyboardInterrupt and SystemExit: report, then clean up
        error = f"{type(exc).__name__}: {exc}"
        log(f"aborted: {error}")
    finally:
        left = deployment.stop(log)
        log("stopped everything; pgrep finds nothing left" if not left
            else f"{len(left)} processes had to be killed after stopping")

    failures = [f"[{r.name}] {f}" for r in results for f in r.failures]
    if error:
        failures.insert(0, f"aborted: {error}")
    if left:
        failures.append(f"processes left after stopping: {left}")
    figures = {"rows": args.rows, "shards": args.shards, "total_seconds": round(time.monotonic() - STARTED, 1),
               "scenarios": [r.figures() for r in results], "failures": failures}
    (run_dir / "results.json").write_text(json.dumps(figures, indent=2))
    if failures:
        _print_logs(deployment, results)
        log("FAILED:\n  " + "\n  ".join(failures))
        return 1
    log(f"passed in {figures['total_seconds']:.0f} s; figures in {run_dir / 'results.json'}")
    return 0


def _report(result: ScenarioResult) -> None:
    figures = {k: v for k, v in result.figures().items() if k not in ("run_id", "failures")}
    log(f"[{result.name}] " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    for failure in result.failures:
        log(f"[{result.name}] expectation broken: {failure}")


def _print_logs(deployment: Deployment, results: list[ScenarioResult]) -> None:
    """The tails of the logs that explain a failure: the components, then the failed task tries.

    The emulator's token is masked: the emulator prints it when it starts (its log's first lines,
    the whole tail of a quiet emulator), for a person to paste into a connection.
    """
    def masked(text: str) -> str:
        return text.replace(deployment.token, "***")

    for name in ("scheduler", *deployment.workers, "api-server", "dag-processor", "emulator", "db-migrate"):
        tail = deployment.processes.tail(name, 25)
        if tail:
            print(f"----- {deployment.log_dir / (name + '.log')} (last 25 lines) -----\n{masked(tail)}", flush=True)
    for result in results:
        for attempt in [t for t in result.tries if t.state not in ("success", None)][:4]:
            path = deployment.task_log(result.run_id, attempt, dag_id=result.dag_id)
            if path.exists():
                lines = path.read_text(errors="replace").splitlines()[-8:]
                print(f"----- {path} (last 8 lines) -----\n" + masked("\n".join(lines)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
