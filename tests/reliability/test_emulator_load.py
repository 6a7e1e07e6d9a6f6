"""Many clients spending one account at once: the emulator never overdraws, never loses
a credit and never answers 5xx (separate process, SQLite file, real concurrency)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from namelookup_emulator.server import EmulatorProcess

CLIENTS = 12
REQUESTS_PER_CLIENT = 60
CREDITS = 2_500  # the clients ask for about 3,500


def spend(url: str, token: str, seed: int) -> list[tuple[int, int]]:
    """(status, credits charged) for each request of one client."""
    rng = random.Random(seed)
    outcomes: list[tuple[int, int]] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for _ in range(REQUESTS_PER_CLIENT):
            kind = rng.random()
            if kind < 0.4:
                response = client.post("/v2/gender", json=[{"first_name": f"N{rng.randint(0, 999)}"}] * 10)
                charged = 10
            elif kind < 0.8:
                response = client.post("/v2/gender", json={"first_name": "Anna"})
                charged = 1
            else:
                response = client.post("/v2/country-of-origin", json={"first_name": "Giulia"})
                charged = 2
            if response.status_code == 200:
                body = response.json()
                reported = sum(r["details"]["credits_used"] for r in body) if isinstance(body, list) \
                    else body["details"]["credits_used"]
                assert reported == charged
            else:
                assert response.json()["title"] == "limit-exceeded", response.text
            outcomes.append((response.status_code, charged if response.status_code == 200 else 0))
    return outcomes


def test_parallel_clients_spend_one_account_exactly(tmp_path: Path) -> None:
    token = "load-test-token-0123456789"
    with EmulatorProcess(["--db", str(tmp_path / "emulator.db")], seed_token=token, seed_credits=CREDITS) as emu:
        with ThreadPoolExecutor(CLIENTS) as pool:
            results = [o for outcomes in pool.map(lambda s: spend(emu.url, token, s), range(CLIENTS))
                       for o in outcomes]
        with httpx.Client(base_url=emu.url, headers={"Authorization": f"Bearer {token}"}) as client:
            remaining = client.get("/v2/statistic").json()["remaining_credits"]
        stats = emu.stats()
    statuses = {status for status, _ in results}
    spent = sum(charged for _, charged in results)
    assert statuses <= {200, 401} and 401 in statuses  # demand exceeds the credits, and no 5xx
    assert spent + remaining == CREDITS and 0 <= remaining < 10
    assert stats["credits_charged"] == spent
    assert not any(code.startswith("5") for code in stats["responses_by_status"])
