"""A local emulator of the Name Lookup Service API v2, for tests, demos and benchmarks.

A real HTTP server (Starlette, served by uvicorn) that answers in the real service's
wire format from real first-name data (gender-guesser's ``nam_dict.txt``, read at run
time), with accounts, credits, sign-up and activation in SQLite, and fault injection
for reliability tests. Its ``/emulator/...`` admin endpoints are open to local programs
on loopback but not to web pages (``Host``, ``Origin`` and JSON checks); it listens on
another address only with an admin token, which every admin call must then send
(:mod:`.admin_access`). Its links name its listening address or a configured public URL
(:mod:`.links`), and slow clients are cut off (:mod:`.read_timeouts`). The endpoint
reference is :mod:`.app`'s docstring, also served at ``GET /emulator/docs``.

Example::

    from namelookup_emulator import EmulatorServer

    with EmulatorServer() as server:
        token = server.create_account(credits=1000)
        httpx.post(f"{server.url}/v2/gender", json=[{"first_name": "Andrea", "country": "IT"}],
                   headers={"Authorization": f"Bearer {token}"}).json()[0]["gender"]  # 'male'

From a shell: ``namelookup-emulator --port 0`` (or ``python -m
namelookup_emulator``) prints ``namelookup-emulator listening on URL``.
"""

from namelookup_emulator.app import create_app
from namelookup_emulator.faults import FaultConfig, FaultInjector, Stats
from namelookup_emulator.geoip import COUNTRY_NETWORKS, country_for_ip, ip_for_country
from namelookup_emulator.names import NameData, load_names
from namelookup_emulator.server import EmulatorProcess, EmulatorServer
from namelookup_emulator.state import EmulatorConfig, EmulatorState

__all__ = [
    "COUNTRY_NETWORKS",
    "EmulatorConfig",
    "EmulatorProcess",
    "EmulatorServer",
    "EmulatorState",
    "FaultConfig",
    "FaultInjector",
    "NameData",
    "Stats",
    "country_for_ip",
    "create_app",
    "ip_for_country",
    "load_names",
]
