"""JSON answers and RFC 7807 problem details, as the real service writes them.

Example::

    >>> body = problem_body("limit-exceeded", "Limit exceeded.", "http://127.0.0.1:8765")
    >>> body["status"], body["title"], body["type"]
    (401, 'limit-exceeded', 'http://127.0.0.1:8765/en/api-docs/v2/index/problem-details/limit-exceeded')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from namelookup_emulator.statuses import status_code

PROBLEM_PATH = "/en/api-docs/v2/index/problem-details/"
"""Path under the service's base URL that a problem's ``type`` points to."""


class JSONAnswer(JSONResponse):
    """A compact JSON response that never fails to encode.

    Text that UTF-8 cannot carry (a lone surrogate sent as ``"\\ud800"`` in a field the
    service echoes) is written with ASCII escapes instead, which is still valid JSON.
    """

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")


class ProblemAnswer(JSONAnswer):
    """A JSON answer with the RFC 7807 media type."""

    media_type = "application/problem+json"


def problem_body(status_id: str, detail: str, base_url: str, *, http_status: int | None = None,
                 **extra: Any) -> dict[str, Any]:
    """The problem-details object for a status identifier.

    :param status_id: the identifier (``title`` and the tail of ``type``).
    :param detail: the human-readable text.
    :param base_url: the service's base URL, without a trailing slash.
    :param http_status: the HTTP code; defaults to the spec's code for ``status_id``.
    :param extra: further members (``upgrade_url``).
    """
    status = http_status if http_status is not None else status_code(status_id)
    return {"status": status, "type": f"{base_url.rstrip('/')}{PROBLEM_PATH}{status_id}",
            "title": status_id, "detail": detail, **extra}


def problem(status_id: str, detail: str, base_url: str, *, http_status: int | None = None,
            headers: Mapping[str, str] | None = None, **extra: Any) -> ProblemAnswer:
    """A problem-details response; parameters as for :func:`problem_body`.

    :param headers: extra response headers (``Retry-After``).
    """
    body = problem_body(status_id, detail, base_url, http_status=http_status, **extra)
    return ProblemAnswer(body, status_code=body["status"], headers=headers)
