"""The processes of a deployment: each in its own session, each with its own log file.

Every process is started with ``start_new_session=True``, so it leads a session of its
own that holds everything it forks: Celery's pool processes, the task supervisors and
task processes (which Airflow moves into process groups of their own, but not out of
the session), the api-server's workers. Stopping a process signals its process group
(SIGTERM), then SIGKILLs whatever of its session is left after a grace period; killing
one SIGKILLs its whole session at once. :meth:`Processes.leftovers` asks ``pgrep -s``
whether anything of any session survived.

Example::

    with Processes(Path("/tmp/logs"), env) as procs:
        procs.start("scheduler", ["airflow", "scheduler"])
        procs.kill("scheduler")                 # SIGKILL to its whole session
    # leaving the block stops everything; procs.leftovers() == [] afterwards
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self


@dataclass
class Started:
    """One process started by :class:`Processes`; its pid is also its process group and session id."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log: IO[Any]

    @property
    def pid(self) -> int:
        return self.popen.pid


class Processes:
    """Start named processes in their own sessions and stop all of them, whatever happens.

    :param log_dir: where ``<name>.log`` (stdout and stderr together) goes.
    :param env: the environment of every process.
    """

    def __init__(self, log_dir: Path, env: Mapping[str, str]) -> None:
        self.log_dir = log_dir
        self.env = dict(env)
        self.started: dict[str, Started] = {}
        self.sessions: list[int] = []

    def start(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> Started:
        """Start ``argv`` as ``name`` (a name used once), logging to ``<log_dir>/<name>.log``."""
        if name in self.started:
            raise ValueError(f"a process named {name!r} was started already")
        log_path = self.log_dir / f"{name}.log"
        log = log_path.open("ab")
        try:
            popen = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env={**self.env, **(env or {})}, cwd=cwd, start_new_session=True)
        except BaseException:
            log.close()
            raise
        self.sessions.append(popen.pid)
        started = self.started[name] = Started(name, popen, log_path, log)
        return started

    def alive(self, name: str) -> bool:
        return self.started[name].popen.poll() is None

    def check_alive(self) -> None:
        """Raise if a process that was not stopped on purpose has exited."""
        dead = {name: p.popen.returncode for name, p in self.started.items() if p.popen.poll() is not None}
        if dead:
            raise RuntimeError("exited unexpectedly: " + ", ".join(f"{name} (code {code})"
                                                                  for name, code in dead.items()))

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` and everything in its session, as a machine losing power would.

        The session, not only the process group: Airflow's task supervisor puts each task
        process in a process group of its own, which a ``killpg`` of the worker would miss
        (the task would run on, unsupervised, while the scheduler retries it elsewhere).
        """
        started = self.started.pop(name)
        _signal_group(started.pid, signal.SIGKILL)
        _kill_session(started.pid)
        started.popen.wait()
        started.log.close()

    def stop(self, name: str, grace: float = 15.0) -> None:
        """SIGTERM ``name``'s process group; SIGKILL it when it is still there after ``grace`` seconds."""
        started = self.started.pop(name)
        _signal_group(started.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (started.popen.poll() is None or group_alive(started.pid)):
            time.sleep(0.2)
        _signal_group(started.pid, signal.SIGKILL)
        _kill_session(started.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.popen.wait(timeout=5)
        started.log.close()

    def stop_all(self, grace: float = 15.0) -> None:
        """Stop every process still running, the last started first (workers before the api-server)."""
        for name in reversed(list(self.started)):
            self.stop(name, grace)

    def leftovers(self) -> list[str]:
        """``pid command`` of every process still alive in a session this object started (``pgrep -s``)."""
        return _session_members(self.sessions)

    def tail(self, name: str, lines: int = 40) -> str:
        """The last ``lines`` lines of ``name``'s log."""
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()


def _session_members(sessions: Sequence[int]) -> list[str]:
    """``pid command`` of every live process in these sessions (``pgrep -s``)."""
    if not sessions:
        return []
    found = subprocess.run(["pgrep", "-a", "-s", ",".join(map(str, sessions))], capture_output=True, text=True,
                           check=False)
    return [line for line in found.stdout.splitlines() if line.strip()]


def _kill_session(sid: int, rounds: int = 10) -> None:
    """SIGKILL every process of session ``sid``, again while any is left (one may fork meanwhile)."""
    for _ in range(rounds):
        members = _session_members([sid])
        if not members:
            return
        for line in members:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        time.sleep(0.1)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (reap the leader first: a zombie counts)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
