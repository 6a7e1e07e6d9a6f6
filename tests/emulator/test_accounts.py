"""Sign-up, activation and authentication (bearer token and legacy key) across a real socket."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from namelookup_emulator import EmulatorServer
from namelookup_emulator.store import digest
from tests.emulator.wire import assert_problem, bearer


def _address(prefix: str = "user") -> str:
    return f"{prefix}.{secrets.token_hex(4)}@example.com"


def test_sign_up_activate_lookup_statistic(signups: httpx.Client, emulator: EmulatorServer) -> None:
    email = _address("theresa")
    response = signups.post("/v2/sign-up", json={"email": email, "accept_terms": True, "newsletter": True,
                                                 "locale": "de"})
    assert response.status_code == 200
    account = response.json()
    assert set(account) == {"email", "password", "api_token", "free_requests_per_month", "status", "message",
                            "docs_url"}
    assert account["email"] == email and account["free_requests_per_month"] == 100
    assert account["status"] == "awaiting_activation"
    assert len(account["api_token"]) >= 32 and len(account["password"]) >= 12
    assert email in account["message"]
    assert signups.get(account["docs_url"]).status_code == 200
    token = account["api_token"]

    assert_problem(signups.post("/v2/gender", json={"first_name": "Anna"}, headers=bearer(token)),
                   "invalid-auth-token")
    assert_problem(signups.get("/v2/statistic", params={"key": token}), "invalid-key")

    mails = signups.get("/emulator/outbox", params={"email": email.upper()}).json()
    assert len(mails) == 1 and mails[0]["to"] == email and mails[0]["link"] in mails[0]["body"]
    activated = signups.get(mails[0]["link"])
    assert activated.status_code == 200 and activated.json()["status"] == "active"
    assert signups.get(mails[0]["link"]).status_code == 200

    lookup = signups.post("/v2/gender", json={"first_name": "Theresa"}, headers=bearer(token))
    assert lookup.status_code == 200 and lookup.json()["gender"] == "female"
    statistic = signups.get("/v2/statistic", headers=bearer(token)).json()
    assert statistic["remaining_credits"] == 99 and statistic["is_limit_reached"] is False
    assert token not in str(emulator.state.store.outbox())


def test_every_sign_up_gets_its_own_secrets(signups: httpx.Client) -> None:
    first = signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).json()
    second = signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).json()
    assert first["api_token"] != second["api_token"] and first["password"] != second["password"]


def test_secrets_are_stored_hashed(signups: httpx.Client, emulator: EmulatorServer) -> None:
    account = signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).json()
    link = signups.get("/emulator/outbox", params={"email": account["email"]}).json()[0]["link"]
    code = link.rsplit("code=", 1)[1]
    store = emulator.state.store
    rows = store._conn.execute("SELECT token_hash, password_hash, activation_hash FROM accounts"
                               " WHERE email = ?", (account["email"],)).fetchall()
    assert rows == [(digest(account["api_token"]), rows[0][1], digest(code))]
    assert account["password"] not in rows[0][1]


def test_unknown_activation_link(signups: httpx.Client) -> None:
    assert_problem(signups.get("/emulator/activate", params={"code": "nope"}), "generic-error")
    assert_problem(signups.get("/emulator/activate"), "generic-error")


@pytest.mark.parametrize(("body", "status_id"), [
    ({"email": "no-at-sign", "accept_terms": True}, "email-invalid"),
    ({"email": "", "accept_terms": True}, "email-invalid"),
    ({"accept_terms": True}, "email-invalid"),
    (["x@example.com"], "email-invalid"),
    ({"email": "a@example.com"}, "terms-not-accepted"),
    ({"email": "a@example.com", "accept_terms": False}, "terms-not-accepted"),
    ({"email": "a@example.com", "accept_terms": "true"}, "terms-not-accepted"),
    ({"email": "a@example.com", "accept_terms": True, "locale": "fr_FR"}, "invalid-locale"),
    ({"email": "a@example.com", "accept_terms": True, "locale": "english"}, "invalid-locale"),
    ({"email": "a@example.com", "accept_terms": True, "newsletter": "yes"}, "generic-error"),
    ({"email": "a@example.com", "accept_terms": True, "newsletter": 1}, "generic-error"),
    ({"email": "...@example.com", "accept_terms": True}, "email-invalid"),
    ({"email": "someone@mailinator.com", "accept_terms": True}, "signup-email-rejected"),
    ({"email": "someone@eu.yopmail.com", "accept_terms": True}, "signup-email-rejected"),
])
def test_sign_up_errors(signups: httpx.Client, body: Any, status_id: str) -> None:
    assert_problem(signups.post("/v2/sign-up", json=body), status_id)


def test_sign_up_refuses_a_non_boolean_newsletter_naming_the_field(signups: httpx.Client) -> None:
    answer = assert_problem(signups.post("/v2/sign-up", json={"email": _address("news"), "accept_terms": True,
                                                              "newsletter": "yes"}), "generic-error")
    assert "newsletter must be true or false" in answer["detail"]


def test_sign_up_takes_any_short_language_code_as_the_spec_says(signups: httpx.Client) -> None:
    response = signups.post("/v2/sign-up", json={"email": _address("lang"), "accept_terms": True, "locale": "FR"})
    assert response.status_code == 200, response.text


def test_sign_up_body_errors(signups: httpx.Client) -> None:
    assert_problem(signups.post("/v2/sign-up", content=b'{"email": "a@example.com"}'), "content-type-missing")
    assert_problem(signups.post("/v2/sign-up", content=b"", headers={"Content-Type": "application/json"}),
                   "missing-json")
    assert_problem(signups.post("/v2/sign-up", content=b"{", headers={"Content-Type": "application/json"}),
                   "invalid-json")


def test_an_address_registers_once_in_any_case(signups: httpx.Client) -> None:
    email = _address("Mixed.Case")
    assert signups.post("/v2/sign-up", json={"email": email, "accept_terms": True}).status_code == 200
    assert_problem(signups.post("/v2/sign-up", json={"email": email.lower(), "accept_terms": True}),
                   "email-already-registered")


def test_sign_up_attempts_are_limited_per_client_address(signups: httpx.Client) -> None:
    limit = signups.put("/emulator/signup-limit", json={"max_attempts": 2, "window_seconds": 30})
    assert limit.json() == {"max_attempts": 2, "window_seconds": 30}
    try:
        assert signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).status_code == 200
        assert_problem(signups.post("/v2/sign-up", json={"email": "bad", "accept_terms": True}), "email-invalid")
        refused = signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True})
        assert_problem(refused, "signup-rate-limit")
        assert 1 <= int(refused.headers["Retry-After"]) <= 30
    finally:
        signups.put("/emulator/signup-limit", json={"max_attempts": 20, "window_seconds": 600})


def test_sign_up_limit_window_slides(signups: httpx.Client) -> None:
    # A window long enough that the second attempt falls in it however busy the machine (issue 36:
    # 0.2 s was a window of time the test had to hit); the third comes once it has surely passed.
    window = 2.0
    signups.put("/emulator/signup-limit", json={"max_attempts": 1, "window_seconds": window})
    try:
        asked = time.monotonic()
        assert signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).status_code == 200
        first = time.monotonic()  # the emulator counted the attempt before it answered
        second = signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True})
        assert second.status_code == 429, f"{time.monotonic() - asked:.2f} s after the first, in a {window:g} s window"
        time.sleep(max(0.0, first + window + 0.1 - time.monotonic()))
        assert signups.post("/v2/sign-up", json={"email": _address(), "accept_terms": True}).status_code == 200
    finally:
        signups.put("/emulator/signup-limit", json={"max_attempts": 20, "window_seconds": 600})


# authentication


@pytest.mark.parametrize(("headers", "status_id"), [
    ({}, "authorization-header-missing"),
    ({"Authorization": ""}, "authorization-header-missing"),
    ({"Authorization": "Bearer"}, "invalid-auth-token"),
    ({"Authorization": "Bearer not-a-token"}, "invalid-auth-token"),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, "invalid-auth-token"),
])
@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/v2/gender", {"first_name": "Anna"}),
    ("POST", "/v2/country-of-origin", {"first_name": "Anna"}),
    ("GET", "/v2/statistic", None),
])
def test_bearer_errors(client_for: Callable[[str | None], httpx.Client], headers: dict[str, str], status_id: str,
                       method: str, path: str, body: Any) -> None:
    assert_problem(client_for(None).request(method, path, json=body, headers=headers), status_id)


def test_bearer_scheme_is_case_insensitive(client_for: Callable[[str | None], httpx.Client],
                                           make_account: Callable[..., str]) -> None:
    token = make_account()
    response = client_for(None).get("/v2/statistic", headers={"Authorization": f"bearer  {token}"})
    assert response.status_code == 200


def test_legacy_key_parameter(client_for: Callable[[str | None], httpx.Client],
                              make_account: Callable[..., str]) -> None:
    token = make_account(credits=10)
    anonymous = client_for(None)
    key = {"key": token}
    assert anonymous.post("/v2/gender", params=key, json={"first_name": "Anna"}).json()["gender"] == "female"
    assert anonymous.post("/v2/country-of-origin", params=key, json={"first_name": "Anna"}).status_code == 200
    three = anonymous.post("/v2/gender", params={"key": token}, json=[{"first_name": "Anna"}] * 3)
    assert three.status_code == 200 and len(three.json()) == 3
    assert_problem(anonymous.post("/v2/gender", params={"key": token}, json=[{"first_name": "Anna"}] * 4),
                   "too-many-queries-api-key")
    assert_problem(anonymous.post("/v2/gender/by-first-name-multiple", params={"key": token},
                                  json=[{"first_name": "Anna"}] * 4), "too-many-queries-api-key")
    assert_problem(anonymous.get("/v2/statistic", params={"key": ""}), "key-parameter-missing")
    assert_problem(anonymous.get("/v2/statistic", params={"key": "wrong"}), "invalid-key")
    assert_problem(anonymous.post("/v2/gender", params={"key": "wrong"}, json={"first_name": "Anna"}), "invalid-key")
    statistic = anonymous.get("/v2/statistic", params={"key": token}).json()
    assert statistic["remaining_credits"] == 10 - 1 - 2 - 3


def test_the_bearer_header_wins_over_a_key(client_for: Callable[[str | None], httpx.Client],
                                           make_account: Callable[..., str]) -> None:
    token = make_account()
    client = client_for(token)
    assert client.get("/v2/statistic", params={"key": "wrong"}).status_code == 200
    many = client.post("/v2/gender", params={"key": token}, json=[{"first_name": "Anna"}] * 5)
    assert many.status_code == 200


# admin endpoints


def test_admin_accounts_and_credits(emulator: EmulatorServer, client_for: Callable[[str | None], httpx.Client]) -> None:
    admin = client_for(None)
    created = admin.post("/emulator/accounts", json={"api_token": "fixed-token-for-admin-test", "credits": 7})
    assert created.status_code == 201
    assert created.json()["api_token"] == "fixed-token-for-admin-test" and created.json()["remaining_credits"] == 7
    assert_problem(admin.post("/emulator/accounts", json={"api_token": "fixed-token-for-admin-test"}), "generic-error")
    assert_problem(admin.post("/emulator/accounts", json={"credits": -1}), "generic-error")
    assert_problem(admin.post("/emulator/accounts", content=b"{", headers={"Content-Type": "application/json"}),
                   "invalid-json")
    generated = admin.post("/emulator/accounts", json={}).json()
    assert generated["remaining_credits"] == 100 and generated["status"] == "active"

    topped = admin.post("/emulator/accounts/credits", json={"api_token": "fixed-token-for-admin-test", "add": 5})
    assert topped.json()["remaining_credits"] == 12
    exact = admin.post("/emulator/accounts/credits", json={"api_token": "fixed-token-for-admin-test", "remaining": 3})
    assert exact.json()["remaining_credits"] == 3
    assert_problem(admin.post("/emulator/accounts/credits", json={"api_token": "unknown", "add": 1}), "generic-error")
    assert emulator.top_up("fixed-token-for-admin-test", 4) == 7
    assert emulator.state.remaining_credits("fixed-token-for-admin-test") == 7
    assert admin.get("/emulator/health").json()["status"] == "ok"
