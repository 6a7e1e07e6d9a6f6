"""Assertions on the emulator's wire format, shared by the emulator tests."""

from __future__ import annotations

import re
from typing import Any

import httpx

from airflow_provider_namelookup.errors import STATUS_HTTP

PROBLEM_TYPE = re.compile(r"^http://127\.0\.0\.1:\d+/en/api-docs/v2/index/problem-details/(?P<id>[a-z0-9-]+)$")
DURATION = re.compile(r"^\d+ms$")


def assert_problem(response: httpx.Response, status_id: str, *, http_status: int | None = None) -> dict[str, Any]:
    """The answer is RFC 7807 problem details for ``status_id`` with the spec's HTTP code."""
    expected = http_status if http_status is not None else STATUS_HTTP[status_id]
    assert response.status_code == expected, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["title"] == status_id, body
    assert body["status"] == expected
    match = PROBLEM_TYPE.match(body["type"])
    assert match and match["id"] == status_id, body["type"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def remaining(client: httpx.Client) -> int:
    """Credits left, read through the free statistic endpoint."""
    return int(client.get("/v2/statistic").json()["remaining_credits"])
