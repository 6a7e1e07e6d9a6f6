"""Input rules the client and the emulator share, across a real socket: ASCII-only case
folding of country codes, the e-mail syntax, and sign-up's Unicode case folding."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from namelookup_emulator import EmulatorConfig, EmulatorServer
from namelookup_emulator.store import Store, digest
from tests.emulator.wire import assert_problem, bearer, remaining


@pytest.mark.parametrize("code", ["ıt", "ſe"])
def test_a_country_code_folds_case_in_ascii_only(client: httpx.Client, code: str) -> None:
    before = remaining(client)
    assert_problem(client.post("/v2/gender", json={"first_name": "Andrea", "country": code}), "invalid-country-code")
    assert_problem(client.post("/v2/gender", json={"first_name": "Andrea", "locale": f"it_{code}"}),
                   "invalid-locale")
    assert remaining(client) == before
    assert client.post("/v2/gender", json={"first_name": "Andrea", "country": "it"}).json()["details"]["country"] \
        == "IT"


@pytest.mark.parametrize("address", ["anna<script>@example.com", "anna,b@example.com", "anna@-example-.com",
                                     "anna@[127.0.0.1]", "anna@127.0.0.1", "anna@exa_mple.com"])
def test_an_address_outside_the_rules_is_refused_and_not_charged(client: httpx.Client, signups: httpx.Client,
                                                                address: str) -> None:
    before = remaining(client)
    assert_problem(client.post("/v2/gender", json={"email": address}), "parameter-email-invalid")
    assert_problem(client.post("/v2/gender/by-email-address-multiple", json=[{"email": address}]),
                   "parameter-email-invalid")
    assert_problem(client.post("/v2/country-of-origin", json={"email": address}), "parameter-email-invalid")
    assert remaining(client) == before
    assert_problem(signups.post("/v2/sign-up", json={"email": address, "accept_terms": True}), "email-invalid")


def test_internationalised_addresses_are_answered(client: httpx.Client) -> None:
    answer = client.post("/v2/gender", json={"email": "jörg.müller@bücher.de"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["first_name"] == "Jörg"


@pytest.mark.parametrize(("first", "second"), [
    ("jörg.{tag}@bücher.de", "JÖRG.{tag}@BÜCHER.DE"),
    ("strauss.{tag}@example.de", "STRAUß.{tag}@example.de"),  # casefold: ß is ss
    ("jo\u0308rg.{tag}@example.de", "JÖRG.{tag}@EXAMPLE.DE"),  # NFC: o + combining diaeresis is ö
])
def test_sign_up_folds_case_with_unicode_rules(signups: httpx.Client, emulator: EmulatorServer,
                                               first: str, second: str) -> None:
    tag = secrets.token_hex(4)
    created = signups.post("/v2/sign-up", json={"email": first.format(tag=tag), "accept_terms": True})
    assert created.status_code == 200, created.text
    assert_problem(signups.post("/v2/sign-up", json={"email": second.format(tag=tag), "accept_terms": True}),
                   "email-already-registered")
    with pytest.raises(Exception, match="exists"):
        emulator.state.create_account(email=second.format(tag=tag).lower())


def test_admin_accounts_fold_case_like_sign_up(client_for: Callable[[str | None], httpx.Client]) -> None:
    admin = client_for(None)
    tag = secrets.token_hex(4)
    assert admin.post("/emulator/accounts", json={"email": f"ÅSA.{tag}@example.se"}).status_code == 201
    assert_problem(admin.post("/emulator/accounts", json={"email": f"åsa.{tag}@EXAMPLE.SE"}), "generic-error")


def test_a_database_of_an_older_emulator_gets_folded_keys(tmp_path: Path) -> None:
    database = tmp_path / "old.db"
    Store(str(database)).close()
    with sqlite3.connect(database) as conn:  # as an emulator before the key column left it
        conn.execute("DROP INDEX accounts_email_key")
        conn.execute("ALTER TABLE accounts DROP COLUMN email_key")
        for number, email in enumerate(["jörg@bücher.de", "JÖRG@BÜCHER.DE"]):
            conn.execute("INSERT INTO accounts (email, token_hash, password_hash, status, monthly_allowance,"
                         " remaining, credits_month, created_at) VALUES (?, ?, 'x', 'active', 5, 5, '2026-01', '')",
                         (email, digest(f"old-token-{number}")))
    conn.close()
    with EmulatorServer(EmulatorConfig(db_path=str(database))) as server, \
            httpx.Client(base_url=server.url, timeout=10) as client:
        for number in range(2):  # both old accounts keep working
            assert client.get("/v2/statistic", headers=bearer(f"old-token-{number}")).status_code == 200
        assert_problem(client.post("/v2/sign-up", json={"email": "Jörg@Bücher.DE", "accept_terms": True}),
                       "email-already-registered")
        assert client.post("/v2/sign-up", json={"email": "anna@bücher.de", "accept_terms": True}).status_code == 200
        assert_problem(client.post("/v2/sign-up", json={"email": "ANNA@BÜCHER.DE", "accept_terms": True}),
                       "email-already-registered")
