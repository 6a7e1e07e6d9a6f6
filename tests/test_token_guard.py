"""The token rule shared by the hooks and the planner (airflow_provider_namelookup.token_guard)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.api import as_query, prepare_queries
from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import RowSpec, plan_query_object, plan_row
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
    spec = RowSpec(LookupKind.GENDER, secrets=frozenset({TOKEN}))
    row = plan_row(1, "Anna", spec, country=TOKEN)
    assert row.error is not None and row.error.field == "country" and TOKEN not in str(row.error)
    row = plan_query_object(2, {"first_name": "Anna", "locale": TOKEN}, spec)
    assert row.error is not None and row.error.field == "locale" and TOKEN not in str(row.error)
