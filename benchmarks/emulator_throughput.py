"""Benchmark 3: how fast the emulator itself answers, over real HTTP from an async client.

For each request shape (one name per request; an array of 100 names) and each
concurrency level, ``concurrency`` workers post ``/v2/gender`` back to back for
``duration`` seconds (after a short warm-up that opens the connections). Each worker
has its own ``httpx.AsyncClient`` with one keep-alive connection: a shared pool costs
the client more CPU per request the more requests are in flight (encode/httpx#3215),
which would measure the client, not the emulator. Bodies are encoded beforehand so the
client does as little as possible per request. Reported: requests/s, names/s, latency percentiles, the client's
and the emulator's CPU use, and names/s relative to the baseline (one name per
request, one at a time).

The client and the emulator share the same 2 cores: at high concurrency the client's
own CPU use limits what can be measured (see the CPU columns).

Example::

    section = run(EmulatorOptions(duration=1.0, concurrency=(1, 8)), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.figures import Section, cores, count, millis, percent, rate, ratio
from benchmarks.hook_throughput import distinct_names
from benchmarks.service import BenchService

ARRAY_SIZE = 100
WARM_UP_SECONDS = 0.3


@dataclass(frozen=True)
class EmulatorOptions:
    """What to run.

    :param duration: seconds measured per point.
    :param concurrency: requests in flight at once.
    """

    duration: float = 3.0
    concurrency: tuple[int, ...] = (1, 8, 32)


@dataclass(frozen=True)
class Point:
    """One shape at one concurrency level."""

    shape: str
    names_per_request: int
    concurrency: int
    seconds: float
    requests: int
    failures: int
    latencies: list[float]
    client_cpu: float
    emulator_cpu: float
    other_cores: float
    emulator_requests: int
    credits: int

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds

    @property
    def names_per_second(self) -> float:
        return self.requests * self.names_per_request / self.seconds


def bodies(names: list[str], per_request: int) -> list[bytes]:
    """JSON bodies: one name as an object, or arrays of ``per_request`` names."""
    if per_request == 1:
        return [json.dumps({"first_name": name}).encode() for name in names]
    return [json.dumps([{"first_name": name} for name in names[i:i + per_request]]).encode()
            for i in range(0, len(names) - per_request + 1, per_request)]


async def _load(clients: list[httpx.AsyncClient], payloads: list[bytes],
                seconds: float) -> tuple[int, int, list[float]]:
    """Post back to back, one worker per client, for ``seconds``: (answered, failed, latencies)."""
    cycle = itertools.cycle(payloads)
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []
    failures = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal failures
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            response = await client.post("/v2/gender", content=next(cycle))
            if response.status_code == 200:
                latencies.append(time.perf_counter() - started)
            else:
                failures += 1

    await asyncio.gather(*(worker(client) for client in clients))
    return len(latencies), failures, latencies


async def _measure(service: BenchService, shape: str, payloads: list[bytes], per_request: int, concurrency: int,
                   duration: float) -> Point:
    headers = {**service.auth, "Content-Type": "application/json"}
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(
            httpx.AsyncClient(base_url=service.url, headers=headers, limits=one, timeout=30))
            for _ in range(concurrency)]
        await _load(clients, payloads, WARM_UP_SECONDS)
        with service.meter() as meter:
            answered, failures, latencies = await _load(clients, payloads, duration)
    used = meter.usage
    assert used is not None
    return Point(shape, per_request, concurrency, used.seconds, answered, failures, latencies,
                 used.client_cpu_seconds, used.cpu_seconds, used.other_cores(), used.requests, used.credits)


def run(options: EmulatorOptions, workdir: Path) -> Section:
    names = distinct_names(10_000)
    shapes = [("one name per request", 1), (f"array of {ARRAY_SIZE} names", ARRAY_SIZE)]
    points: list[Point] = []
    with BenchService(workdir / "emulator-throughput.log") as service:
        for shape, per_request in shapes:
            payloads = bodies(names, per_request)
            for level in options.concurrency:
                points.append(asyncio.run(_measure(service, shape, payloads, per_request, level,
                                                   options.duration)))
    return report(options, points)


def _percentile(values: list[float], share: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def report(options: EmulatorOptions, points: list[Point]) -> Section:
    section = Section("emulator", "Emulator throughput: POST /v2/gender over loopback")
    table = section.table(["request", "concurrency", "requests/s", "names/s", "p50 latency", "p95 latency",
                           "client CPU", "emulator CPU", "other load", "names/s vs one name, one at a time"])
    baseline = points[0].names_per_second
    for p in points:
        table.add(p.shape, str(p.concurrency), rate(p.requests_per_second), rate(p.names_per_second),
                  millis(_percentile(p.latencies, 0.5)), millis(_percentile(p.latencies, 0.95)),
                  percent(p.client_cpu / p.seconds), percent(p.emulator_cpu / p.seconds), cores(p.other_cores),
                  ratio(p.names_per_second / baseline))
    failures = sum(p.failures for p in points)
    mismatched = [p for p in points if p.emulator_requests != p.requests + p.failures]
    section.notes.append(f"{options.duration:g} s measured per row after a {WARM_UP_SECONDS:g} s warm-up; "
                         f"{count(failures)} requests failed; credits charged: "
                         f"{count(sum(p.credits for p in points))}.")
    if mismatched:
        section.notes.append("The emulator and the client counted different numbers of requests for: "
                             + ", ".join(f"{p.shape} x{p.concurrency}" for p in mismatched))
    section.notes.append("Client / emulator CPU: CPU time of this process / of the emulator process divided by "
                         "the wall time (100% = one core busy throughout). Other load: cores kept busy by other "
                         "processes on the machine meanwhile.")
    section.data = {"options": vars(options),
                    "points": [{**{k: v for k, v in vars(p).items() if k != "latencies"},
                                "requests_per_second": p.requests_per_second,
                                "names_per_second": p.names_per_second,
                                "p50_seconds": _percentile(p.latencies, 0.5),
                                "p95_seconds": _percentile(p.latencies, 0.95)} for p in points]}
    return section
