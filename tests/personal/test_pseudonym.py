"""Pseudonyms, keyed question hashes and the operators' defaults (issue 49, item 1)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from airflow_provider_namelookup.errors import InvalidArgument
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.personal.pseudonym import (
    Pseudonymiser,
    keyed_identity,
    pseudonym,
    pseudonymisation_key,
)

KEY = b"k" * 32


def test_a_pseudonym_is_a_keyed_hash_of_the_normalised_value() -> None:
    assert re.fullmatch("[0-9a-f]{64}", pseudonym(KEY, "Anna"))
    assert pseudonym(KEY, "  ANNA  ") == pseudonym(KEY, "anna") == pseudonym(KEY, "Anna")
    assert pseudonym(KEY, "Anna  Lena") == pseudonym(KEY, "anna lena") != pseudonym(KEY, "annalena")
    assert pseudonym(KEY, "Anna") != pseudonym(b"l" * 32, "Anna")  # without the key, no dictionary finds it


def test_a_keyed_identity_is_not_the_plain_one_and_depends_on_the_key() -> None:
    query = Query("email", "anna@example.com")
    plain = query.identity("gender")
    keyed = keyed_identity(KEY, "gender", query)
    assert len(keyed) == len(plain) == 40 and keyed != plain
    assert keyed == keyed_identity(KEY, "gender", Query("email", "ANNA@example.com", id=3))
    assert keyed != keyed_identity(b"l" * 32, "gender", query) and keyed != keyed_identity(KEY, "country_of_origin",
                                                                                           query)


def test_every_echo_of_the_name_is_hashed_and_the_answer_is_kept(emulator: Any, make_account: Any) -> None:
    """Real answers of the emulator (an e-mail's gender and a full name's origin), pseudonymised."""
    import httpx

    token = make_account(credits=10)
    headers = {"Authorization": f"Bearer {token}"}
    gender = httpx.post(f"{emulator.url}/v2/gender/by-email-address", headers=headers,
                        json={"email": "theresa.miller14@example.com", "id": "x1"}).json()
    origin = httpx.post(f"{emulator.url}/v2/country-of-origin", headers=headers,
                        json={"full_name": "Giulia Rossi"}).json()
    hide = Pseudonymiser(KEY)
    for answer, words in ((gender, ("theresa", "miller")), (origin, ("giulia", "rossi"))):
        hidden = hide.result(answer)
        assert not [w for w in words if w in json.dumps(hidden).lower()], hidden
        assert {k: v for k, v in hidden.items() if k in ("gender", "probability", "result_found")} == \
            {k: v for k, v in answer.items() if k in ("gender", "probability", "result_found")}
    hidden = hide.result(gender)
    assert hidden["first_name"] == pseudonym(KEY, "Theresa") and hidden["last_name"] == pseudonym(KEY, "Miller")
    assert hidden["input"] == {"email": pseudonym(KEY, "theresa.miller14@example.com"), "id": "x1"}
    assert hide.result(origin)["country_of_origin"] == origin["country_of_origin"]
    assert "country_of_origin_map_url" in origin and "country_of_origin_map_url" not in hide.result(origin)


def test_the_key_comes_from_a_connection_and_a_bad_one_says_how_to_make_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_PSEUDO_GOOD", json.dumps({"conn_type": "generic", "password": "a" * 64}))
    monkeypatch.setenv("AIRFLOW_CONN_PSEUDO_SHORT", json.dumps({"conn_type": "generic", "password": "short"}))
    assert pseudonymisation_key("pseudo_good") == b"a" * 64
    with pytest.raises(InvalidArgument, match=r"at least 16 bytes.*airflow connections add pseudo_short"):
        pseudonymisation_key("pseudo_short")
    with pytest.raises(InvalidArgument, match="'pseudo_missing': no such connection"):
        pseudonymisation_key("pseudo_missing")


@pytest.mark.parametrize(("kind", "extra", "expected"), [
    ("email", {}, True), ("full_name", {}, True), ("first_name", {}, False),
    ("first_name", {"pseudonymise": True}, True), ("email", {"pseudonymise": False}, False),
])
def test_the_default_is_on_for_emails_and_full_names(kind: str, extra: dict[str, Any], expected: bool) -> None:
    from airflow_provider_namelookup.operators import GenderLookupOperator, SqlGenderLookupOperator

    xcom = GenderLookupOperator(task_id="x", queries=[], name_kind=kind, **extra)
    table = SqlGenderLookupOperator(task_id="t", conn_id="w", source_table="c", key_column="k", name_column="n",
                                    name_kind=kind, **extra)
    assert xcom.pseudonymises is table.pseudonymises is expected


def test_a_first_name_with_its_last_name_is_a_full_name() -> None:
    from airflow_provider_namelookup.operators import SqlCountryOfOriginOperator

    with_last = SqlCountryOfOriginOperator(task_id="t", conn_id="w", source_table="c", key_column="k",
                                           name_column="n", last_name_column="l")
    assert with_last.pseudonymises
    with pytest.raises(ValueError, match="pseudonymise must be True, False or None"):
        SqlCountryOfOriginOperator(task_id="u", conn_id="w", source_table="c", key_column="k", name_column="n",
                                   pseudonymise="yes")
