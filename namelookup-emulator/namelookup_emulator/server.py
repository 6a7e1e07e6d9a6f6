"""Run the emulator on a free loopback port: in a thread, or as a separate process.

* :class:`EmulatorServer` runs uvicorn in a background thread of this process; tests
  reach its :attr:`~EmulatorServer.state` directly.
* :class:`EmulatorProcess` runs the ``namelookup-emulator`` CLI as a child process (for
  crash tests, benchmarks and demos, where the emulator must not share the client's GIL)
  and reads the URL it prints.

Both are context managers with ``start()``/``stop()``, a ``url`` and the same small
admin helpers over HTTP (:class:`AdminClient`).

Example::

    with EmulatorServer() as server:
        token = server.create_account(credits=10)
        answer = httpx.post(f"{server.url}/v2/gender", json={"first_name": "Theresa"},
                            headers={"Authorization": f"Bearer {token}"}).json()
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any, Self

import httpx
import uvicorn

from namelookup_emulator.admin_access import ADMIN_TOKEN_ENV, ADMIN_TOKEN_HEADER, check_binding
from namelookup_emulator.app import create_app
from namelookup_emulator.links import connectable_host, url_for
from namelookup_emulator.read_timeouts import http_protocol
from namelookup_emulator.state import EmulatorConfig, EmulatorState

LISTENING = re.compile(r"^namelookup-emulator listening on (?P<url>http://\S+)\s*$")
"""The line the CLI prints on stdout once it accepts connections."""
SEED_TOKEN_ENV = "NAMELOOKUP_EMULATOR_SEED_TOKEN"  # noqa: S105 (a variable name)
"""Environment variable that passes ``--seed-token`` without showing it in ``ps``."""


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def uvicorn_config(app: Any, log_level: str = "warning", *, config: EmulatorConfig | None = None) -> uvicorn.Config:
    """The uvicorn settings the emulator runs with.

    * No access log (it would show the legacy ``key`` in query strings); logging is left
      to the caller's configuration.
    * A kept-alive connection idle for 5 s is closed; a request head must arrive within
      ``config.header_timeout`` (:func:`~.read_timeouts.http_protocol`; the body's limit is
      the app's own, :class:`~.read_timeouts.BodyDeadline`).
    * ``X-Forwarded-*`` headers are ignored (uvicorn trusts them from 127.0.0.1 by default,
      where every local program could move the client address that the sign-up limit counts).

    :param app: the ASGI app.
    :param log_level: uvicorn's log level.
    :param config: the emulator's settings (timeouts, public URL); the defaults when None.
    """
    config = config or EmulatorConfig()
    return uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                          log_level=log_level, timeout_graceful_shutdown=3, timeout_keep_alive=5,
                          http=http_protocol(config.header_timeout, config.public_url), proxy_headers=False)


class AdminClient:
    """The admin endpoints over HTTP, shared by :class:`EmulatorServer` and :class:`EmulatorProcess`
    (sending the admin token when the emulator has one)."""

    url: str
    admin_token: str | None = None

    def _admin(self, method: str, path: str, json: Any = None, **params: Any) -> Any:
        headers = {ADMIN_TOKEN_HEADER: self.admin_token} if self.admin_token else None
        response = httpx.request(method, f"{self.url}/emulator/{path}", json=json,
                                 params=params or None, headers=headers, timeout=10)
        response.raise_for_status()
        return response.json()

    def create_account(self, *, token: str | None = None, credits: int = 100,
                       email: str | None = None) -> str:
        """Create an activated account; return its API token (a random one when None)."""
        body: dict[str, Any] = {"credits": credits}
        if token is not None:
            body["api_token"] = token
        if email is not None:
            body["email"] = email
        return str(self._admin("POST", "accounts", body)["api_token"])

    def top_up(self, token: str, credits: int = 0, *, remaining: int | None = None) -> int:
        """Add credits (or set what is left); return the credits left."""
        body: dict[str, Any] = {"api_token": token, "add": credits}
        if remaining is not None:
            body["remaining"] = remaining
        return int(self._admin("POST", "accounts/credits", body)["remaining_credits"])

    def set_faults(self, **settings: Any) -> dict[str, Any]:
        """Replace the fault configuration (see :class:`~.faults.FaultConfig`); no settings: off."""
        return dict(self._admin("PUT", "faults", settings))

    def stats(self) -> dict[str, Any]:
        """The emulator's counters."""
        return dict(self._admin("GET", "stats"))

    def outbox(self, email: str | None = None) -> list[dict[str, Any]]:
        """Messages sent (to ``email`` when given)."""
        return list(self._admin("GET", "outbox", **({"email": email} if email else {})))


class EmulatorServer(AdminClient):
    """The emulator served by uvicorn in a background thread on a free loopback port.

    :param config: emulator settings (default: in-memory database; its read timeouts and
        public URL apply).
    :param host: the address to bind; one beyond loopback needs ``config.admin_token``. For
        a wildcard (``0.0.0.0``, ``::``), :attr:`url` names loopback.
    :param port: the port; 0 picks a free one.
    :param log_level: uvicorn's log level.

    Example::

        with EmulatorServer() as server:
            server.state.faults.configure(error_503=0.5)
            token = server.state.create_account(credits=100)
            httpx.get(f"{server.url}/v2/statistic", headers={"Authorization": f"Bearer {token}"})
    """

    def __init__(self, config: EmulatorConfig | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning") -> None:
        check_binding(host, config.admin_token if config else None)
        self.state = EmulatorState(config)
        self.admin_token = self.state.config.admin_token
        self.app = create_app(state=self.state)
        self._host, self._port, self._log_level = host, port, log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._closed = False
        self.url = ""

    def start(self, timeout: float = 10.0) -> Self:
        """Start serving; return once connections are accepted.

        :raises RuntimeError: when the server does not come up in ``timeout`` seconds, or
            was stopped before (its database is closed: make a new one).
        """
        if self._closed:
            raise RuntimeError("this EmulatorServer was stopped; create a new one")
        if self._thread is not None:
            return self
        self._socket = bind_socket(self._host, self._port)
        port = self._socket.getsockname()[1]
        self._server = uvicorn.Server(uvicorn_config(self.app, self._log_level, config=self.state.config))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"namelookup-emulator-{port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the emulator did not start")
            time.sleep(0.005)
        self.url = url_for(connectable_host(self._host), port)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, join the thread and close the socket and the database."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None
        if not self._closed:
            self._closed = True
            self.state.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class EmulatorProcess(AdminClient):
    """The ``namelookup-emulator`` CLI as a child process on a free loopback port.

    :param args: further CLI arguments (``["--db", path]``).
    :param host: the loopback address to bind.
    :param port: the port; 0 picks a free one.
    :param seed_token: create an activated account with this token (passed by environment).
    :param seed_credits: that account's credits.
    :param log_level: the child's log level (its log goes to ``stderr``).
    :param stderr: where the child's log goes: None inherits ours, or a file, or
        ``subprocess.DEVNULL``.

    Example::

        with EmulatorProcess(seed_token="secret", seed_credits=10_000) as emulator:
            run_benchmark(emulator.url, token="secret")
    """

    def __init__(self, args: list[str] | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 seed_token: str | None = None, seed_credits: int = 100, log_level: str = "warning",
                 stderr: int | IO[Any] | None = None, admin_token: str | None = None) -> None:
        self._args = list(args or [])
        self._host, self._port = host, port
        self._seed_token, self._seed_credits = seed_token, seed_credits
        self._log_level, self._stderr = log_level, stderr
        self.admin_token = admin_token
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.url = ""

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def command(self) -> list[str]:
        """The command line of the child."""
        command = [sys.executable, "-m", "namelookup_emulator", "--host", self._host,
                   "--port", str(self._port), "--log-level", self._log_level, *self._args]
        if self._seed_token is not None:
            command += ["--seed-credits", str(self._seed_credits)]
        return command

    def start(self, timeout: float = 30.0) -> Self:
        """Start the child and wait for the URL it prints.

        :raises RuntimeError: when the child exits or prints no URL in ``timeout`` seconds.
        """
        if self._process is not None:
            return self
        env = dict(os.environ)
        if self._seed_token is not None:
            env[SEED_TOKEN_ENV] = self._seed_token
        if self.admin_token is not None:
            env[ADMIN_TOKEN_ENV] = self.admin_token
        # our own interpreter and module, arguments passed as a list (no shell)
        self._process = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=self._stderr,  # noqa: S603
                                         stdin=subprocess.DEVNULL, text=True, env=env)
        lines: queue.Queue[str | None] = queue.Queue()
        stdout = self._process.stdout
        assert stdout is not None

        def read() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        self._reader = threading.Thread(target=read, name="namelookup-emulator-stdout", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            match = LISTENING.match(line) if line else None
            if match:
                self.url = match["url"]
                return self
            if line is None:
                code = self._process.poll()
                self.stop()
                raise RuntimeError(f"the emulator process printed no URL (exit code {code})")

    def stop(self, timeout: float = 10.0) -> int | None:
        """Terminate the child (SIGTERM, then SIGKILL after ``timeout``); return its exit code."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._reader is not None:
            self._reader.join(timeout)
            self._reader = None
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
