"""Error parsing: every identifier of the spec maps to one class and one HTTP code."""

from __future__ import annotations

import json

import pendulum
import pytest

from airflow_provider_namelookup.errors import (
    STATUS_CLASSES,
    STATUS_HTTP,
    NameLookupAuthError,
    NameLookupEndpointNotFound,
    NameLookupError,
    NameLookupLimitExceeded,
    NameLookupRateLimited,
    NameLookupServerError,
    NameLookupValidationError,
    error_from_response,
    parse_retry_after,
)

# The spec's error table, copied by hand so the test fails if the module drifts from it.
SPEC_TABLE = {
    "endpoint-not-found": 404, "limit-exceeded": 401, "parameter-first-name-invalid": 400,
    "parameter-full-name-invalid": 400, "parameter-email-invalid": 400, "key-parameter-missing": 400,
    "invalid-key": 400, "invalid-country-code": 400, "invalid-ip-address": 400, "generic-error": 400,
    "invalid-json": 400, "invalid-locale": 400, "invalid-id": 400, "mandatory-parameter-missing": 400,
    "content-type-missing": 400, "missing-json": 400, "too-many-queries": 400,
    "too-many-queries-api-key": 400, "authorization-header-missing": 400, "invalid-auth-token": 400,
    "email-invalid": 400, "password-invalid": 400, "label-invalid": 400, "email-account-not-found": 400,
    "invalid-list-of-names": 400, "terms-not-accepted": 400, "email-already-registered": 400,
    "signup-rate-limit": 429, "signup-email-rejected": 400,
}


def problem(status_id: str, status: int, **extra: object) -> bytes:
    body = {"status": status, "type": f"https://svc/en/api-docs/v2/index/problem-details/{status_id}",
            "title": status_id, "detail": f"detail of {status_id}", **extra}
    return json.dumps(body).encode()


def test_table_matches_spec() -> None:
    assert STATUS_HTTP == SPEC_TABLE
    assert set(STATUS_CLASSES) == set(SPEC_TABLE)


@pytest.mark.parametrize("status_id", sorted(SPEC_TABLE))
def test_every_identifier_parses_to_its_class(status_id: str) -> None:
    code = SPEC_TABLE[status_id]
    err = error_from_response(code, problem(status_id, code))
    assert type(err) is STATUS_CLASSES[status_id]
    assert (err.status_id, err.http_status, err.detail) == (status_id, code, f"detail of {status_id}")
    assert status_id in str(err)


@pytest.mark.parametrize(("status_id", "cls"), [
    ("limit-exceeded", NameLookupLimitExceeded),
    ("invalid-auth-token", NameLookupAuthError),
    ("authorization-header-missing", NameLookupAuthError),
    ("invalid-key", NameLookupAuthError),
    ("key-parameter-missing", NameLookupAuthError),
    ("invalid-country-code", NameLookupValidationError),
    ("too-many-queries", NameLookupValidationError),
    ("content-type-missing", NameLookupValidationError),
    ("signup-rate-limit", NameLookupRateLimited),
    ("generic-error", NameLookupServerError),
    ("endpoint-not-found", NameLookupEndpointNotFound),
])
def test_classes_named_by_the_issue(status_id: str, cls: type) -> None:
    assert STATUS_CLASSES[status_id] is cls


def test_limit_exceeded_is_not_an_auth_error_and_keeps_upgrade_url() -> None:
    err = error_from_response(401, problem("limit-exceeded", 401, upgrade_url="https://svc/buy"))
    assert isinstance(err, NameLookupLimitExceeded)
    assert not isinstance(err, NameLookupAuthError)
    assert err.upgrade_url == "https://svc/buy"
    assert not err.retryable


def test_limit_exceeded_without_upgrade_url() -> None:
    err = error_from_response(401, problem("limit-exceeded", 401))
    assert isinstance(err, NameLookupLimitExceeded) and err.upgrade_url is None


def test_identifier_from_type_tail_when_title_is_prose() -> None:
    body = json.dumps({"type": "https://svc/problem-details/invalid-locale", "title": "Invalid locale",
                       "detail": "bad"}).encode()
    err = error_from_response(400, body)
    assert (err.status_id, type(err)) == ("invalid-locale", NameLookupValidationError)


def test_legacy_v1_body() -> None:
    err = error_from_response(400, b'{"errno": 30, "errmsg": "invalid-country-code"}')
    assert err.status_id == "invalid-country-code"
    prose = error_from_response(400, b'{"errno": 30, "errmsg": "country is wrong"}')
    assert prose.status_id == "http-400" and prose.detail == "country is wrong"


@pytest.mark.parametrize("body", [b"<html><body>502 Bad Gateway</body></html>", b"", None, b"\xff\xfe", b"[1,2]"])
def test_unreadable_bodies_never_crash(body: bytes | None) -> None:
    err = error_from_response(502, body)
    assert isinstance(err, NameLookupServerError) and err.retryable
    assert err.status_id == "http-502"


def test_unreadable_4xx_is_a_server_error_that_is_not_retried() -> None:
    err = error_from_response(400, b"<html>proxy says no</html>")
    assert isinstance(err, NameLookupServerError) and not err.retryable


@pytest.mark.parametrize(("code", "cls"), [(401, NameLookupAuthError), (404, NameLookupEndpointNotFound),
                                           (429, NameLookupRateLimited), (503, NameLookupServerError),
                                           (418, NameLookupError)])
def test_unknown_identifier_falls_back_on_http_code(code: int, cls: type) -> None:
    err = error_from_response(code, b'{"detail": "something"}')
    assert type(err) is cls and err.status_id == f"http-{code}"


def test_generic_error_is_a_server_error_but_not_retried() -> None:
    err = error_from_response(400, problem("generic-error", 400))
    assert isinstance(err, NameLookupServerError) and not err.retryable


def test_retry_after_seconds_and_date() -> None:
    err = error_from_response(429, b"{}", retry_after="2.5")
    assert isinstance(err, NameLookupRateLimited) and err.retry_after == 2.5 and err.retryable
    future = pendulum.now("UTC").add(seconds=30).format("ddd, DD MMM YYYY HH:mm:ss [GMT]")
    assert 25 <= (parse_retry_after(future) or 0) <= 31
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("-3") == 0.0


def test_row_error_dict() -> None:
    err = NameLookupValidationError("invalid-id", "id too long", field="id")
    assert err.as_dict() == {"status_id": "invalid-id", "detail": "id too long", "field": "id"}
