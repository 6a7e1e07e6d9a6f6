"""``python -m airflow_provider_namelookup.smoke`` (issue 50, item 7): the check a user runs first with a
real token, run here as a user would (a subprocess, the connection from the environment) against the
emulator over loopback; and a service that answers differently makes it fail, naming the field."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.smoke import SMOKE_CREDITS, gender_problems, origin_problems

ROOT = Path(__file__).resolve().parent.parent


def smoke(url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIRFLOW_CONN_NAMELOOKUP_SMOKE": json.dumps(
        {"conn_type": "namelookup", "host": url, "password": token, "extra": {"backoff_base": 0.01}}),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "namelookup-emulator"),
                                       os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "airflow_provider_namelookup.smoke", "--conn-id", "namelookup_smoke",
                           *args], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)


def test_the_smoke_test_passes_against_the_emulator_spending_what_it_says(emulator: Any,
                                                                          make_account: Any) -> None:
    token = make_account(credits=100)
    done = smoke(emulator.url, token)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Name Lookup smoke test of connection 'namelookup_smoke' ({emulator.url}): at most 10 credits"
    checks = [line for line in lines if line.startswith(("ok", "FAIL"))]
    assert len(checks) == 12 and all(line.startswith("ok") for line in checks), done.stdout
    for kind in ("first name 'Anna'", "with country='IT'", "with locale='en_US'", "with ip=", "full name",
                 "e-mail", "array request", "country of origin", "invalid country 'XX'", "wrong token"):
        assert any(kind in line for line in checks), kind
    assert f"Spent {SMOKE_CREDITS} credits (details.credits_used of the answers); the statistic agrees: 100 -> 90." \
        in lines
    assert emulator.state.remaining_credits(token) == 100 - SMOKE_CREDITS == 90  # the two mistakes were free
    assert token not in done.stdout + done.stderr


@pytest.mark.usefixtures("airflow_db")
def test_too_few_credits_or_a_wrong_token_stop_it_before_it_spends(emulator: Any, make_account: Any) -> None:
    """The connection is read from the metadata database too, where the UI keeps it (outside a task,
    Airflow 3's Task SDK reads only the environment and secrets backends)."""
    token = make_account(credits=9)
    subprocess.run([sys.executable, "-m", "airflow", "connections", "add", "namelookup_in_db", "--conn-type",
                    "namelookup", "--conn-host", emulator.url, "--conn-password", token], check=True,
                   capture_output=True, env=os.environ.copy())
    done = smoke(emulator.url, "unused", "--conn-id", "namelookup_in_db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "smoke test of connection 'namelookup_in_db'" in done.stdout
    assert "Could not start: the lookups cost 10 credits and the account has 9; nothing was spent" in done.stdout
    assert emulator.state.remaining_credits(token) == 9
    done = smoke(emulator.url, "not-a-token-of-any-account-123456")
    assert done.returncode == 2 and "Could not start: invalid-auth-token" in done.stdout
    assert "not-a-token-of-any-account-123456" not in done.stdout + done.stderr


class Rewriting:
    """A loopback HTTP proxy in front of the emulator that changes each JSON answer of one path."""

    def __init__(self, target: str, path: str, change: Callable[[Any], Any]) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                answer = httpx.request(self.command, target + self.path, content=body, headers=headers)
                content = answer.content
                if self.path == path and answer.status_code == 200:
                    content = json.dumps(change(answer.json())).encode()
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        del proxy

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def rewriting(emulator: Any) -> Iterator[Callable[[str, Callable[[Any], Any]], Rewriting]]:
    proxies: list[Rewriting] = []

    def make(path: str, change: Callable[[Any], Any]) -> Rewriting:
        proxies.append(Rewriting(emulator.url, path, change))
        return proxies[-1]

    yield make
    for proxy in proxies:
        proxy.close()


def _origin_priced_at_one(answer: Any) -> Any:
    answer["details"]["credits_used"] = 1
    return answer


def _probability_as_text(answer: Any) -> Any:
    for result in answer if isinstance(answer, list) else [answer]:
        result["probability"] = str(result["probability"])
    return answer


def test_a_service_that_answers_otherwise_fails_it_naming_the_field(emulator: Any, make_account: Any,
                                                                   rewriting: Any) -> None:
    token = make_account(credits=100)
    proxy = rewriting("/v2/country-of-origin", _origin_priced_at_one)
    done = smoke(proxy.url, token)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("FAIL country of origin, first name 'Giulia' [2 credits]\n"
            "       details.credits_used is 1 (int), not 2 (the price the budgets count)") in done.stdout
    assert done.stdout.count("FAIL") == 1 and "12 checks, 1 failed" in done.stdout

    proxy = rewriting("/v2/gender", _probability_as_text)
    done = smoke(proxy.url, token)
    assert done.returncode == 1
    assert done.stdout.count("FAIL") == 7  # every gender lookup, the array's too
    assert "probability is '1.0' (str), not a number from 0 to 1" in done.stdout


def test_the_checks_name_each_field_the_provider_reads() -> None:
    origin = {"gender": "female", "probability": 0.9, "result_found": True, "first_name": "Giulia",
              "details": {"credits_used": 2, "samples": 10, "country": None},
              "country_of_origin": [{"country": "Italy", "probability": 0.8}], "language_of_origin": 7,
              "ethnicity": {"id": "ITALIAN", "distribution": [{"percentage": 140}]}, "meaning": None}
    assert origin_problems(origin) == [
        "country_of_origin[0].country is not a two-letter code", "language_of_origin is 7 (int), not text or null",
        "ethnicity.distribution is not a list of records with a percentage from 0 to 100"]
    assert gender_problems({"gender": "female", "probability": True, "result_found": 1, "last_name": 3,
                            "details": {"credits_used": 1, "samples": 4, "country": "DEU"}}) == [
        "probability is True (bool), not a number from 0 to 1", "result_found is 1 (int), not true or false",
        "last_name is 3 (int), not text or null", "details.country is 'DEU' (str), not a two-letter code or null"]
    assert gender_problems([]) == ["the answer is [] (list), not an object"]
