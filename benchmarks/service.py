"""The emulator the benchmarks run against: a separate process with one well-funded account.

The emulator runs as its own process (:class:`EmulatorProcess`), so it never shares the
client's GIL; on a 2-core machine it still shares the two cores with the client.
:meth:`BenchService.meter` reads the counters a benchmark compares before and after a
run without disturbing them: ``/v2/...`` requests served (``/emulator/stats``), the
account's credits left (the admin endpoint, which is not a ``/v2`` request), the
emulator process's CPU time (``/proc/<pid>/stat``) and the whole machine's busy CPU
time (``/proc/stat``), so that other people's work on a shared machine shows up.

Example::

    with BenchService(log_path=Path("emulator.log")) as service:
        with service.meter() as meter:
            httpx.post(f"{service.url}/v2/gender", json={"first_name": "Anna"}, headers=service.auth)
        used = meter.usage
        used.requests, used.credits, used.seconds, used.cpu_seconds, used.other_cores()
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self

from namelookup_emulator.server import EmulatorProcess

SEED_CREDITS = 50_000_000
"""Credits of the benchmark account: far more than any run spends."""


def system_busy_seconds() -> float:
    """CPU time the whole machine spent busy (all cores, any process), from ``/proc/stat``.

    Includes ``steal`` (time the hypervisor gave to someone else): it is not ours either.
    """
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """What happened during one metered window.

    :param seconds: the window's wall time.
    :param cpu_seconds: CPU time of the emulator process.
    :param busy_seconds: CPU time of the whole machine (see :func:`system_busy_seconds`).
    :param client_cpu_seconds: CPU time of this process (a client running in a child
        process reports its own).
    """

    requests: int
    credits: int
    seconds: float
    cpu_seconds: float
    busy_seconds: float
    client_cpu_seconds: float

    def other_cores(self, client_cpu: float | None = None) -> float:
        """Cores busy with neither the client nor the emulator, on average: other people's work.

        :param client_cpu: the client's CPU time, when the client is another process.
        """
        client = self.client_cpu_seconds if client_cpu is None else client_cpu
        mine = self.cpu_seconds + client
        return max(0.0, self.busy_seconds - mine) / self.seconds if self.seconds > 0 else 0.0


class Meter:
    """Counters around one measured window; :attr:`usage` is set when the window closes.

    The emulator's request and credit counters are read over HTTP outside the window;
    wall time and CPU times (cheap ``/proc`` reads) exactly at its edges.
    """

    def __init__(self, service: BenchService) -> None:
        self.service = service
        self.usage: Usage | None = None

    def __enter__(self) -> Meter:
        self._requests, self._credits = self.service.counters()
        self._cpu, self._busy = self.service.cpu_seconds(), system_busy_seconds()
        self._client = time.process_time()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        seconds = time.perf_counter() - self._started
        client = time.process_time() - self._client
        cpu, busy = self.service.cpu_seconds() - self._cpu, system_busy_seconds() - self._busy
        requests, credits_left = self.service.counters()
        self.usage = Usage(requests=requests - self._requests, credits=self._credits - credits_left,
                           seconds=seconds, cpu_seconds=cpu, busy_seconds=busy, client_cpu_seconds=client)


class BenchService:
    """An :class:`EmulatorProcess` with one activated account of :data:`SEED_CREDITS` credits.

    :param log_path: where the emulator's log goes (warnings and errors only).
    :param credits: the account's credits.
    """

    def __init__(self, log_path: Path, *, credits: int = SEED_CREDITS) -> None:
        self.log_path = log_path
        self.credits = credits
        self.token = secrets.token_urlsafe(24)
        self._log: IO[Any] | None = None
        self._process: EmulatorProcess | None = None

    @property
    def process(self) -> EmulatorProcess:
        if self._process is None:
            raise RuntimeError("the emulator is not running")
        return self._process

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def start(self) -> Self:
        self._log = self.log_path.open("a")
        try:
            self._process = EmulatorProcess(seed_token=self.token, seed_credits=self.credits, stderr=self._log)
            self._process.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.stop()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def counters(self) -> tuple[int, int]:
        """``/v2`` requests served so far and the account's credits left."""
        return int(self.process.stats()["requests"]), self.process.top_up(self.token, 0)

    def cpu_seconds(self) -> float:
        """CPU time of the emulator process so far."""
        assert self.process.pid is not None
        return process_cpu_seconds(self.process.pid)

    def meter(self) -> Meter:
        """A context manager measuring one window (see :class:`Meter`)."""
        return Meter(self)

    def connection_env(self, conn_id: str = "namelookup_default") -> dict[str, str]:
        """The ``AIRFLOW_CONN_*`` variable of a ``namelookup`` connection to this emulator."""
        return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(
            {"conn_type": "namelookup", "host": self.url, "password": self.token})}
