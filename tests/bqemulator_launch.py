"""``bqemulator start`` with one correction of its wire: a failed ``jobs.query`` is an HTTP error.

Run by bqemulator's own Python (its venv, ``make bigquery-emulator``), not the test process's.
bqemulator answers a ``jobs.query`` whose SQL failed (a table not found, a syntax error) with
HTTP 200 and the error in the body's ``errors``; BigQuery answers it with the error's HTTP status,
and google-cloud-bigquery relies on that: on a complete response it reads the rows and never
looks at ``errors`` ("If there was an error that failed the job, jobs.query behaves like
jobs.getQueryResults and returns a non-success HTTP status code", ``_job_helpers.py``). Uncorrected,
every failed statement would look like an empty result: a missing table would look present.

Example::

    .cache/.../bqemulator-venv/bin/python tests/bqemulator_launch.py start --ephemeral --rest-port 9050
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_QUERIES = re.compile(r"^/bigquery/v2/projects/[^/]+/queries$")
_STATUS = {"notFound": (404, "NOT_FOUND"), "duplicate": (409, "ALREADY_EXISTS"),
           "accessDenied": (403, "PERMISSION_DENIED"), "invalidQuery": (400, "INVALID_ARGUMENT"),
           "invalid": (400, "INVALID_ARGUMENT")}


def failed_query_as_http_error(app: Any) -> Any:
    """ASGI middleware: a ``jobs.query`` response carrying ``errors`` becomes BigQuery's error response."""

    async def middleware(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _QUERIES.match(scope["path"]):
            await app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body = bytearray()

        async def hold(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            status, payload = start["status"], bytes(body)
            if status == 200:
                answer = json.loads(payload)
                if answer.get("errors") and answer.get("jobComplete"):
                    first = answer["errors"][0]
                    status, name = _STATUS.get(first.get("reason", ""), (400, "INVALID_ARGUMENT"))
                    payload = json.dumps({"error": {"code": status, "message": first.get("message", ""),
                                                    "errors": answer["errors"], "status": name}}).encode()
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({"type": "http.response.start", "status": status,
                        "headers": [*headers, (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})

        await app(scope, receive, hold)

    return middleware


def main() -> None:
    import bqemulator.server
    from bqemulator.cli import main as cli

    create_app = bqemulator.server.create_app
    bqemulator.server.create_app = lambda *args, **kwargs: failed_query_as_http_error(create_app(*args, **kwargs))
    sys.argv = ["bqemulator", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
