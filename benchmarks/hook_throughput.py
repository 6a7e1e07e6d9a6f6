"""Benchmark 2: names per second through the hooks' ``gender_batch``.

The same list of distinct first names (real names from the emulator's data, so each
is a real lookup) goes through the sync ``NameLookupHook.gender_batch`` (the baseline:
arrays of 100 sent one after the other) and through
``NameLookupAsyncHook.gender_batch`` at each ``max_concurrency`` level (arrays of 100,
that many in flight). Each configuration runs ``repeats`` times in this process against
one emulator process; the best run is reported, with the client's and the emulator's
CPU time over that run to show which side is saturated.

Example::

    section = run(HookOptions(names=4_000, concurrency=(1, 4, 8), repeats=1), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.figures import Section, cores, count, percent, rate, ratio, seconds
from benchmarks.service import BenchService


@dataclass(frozen=True)
class HookOptions:
    """What to run.

    :param names: distinct names per run.
    :param concurrency: the async hook's ``max_concurrency`` levels.
    :param repeats: runs per configuration (the best is reported).
    """

    names: int = 20_000
    concurrency: tuple[int, ...] = (1, 4, 8)
    repeats: int = 3


@dataclass(frozen=True)
class Result:
    """One configuration's best run."""

    client: str
    seconds: float
    requests: int
    credits: int
    client_cpu: float
    emulator_cpu: float
    other_cores: float


def distinct_names(how_many: int) -> list[str]:
    """``how_many`` distinct first names spread over the emulator's name data."""
    from namelookup_emulator.names import load_names

    names = sorted({entry.name for entry in load_names().entries() if 1 <= len(entry.name) <= 50})
    if how_many > len(names):
        raise ValueError(f"only {len(names)} distinct names in the data")
    step = len(names) / how_many
    return [names[int(i * step)] for i in range(how_many)]


def _sync_batch(url: str, token: str, names: list[str]) -> int:
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with NameLookupHook.for_url(url, token) as hook:
        results = hook.gender_batch(names)
        requests = hook.counters.requests
    if len(results) != len(names):
        raise RuntimeError("the sync hook lost answers")
    return requests


def _async_batch(url: str, token: str, names: list[str], concurrency: int) -> int:
    from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook

    async def go() -> int:
        async with NameLookupAsyncHook.for_url(url, token, max_concurrency=concurrency) as hook:
            results = await hook.gender_batch(names)
            if len(results) != len(names):
                raise RuntimeError("the async hook lost answers")
            return int(hook.counters.requests)

    return asyncio.run(go())


def _best(service: BenchService, label: str, call: Callable[[], int], repeats: int) -> Result:
    best: Result | None = None
    for _ in range(repeats):
        with service.meter() as meter:
            requests = call()
        used = meter.usage
        assert used is not None
        if used.requests != requests:
            raise RuntimeError(f"{label}: the hook counted {requests} requests, the emulator {used.requests}")
        result = Result(label, used.seconds, requests, used.credits, used.client_cpu_seconds, used.cpu_seconds,
                        used.other_cores())
        if best is None or result.seconds < best.seconds:
            best = result
    assert best is not None
    return best


def run(options: HookOptions, workdir: Path) -> Section:
    names = distinct_names(options.names)
    with BenchService(workdir / "emulator-hook.log") as service:
        url, token = service.url, service.token
        _sync_batch(url, token, names[:200])  # warm-up: imports, connection, the emulator's first answers
        results = [_best(service, "sync NameLookupHook", lambda: _sync_batch(url, token, names), options.repeats)]
        for level in options.concurrency:
            results.append(_best(service, f"async NameLookupAsyncHook, max_concurrency={level}",
                                 functools.partial(_async_batch, url, token, names, level), options.repeats))
    return report(options, results)


def report(options: HookOptions, results: list[Result]) -> Section:
    section = Section("hook", f"Hook throughput: gender_batch of {count(options.names)} distinct names")
    table = section.table(["hook", "wall time", "names/s", "requests", "credits", "client CPU", "emulator CPU",
                           "other load", "vs sync hook"])
    baseline = options.names / results[0].seconds
    for r in results:
        speed = options.names / r.seconds
        table.add(r.client, seconds(r.seconds), rate(speed), count(r.requests), count(r.credits),
                  percent(r.client_cpu / r.seconds), percent(r.emulator_cpu / r.seconds), cores(r.other_cores),
                  ratio(speed / baseline))
    section.notes.append(f"Best of {options.repeats} runs per hook, all in one process against one emulator "
                         "process; arrays of 100 names per request.")
    section.notes.append("Client / emulator CPU: CPU time of this process / of the emulator process divided by "
                         "the wall time (100% = one core busy throughout). Other load: cores kept busy by other "
                         "processes on the machine meanwhile.")
    section.data = {"options": vars(options), "results": [vars(r) for r in results]}
    return section
