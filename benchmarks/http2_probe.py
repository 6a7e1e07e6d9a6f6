"""Does HTTP/2 help the async hook? The emulator served by hypercorn (HTTP/1.1 and
cleartext HTTP/2), the same requests sent over each, at a network-like latency.

uvicorn, which serves the emulator everywhere else, speaks HTTP/1.1 only; hypercorn
serves the very same app with HTTP/1.1 and HTTP/2 on one port (h2c with prior
knowledge). For each concurrency level, ``requests`` country-of-origin lookups (one
request each, the case where many requests are in flight) are sent by
``httpx.AsyncClient`` over HTTP/1.1 with one pool of as many connections as requests in
flight, over HTTP/1.1 with clients of at most 8 connections (what the async hook does),
and over HTTP/2 (one connection, one stream per request). Reported: wall time,
requests/s, CPU time per request of the client and of the server process.

Not part of ``make bench``: it needs ``pip install hypercorn 'httpx[http2]'``. Run::

    python -m benchmarks.http2_probe --latency-ms 80-120 --requests 2000 --concurrency 8,32,64
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import secrets
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

from benchmarks.service import process_cpu_seconds


def serve(port: int, token: str, latency_ms: list[float]) -> None:
    """The child: the emulator app under hypercorn on ``port`` (HTTP/1.1 and h2c)."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    from namelookup_emulator import EmulatorState, create_app

    state = EmulatorState()
    state.create_account(token=token, credits=100_000_000)
    state.faults.configure(latency_ms=latency_ms)
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.keep_alive_timeout = 30
    config.h2_max_concurrent_streams = 1000
    config.keep_alive_max_requests = 1_000_000_000  # its default (1,000) ends an HTTP/2 connection mid-run
    asyncio.run(hypercorn_serve(create_app(state=state), config))  # type: ignore[arg-type, unused-ignore]  # typed as ASGI by some hypercorn releases only


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PROTOCOLS = {"h1": "HTTP/1.1, one pool", "h1-lanes": "HTTP/1.1, pools of 8", "h2": "HTTP/2 (h2c)"}


async def _load(url: str, token: str, *, requests: int, concurrency: int, protocol: str) -> None:
    http2 = protocol == "h2"
    pools = math.ceil(concurrency / 8) if protocol == "h1-lanes" else 1
    size = math.ceil(concurrency / pools)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    clients = [httpx.AsyncClient(base_url=url, http1=not http2, http2=http2, limits=limits, timeout=60,
                                 headers={"Authorization": f"Bearer {token}"}) for _ in range(pools)]
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            response = await clients[i % pools].post("/v2/country-of-origin", json={"first_name": "Anna"})
            response.raise_for_status()
            if http2 and response.http_version != "HTTP/2":
                raise RuntimeError(f"expected HTTP/2, got {response.http_version}")

    try:
        await asyncio.gather(*(one(i) for i in range(requests)))
    finally:
        for client in clients:
            await client.aclose()


def measure(url: str, token: str, pid: int, *, requests: int, concurrency: int, protocol: str) -> dict[str, Any]:
    server_cpu, client_cpu, started = process_cpu_seconds(pid), time.process_time(), time.perf_counter()
    asyncio.run(_load(url, token, requests=requests, concurrency=concurrency, protocol=protocol))
    wall = time.perf_counter() - started
    return {"protocol": PROTOCOLS[protocol], "concurrency": concurrency, "seconds": wall,
            "requests_per_second": requests / wall,
            "client_cpu_ms_per_request": (time.process_time() - client_cpu) / requests * 1000,
            "server_cpu_ms_per_request": (process_cpu_seconds(pid) - server_cpu) / requests * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http2_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency-ms", default="80-120", help="latency fault, ms or low-high (default 80-120)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per point (default 2000)")
    parser.add_argument("--concurrency", default="8,32,64", help="requests in flight (default 8,32,64)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    low, _, high = args.latency_ms.partition("-")
    latency = [float(low), float(high or low)]
    if args.serve:
        serve(args.serve, os.environ["NAMELOOKUP_PROBE_TOKEN"], latency)
        return 0
    token, port = secrets.token_urlsafe(16), _free_port()
    child = subprocess.Popen([sys.executable, "-m", "benchmarks.http2_probe", "--serve", str(port),
                              "--latency-ms", args.latency_ms], env={**os.environ, "NAMELOOKUP_PROBE_TOKEN": token})
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/emulator/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise RuntimeError("hypercorn did not start") from None
                time.sleep(0.2)
        print(f"latency {args.latency_ms} ms, {args.requests} requests per point, hypercorn server")
        print("| protocol | in flight | wall time | requests/s | client CPU per request | server CPU per request |")
        print("|---|---:|---:|---:|---:|---:|")
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            for protocol in PROTOCOLS:
                r = measure(url, token, child.pid, requests=args.requests, concurrency=concurrency,
                            protocol=protocol)
                print(f"| {r['protocol']} | {concurrency} | {r['seconds']:.2f} s | {r['requests_per_second']:,.0f} "
                      f"| {r['client_cpu_ms_per_request']:.2f} ms | {r['server_cpu_ms_per_request']:.2f} ms |",
                      flush=True)
    finally:
        child.terminate()
        child.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
