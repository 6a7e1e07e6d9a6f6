"""Starting the emulator: the CLI, ``python -m``, EmulatorProcess and EmulatorServer."""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from namelookup_emulator import EmulatorConfig, EmulatorProcess, EmulatorServer
from namelookup_emulator.server import LISTENING
from tests.emulator.wire import bearer

CONSOLE_SCRIPT = Path(sys.executable).with_name("namelookup-emulator")


def _port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) == 0


@pytest.fixture
def child() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes started by a test, terminated at its end whatever happens."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout:
            process.stdout.close()


def _start(child: list[subprocess.Popen[str]], command: list[str], log: Path) -> str:
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    child.append(process)
    assert process.stdout is not None
    line = process.stdout.readline()
    match = LISTENING.match(line)
    assert match, f"unexpected first line {line!r}; log: {log.read_text()}"
    return match["url"]


@pytest.mark.parametrize("launcher", ["console-script", "python -m"])
def test_the_cli_serves_on_a_free_port_and_logs_without_tokens(
        launcher: str, child: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    if launcher == "console-script":
        if not CONSOLE_SCRIPT.exists() and not shutil.which("namelookup-emulator"):
            pytest.skip("the package is not installed (pip install -e .)")
        command = [str(CONSOLE_SCRIPT if CONSOLE_SCRIPT.exists() else shutil.which("namelookup-emulator"))]
    else:
        command = [sys.executable, "-m", "namelookup_emulator"]
    token = "cli-seed-token-0123456789"
    log = tmp_path / "emulator.log"
    url = _start(child, [*command, "--host", "127.0.0.1", "--port", "0", "--seed-token", token,
                         "--seed-credits", "7", "--log-level", "info"], log)
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/v2/statistic", headers=bearer(token)).json()["remaining_credits"] == 7
        assert client.post("/v2/gender", params={"key": token}, json={"first_name": "Anna"}).status_code == 200
        assert client.post("/v2/gender", json={"first_name": "Anna"}).status_code == 400
    child[0].terminate()
    child[0].wait(10)
    text = log.read_text()
    assert token not in text
    requests = [line for line in text.splitlines() if " /v2/" in line]
    assert len(requests) == 3, text
    assert "/v2/gender 200" in text and "key=" not in text


def test_the_cli_keeps_accounts_in_a_database_file(child: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    database = tmp_path / "emulator.db"
    command = [sys.executable, "-m", "namelookup_emulator", "--port", "0", "--db", str(database),
               "--seed-token", "persistent-token", "--seed-credits", "5", "--log-level", "warning"]
    url = _start(child, command, tmp_path / "first.log")
    httpx.post(f"{url}/v2/gender", json=[{"first_name": "Anna"}] * 2, headers=bearer("persistent-token"))
    child[0].terminate()
    child[0].wait(10)
    url = _start(child, command, tmp_path / "second.log")
    statistic = httpx.get(f"{url}/v2/statistic", headers=bearer("persistent-token")).json()
    assert statistic["remaining_credits"] == 3


def test_the_cli_refuses_bad_fault_settings(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "namelookup_emulator", "--port", "0",
                             "--faults", '{"error_500": 2}'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "invalid --faults" in result.stderr


def test_emulator_process_runs_apart_and_stops_cleanly() -> None:
    with EmulatorProcess(seed_token="process-token", seed_credits=10) as process:
        assert process.pid and LISTENING.match(f"namelookup-emulator listening on {process.url}\n")
        token = process.create_account(credits=3)
        with httpx.Client(base_url=process.url, timeout=10) as client:
            assert client.post("/v2/gender", json={"first_name": "Anna"}, headers=bearer(token)).status_code == 200
            assert client.get("/v2/statistic", headers=bearer("process-token")).json()["remaining_credits"] == 10
        assert process.top_up(token, 5) == 7
        assert process.set_faults(error_503=1)["error_503"] == 1
        assert httpx.get(f"{process.url}/v2/statistic", headers=bearer(token)).status_code == 503
        assert process.stats()["faults"]["error_503"] == 1
        url = process.url
    assert not _port_open(url)
    assert process.pid is None


def test_emulator_process_reports_a_child_that_cannot_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="printed no URL"):
            EmulatorProcess(port=port, stderr=subprocess.DEVNULL).start()


def test_emulator_server_starts_and_stops_without_leaks() -> None:
    threads_before = set(threading.enumerate())
    server = EmulatorServer(EmulatorConfig(max_queries=2))
    with server:
        token = server.state.create_account(credits=5)
        with httpx.Client(base_url=server.url, headers=bearer(token)) as client:
            assert client.post("/v2/gender", json=[{"first_name": "Anna"}] * 2).status_code == 200
            assert client.post("/v2/gender", json=[{"first_name": "Anna"}] * 3).json()["title"] == "too-many-queries"
        assert server.running
        url = server.url
    assert not server.running and not _port_open(url)
    assert set(threading.enumerate()) <= threads_before
    with pytest.raises(RuntimeError):
        server.start()


def test_refuses_to_listen_beyond_loopback_without_an_admin_token(capsys: pytest.CaptureFixture[str]) -> None:
    from namelookup_emulator.cli import main

    assert main(["--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to listen on 0.0.0.0 without an admin token" in capsys.readouterr().err
    with pytest.raises(ValueError, match="admin token"):
        EmulatorServer(host="0.0.0.0")


def test_an_admin_token_is_required_on_every_admin_call() -> None:
    config = EmulatorConfig(admin_token="admin-secret-for-tests")
    with EmulatorServer(config, host="0.0.0.0") as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        for method, path in [("POST", "accounts"), ("POST", "accounts/credits"), ("POST", "accounts/usage"),
                             ("GET", "faults"), ("PUT", "faults"), ("DELETE", "faults"), ("GET", "stats"),
                             ("GET", "outbox"), ("GET", "signup-limit"), ("PUT", "clock"), ("GET", "clock")]:
            for headers in ({}, {"X-Emulator-Admin-Token": "wrong"}):
                response = httpx.request(method, f"{url}/emulator/{path}", json={}, headers=headers)
                assert response.status_code == 401, (method, path, response.text)
                assert response.json()["title"] == "invalid-auth-token"
        for path in ("health", "docs", "upgrade"):  # nothing to protect
            assert httpx.get(f"{url}/emulator/{path}").status_code == 200
        token = server.create_account(credits=3)  # AdminClient sends the admin token
        assert httpx.get(f"{url}/emulator/stats", headers={"X-Emulator-Admin-Token": config.admin_token}
                         ).status_code == 200
        statistic = httpx.get(f"{url}/v2/statistic", headers=bearer(token)).json()
        assert statistic["remaining_credits"] == 3


def _welcome(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The token and the connection JSON the CLI prints after its URL, read as a user reads them."""
    assert process.stdout is not None
    token_line, heading, export = (process.stdout.readline() for _ in range(3))
    assert token_line.startswith("API token: ") and heading.strip() == "Airflow connection for it:", token_line
    name, _, value = shlex.split(export)[1].partition("=")
    assert shlex.split(export)[0] == "export" and name == "AIRFLOW_CONN_NAMELOOKUP_DEFAULT", export
    return token_line.split()[2], value


@pytest.mark.parametrize("seed", ["none", "flag", "environment"])
def test_the_cli_prints_a_token_and_the_connection_to_paste(
        seed: str, child: list[subprocess.Popen[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25 item 8: a new user gets a working token and the Airflow connection at start; pasted into
    the environment, the connection looks names up through the provider's hook."""
    if not CONSOLE_SCRIPT.exists():
        pytest.skip("the console script is not installed (make install)")
    chosen = "my-own-emulator-token-42"
    command = [str(CONSOLE_SCRIPT), "--port", "0", "--seed-credits", "50"]
    monkeypatch.delenv("NAMELOOKUP_EMULATOR_SEED_TOKEN", raising=False)
    if seed == "flag":
        command += ["--seed-token", chosen]
    elif seed == "environment":
        monkeypatch.setenv("NAMELOOKUP_EMULATOR_SEED_TOKEN", chosen)
    url = _start(child, command, tmp_path / "emulator.log")
    token, connection = _welcome(child[0])
    assert json.loads(connection) == {"conn_type": "namelookup", "host": url, "password": token}
    if seed == "none":
        assert len(token) >= 32 and token != chosen
    else:
        assert token == chosen
    monkeypatch.setenv("AIRFLOW_CONN_NAMELOOKUP_DEFAULT", connection)
    with NameLookupHook() as hook:
        assert hook.gender(first_name="Theresa", country="DE")["gender"] == "female"
        assert hook.get_statistic()["remaining_credits"] == 49


def test_a_restarted_cli_prints_the_credits_its_seed_account_has_left(
        child: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    command = [sys.executable, "-m", "namelookup_emulator", "--port", "0", "--db",
               str(tmp_path / "emulator.db"), "--seed-token", "kept-emulator-token-0001", "--seed-credits", "5"]
    url = _start(child, command, tmp_path / "first.log")
    _welcome(child[0])
    httpx.post(f"{url}/v2/gender", json={"first_name": "Anna"}, headers=bearer("kept-emulator-token-0001"))
    child[0].terminate()
    child[0].wait(10)
    _start(child, command, tmp_path / "second.log")
    assert child[1].stdout is not None
    assert child[1].stdout.readline().startswith("API token: kept-emulator-token-0001 (an account with 4 credits)")
