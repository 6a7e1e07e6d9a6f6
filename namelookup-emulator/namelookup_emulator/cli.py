"""``namelookup-emulator``: serve the Name Lookup emulator with uvicorn.

Once it accepts connections it prints on stdout the URL (first, for a parent process that
reads it to learn the port; ``--port 0`` picks a free one), then an API token to use and
the Airflow connection to paste::

    namelookup-emulator listening on http://127.0.0.1:41237
    API token: 3vQ...Xw (an account with 100 credits; --seed-token or $NAMELOOKUP_EMULATOR_SEED_TOKEN ...)
    Airflow connection for it:
    export AIRFLOW_CONN_NAMELOOKUP_DEFAULT='{"conn_type": "namelookup", "host": "http://127.0.0.1:41237", ...}'

The token is ``--seed-token`` (or ``$NAMELOOKUP_EMULATOR_SEED_TOKEN``) when given, else a
random one made at each start, in both cases an activated account with ``--seed-credits``.

Its log (one line per request, never a token) goes to stderr. Beyond loopback
(``--host 0.0.0.0``) it starts only with ``--admin-token`` (or
``$NAMELOOKUP_EMULATOR_ADMIN_TOKEN``), which every ``/emulator/...`` admin call must
then send in ``X-Emulator-Admin-Token``. Links it writes (activation mails, ``docs_url``,
problem types) name the listening address, or ``--public-url`` (or
``$NAMELOOKUP_EMULATOR_PUBLIC_URL``; the flag wins) when clients reach it under another
URL. A request head must arrive within ``--header-timeout`` seconds (10), a body within
``--body-timeout`` (30). SIGTERM or Ctrl-C stop it gracefully.

Example::

    namelookup-emulator --host 127.0.0.1 --port 8765 --db /tmp/emulator.db \\
        --seed-token dev-token --seed-credits 100000
    python -m namelookup_emulator --port 0 --faults '{"error_503": 0.1}'
    namelookup-emulator --latency-ms 80-120 --token-max-in-flight 32   # a WAN service with a limit
    namelookup-emulator --host 0.0.0.0 --admin-token "$TOKEN" --public-url http://emulator:8765  # in a container
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import shlex
import sys
from typing import Any

import uvicorn

from namelookup_emulator.admin_access import ADMIN_TOKEN_ENV, check_binding
from namelookup_emulator.app import create_app
from namelookup_emulator.faults import FaultConfig
from namelookup_emulator.links import PUBLIC_URL_ENV, connectable_host, url_for
from namelookup_emulator.server import SEED_TOKEN_ENV, bind_socket, uvicorn_config
from namelookup_emulator.state import EmulatorConfig, EmulatorState
from namelookup_emulator.store import AccountExists

logger = logging.getLogger("namelookup_emulator")


def build_parser() -> argparse.ArgumentParser:
    """The command line's options."""
    defaults = EmulatorConfig()
    parser = argparse.ArgumentParser(
        prog="namelookup-emulator",
        description="A local emulator of the Name Lookup Service API v2. Its /emulator admin endpoints "
                    "are open on loopback; another --host needs --admin-token, which every admin call "
                    "must then send in the X-Emulator-Admin-Token header.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--admin-token", default=os.environ.get(ADMIN_TOKEN_ENV),
                        help=f"require this token on every admin call (or set ${ADMIN_TOKEN_ENV}); "
                             "needed to listen beyond loopback")
    parser.add_argument("--public-url", default=os.environ.get(PUBLIC_URL_ENV) or None, metavar="URL",
                        help=f"the URL clients reach the emulator at, when not the listening address (a proxy, "
                             f"a container name): every link it writes starts with it, and admin calls may name "
                             f"its host (or set ${PUBLIC_URL_ENV})")
    parser.add_argument("--port", type=int, default=8765, help="port; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--db", default=":memory:", help="SQLite file for accounts and credits "
                        "(default: in memory, lost on exit)")
    parser.add_argument("--seed-token", default=os.environ.get(SEED_TOKEN_ENV),
                        help=f"create an activated account with this API token (or set ${SEED_TOKEN_ENV}); "
                             "without it, an account with a random token is made; either is printed at start")
    parser.add_argument("--seed-credits", type=int, default=defaults.free_requests_per_month,
                        help="credits of the seeded account (default: %(default)s)")
    parser.add_argument("--free-requests", type=int, default=defaults.free_requests_per_month,
                        help="monthly credits of a sign-up (default: %(default)s)")
    parser.add_argument("--max-queries", type=int, default=defaults.max_queries,
                        help="queries per request (default: %(default)s)")
    parser.add_argument("--signup-max-attempts", type=int, default=defaults.signup_max_attempts,
                        help="sign-up attempts per client address in the window (default: %(default)s)")
    parser.add_argument("--signup-window", type=float, default=defaults.signup_window_seconds,
                        help="sign-up window in seconds (default: %(default)s)")
    parser.add_argument("--faults", type=json.loads, default={}, metavar="JSON",
                        help='fault injection at start, e.g. \'{"error_503": 0.1, "latency_ms": [5, 20]}\'')
    parser.add_argument("--latency-ms", type=_latency, default=None, metavar="MS[-MS]",
                        help="added latency per request, fixed or a range, e.g. 80-120 "
                             "(the faults' latency_ms)")
    parser.add_argument("--token-max-in-flight", type=int, default=None, metavar="N",
                        help="requests of one token answered at once; more get 429 (default: no limit)")
    parser.add_argument("--token-max-rps", type=float, default=None, metavar="R",
                        help="requests of one token per second; more get 429 (default: no limit)")
    parser.add_argument("--token-retry-after", type=float, default=None, metavar="S",
                        help="Retry-After seconds of an in-flight refusal (default: 1)")
    parser.add_argument("--header-timeout", type=float, default=defaults.header_timeout, metavar="S",
                        help="seconds a client has to send a request head; then 408 (default: %(default)s)")
    parser.add_argument("--body-timeout", type=float, default=defaults.body_timeout, metavar="S",
                        help="seconds a client has to send a request body; then 408 (default: %(default)s)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="log level (default: %(default)s)")
    return parser


def _latency(text: str) -> float | list[float]:
    low, _, high = text.partition("-")
    try:
        return [float(low), float(high)] if high else float(low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds or a range like 80-120, got {text!r}") from None


def fault_settings(args: argparse.Namespace) -> Any:
    """The fault configuration the command line asks for: ``--faults`` and the single flags
    (a flag wins over the same member of ``--faults``; anything but a JSON object is left
    for :meth:`FaultConfig.from_json` to refuse)."""
    if not isinstance(args.faults, dict):
        return args.faults
    flags = {"latency_ms": args.latency_ms, "token_max_in_flight": args.token_max_in_flight,
             "token_max_rps": args.token_max_rps, "token_retry_after": args.token_retry_after}
    return {**args.faults, **{k: v for k, v in flags.items() if v is not None}}


def welcome(url: str, token: str, credits: int, *, chosen: bool) -> str:
    """The lines that tell a user which token to use and how Airflow reaches the emulator.

    >>> lines = welcome("http://127.0.0.1:8765", "local-emulator-token", 100, chosen=True).splitlines()
    >>> lines[0]
    'API token: local-emulator-token (an account with 100 credits)'
    >>> name, _, value = shlex.split(lines[2])[1].partition("=")
    >>> name, json.loads(value)  # doctest: +NORMALIZE_WHITESPACE
    ('AIRFLOW_CONN_NAMELOOKUP_DEFAULT',
     {'conn_type': 'namelookup', 'host': 'http://127.0.0.1:8765', 'password': 'local-emulator-token'})
    """
    how = "" if chosen else f"; --seed-token or ${SEED_TOKEN_ENV} sets your own"
    connection = json.dumps({"conn_type": "namelookup", "host": url, "password": token})
    return (f"API token: {token} (an account with {credits} credits{how})\n"
            f"Airflow connection for it:\nexport AIRFLOW_CONN_NAMELOOKUP_DEFAULT={shlex.quote(connection)}")


def main(argv: list[str] | None = None) -> int:
    """Run the emulator until it is stopped; return the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = EmulatorConfig(db_path=args.db, free_requests_per_month=args.free_requests,
                                max_queries=args.max_queries, signup_max_attempts=args.signup_max_attempts,
                                signup_window_seconds=args.signup_window, admin_token=args.admin_token or None,
                                public_url=args.public_url, header_timeout=args.header_timeout,
                                body_timeout=args.body_timeout)
        check_binding(args.host, config.admin_token)
    except ValueError as exc:
        print(f"namelookup-emulator: {exc}", file=sys.stderr)
        return 2
    try:
        faults = FaultConfig.from_json(fault_settings(args))
    except (TypeError, ValueError) as exc:
        print(f"namelookup-emulator: invalid --faults: {exc}", file=sys.stderr)
        return 2
    state = EmulatorState(config)
    state.faults.configure(faults)
    token = args.seed_token or secrets.token_urlsafe(24)
    try:
        state.create_account(token=token, credits=args.seed_credits)
    except AccountExists:
        logger.info("the seed account exists already in %s; left unchanged", args.db)
    app = create_app(state=state)
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        print(f"namelookup-emulator: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    if connectable_host(args.host) != args.host:
        logger.info("listening on every address of this machine (%s), port %s", args.host, port)
    url = url_for(connectable_host(args.host), port)
    print(f"namelookup-emulator listening on {url}", flush=True)
    print(welcome(config.public_url or url, token, state.remaining_credits(token), chosen=bool(args.seed_token)),
          flush=True)
    try:
        uvicorn.Server(uvicorn_config(app, args.log_level, config=config)).run(sockets=[sock])
    finally:
        sock.close()
        state.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
