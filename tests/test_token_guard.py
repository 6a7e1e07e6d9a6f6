"""The token rule shared by the hooks and the planner (airflow_provider_namelookup.token_guard)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.api import as_query, prepare_queries
from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, plan_name, plan_value
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.token_guard import (
    SECRET_MIN_LENGTH,
    holds_secret,
    validate_query_without_secrets,
)

TOKEN = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"


def test_a_long_token_anywhere_a_short_one_only_whole() -> None:
    assert len(TOKEN) >= SECRET_MIN_LENGTH
    assert holds_secret(f"x{TOKEN}y", {TOKEN}) and holds_secret(TOKEN, {TOKEN})
    assert not holds_secret(TOKEN[:-1], {TOKEN})
    assert holds_secret("dev", {"dev"}) and not holds_secret("Sukhdev", {"dev"})
    assert not holds_secret("anything", set()) and not holds_secret(None, {TOKEN}) and not holds_secret("x", {""})


@pytest.mark.parametrize(("raw", "field", "status"), [
    ({"first_name": TOKEN}, "first_name", "parameter-first-name-invalid"),
    ({"full_name": f"Anna {TOKEN}"}, "full_name", "parameter-full-name-invalid"),
    ({"email": f"{TOKEN}@example.com"}, "email", "parameter-email-invalid"),
    ({"first_name": "Anna", "id": f"row-{TOKEN}"}, "id", "invalid-id"),
    ({"first_name": "Anna", "country": TOKEN}, "country", "invalid-country-code"),
    ({"first_name": "Anna", "locale": f" {TOKEN} "}, "locale", "invalid-locale"),
    ({"first_name": "Anna", "ip": TOKEN}, "ip", "invalid-ip-address"),
    ({"first_name": "Anna", "country": [TOKEN]}, "country", "invalid-country-code"),  # quoted by its repr
])
def test_every_field_that_holds_the_token_is_refused_without_quoting_it(raw: dict[str, Any], field: str,
                                                                         status: str) -> None:
    with pytest.raises(NameLookupValidationError) as info:
        validate_query_without_secrets(raw, secrets={TOKEN})
    assert (info.value.field, info.value.status_id) == (field, status)
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)


def test_a_short_token_is_refused_once_normalised_and_hints_only_when_equal() -> None:
    with pytest.raises(NameLookupValidationError, match=r"\[first_name\]"):
        validate_query_without_secrets({"first_name": "  dev "}, secrets={"dev"})
    with pytest.raises(NameLookupValidationError, match=r"\[country\]"):
        validate_query_without_secrets({"first_name": "Anna", "country": "DE"}, secrets={"DE"})
    assert validate_query_without_secrets({"first_name": "Devika", "country": "de"}, secrets={"dev"}).country == "DE"


def test_country_of_origin_queries_do_not_read_their_hints() -> None:
    query = validate_query_without_secrets({"first_name": "Anna", "country": TOKEN}, hints=False, secrets={TOKEN})
    assert query == Query("first_name", "Anna")


def test_the_hook_path_checks_query_objects_too() -> None:
    with pytest.raises(NameLookupValidationError, match="query 1: id holds"):
        prepare_queries(["Anna", Query("first_name", "Ben", id=TOKEN)], secrets={TOKEN})
    with pytest.raises(NameLookupValidationError, match=r"\[ip\]"):
        as_query(Query("first_name", "Ben", ip=TOKEN), secrets={TOKEN})
    assert as_query(Query("first_name", "Ben", ip=TOKEN), hints=False, secrets={TOKEN}) == Query("first_name", "Ben")


def test_the_planner_refuses_a_hint_holding_the_token_without_quoting_it() -> None:
    """Before the rule moved to one place, the planner let validation quote ``country=<token>``
    in the row's error, which lands in XCom and tables."""
    spec = QueryRules(LookupKind.GENDER, secrets=frozenset({TOKEN}))
    row = plan_name("Anna", spec, country=TOKEN, ref=1)
    assert row.error is not None and row.error.field == "country" and TOKEN not in str(row.error)
    row = plan_value(SourceValue(2, {"first_name": "Anna", "locale": TOKEN}), spec)
    assert row.error is not None and row.error.field == "locale" and TOKEN not in str(row.error)


# What a log line shows of a value (token_guard.shown_safely, used by the invalid-values summary) ----------

TOKENS = {
    "long": "AUDITtok3nXq7Zp9Lm2Vb8Rw4Ky6H1",  # 30 characters, as in the audit
    "service": TOKEN,  # 32
    "short": "s3cr3t-k3y",  # 10: refused by the guard only as a whole value
    "toy": "dev",  # shorter than Airflow's masker looks at
    "quoting": "tok'en\"with\\n-quotes",  # written with escapes by repr
}


def _held_in(token: str) -> list[Any]:
    """Values holding ``token`` in every shape a row can take."""
    return [
        {"email": f"{token}@example.com", "id": 6},
        {"first_name": "", "comment": token},
        {"id": token},
        [token, "Anna"],
        ("Anna", {"nested": [{"deeper": token}]}),
        {token: "as a key"},
        {"x" * 30: token},  # the token starts past any cut
        {frozenset({token})},
        f"Anna {token}",
        token.encode(),
    ]


def _windows(token: str, width: int = 8) -> list[str]:
    """Every piece of ``token`` a cut could leave behind (the whole token when shorter)."""
    return [token[i:i + width] for i in range(max(1, len(token) - width + 1))]


@pytest.mark.parametrize("token", TOKENS.values(), ids=TOKENS.keys())
@pytest.mark.parametrize("length", [8, 24, 40, None])
def test_a_shown_value_holds_no_piece_of_the_token(token: str, length: int | None) -> None:
    from airflow_provider_namelookup.token_guard import shown_safely

    for value in _held_in(token):
        shown = shown_safely(value, {token}, length=length)
        assert not [piece for piece in _windows(token) if piece in shown], (value, shown)
        assert "***" in shown or (length is not None and len(shown) <= length + 3), (value, shown)


def test_a_shown_value_keeps_what_is_not_a_secret() -> None:
    from airflow_provider_namelookup.token_guard import shown_safely

    assert shown_safely({"email": "anna@example.com", "id": 6}, {TOKEN}) == "{'email': 'anna@example.com', 'id': 6}"
    assert shown_safely(None, {TOKEN}) == "None" and shown_safely(1.5, set(), length=2) == "1.…"
    nested: list[Any] = [TOKEN]
    for _ in range(100):  # deeper than values are masked one by one: the repr is still masked
        nested = [nested]
    assert TOKEN not in shown_safely(nested, {TOKEN})


@pytest.mark.parametrize("token", TOKENS.values(), ids=TOKENS.keys())
def test_the_invalid_values_summary_shows_no_piece_of_the_token(token: str) -> None:
    """The audit's line: ``key 6: {'email': 'AUDITtok3nXq7Zp9Lm2Vb8Rw4Ky6H): ...``, 28 of 30
    characters, cut from the repr of a dict before any masking."""
    from airflow_provider_namelookup.engine.invalid import InvalidValues
    from airflow_provider_namelookup.engine.ports import Question

    invalid = InvalidValues(secrets=frozenset({token}))
    for i, value in enumerate(_held_in(token)):
        error = NameLookupValidationError("parameter-first-name-invalid", f"rule {i}: {token} is wrong")
        invalid.note(error, Question(i, None, f"invalid:{i}", error, rows=1, first_key=token if i == 2 else i,
                                     shown=value))
    lines = invalid.lines()
    assert len(lines) == len(_held_in(token))
    leaked = [(piece, line) for line in lines for piece in _windows(token) if piece in line]
    assert leaked == []
