"""The plan step: rows to validated queries and their hashes, pure functions, no I/O."""

from __future__ import annotations

import pytest

from airflow_provider_namelookup.engine.plan import (
    LookupKind,
    RowSpec,
    distinct_queries,
    plan_query_object,
    plan_refused,
    plan_row,
    query_hash,
)
from airflow_provider_namelookup.models import Query

GENDER = RowSpec(LookupKind.GENDER)


def test_same_question_same_hash_whatever_case_spacing_or_id() -> None:
    a = plan_row(1, "Anna", GENDER, id=1)
    b = plan_row(2, "  ANNA ", GENDER, id=2)
    assert a.query_hash == b.query_hash
    assert len(distinct_queries([a, b])) == 1
    assert distinct_queries([a, b])[a.query_hash].id is None


def test_hints_endpoint_and_name_kind_change_the_hash() -> None:
    base = plan_row(1, "Anna", GENDER).query_hash
    assert plan_row(1, "Anna", GENDER, country="DE").query_hash != base
    assert plan_row(1, "Anna", RowSpec(LookupKind.ORIGIN)).query_hash != base
    assert plan_row(1, "Anna", RowSpec(LookupKind.GENDER, "full_name")).query_hash != base


def test_hash_is_pinned() -> None:
    # Target tables store these hashes: changing how they are computed would make every
    # table look changed and pay for everything again. Change this pin only on purpose.
    q = Query(kind="first_name", name="Anna", country="DE")
    assert query_hash(LookupKind.GENDER, q) == "d74e62af6b935efc1235a45b24357457b06c3639"


def test_defaults_fill_missing_hints_only() -> None:
    spec = RowSpec(LookupKind.GENDER, default_country="DE", default_locale="de_DE")
    assert plan_row(1, "Anna", spec).query == Query("first_name", "Anna", country="DE", locale="de_DE")
    assert plan_row(1, "Anna", spec, country="it").query.country == "IT"  # type: ignore[union-attr]
    assert plan_row(1, "Anna", spec, country="  ").query.country == "DE"  # type: ignore[union-attr]
    obj = plan_query_object(1, {"full_name": "John Smith", "country": "US"}, spec)
    assert obj.query == Query("full_name", "John Smith", country="US", locale="de_DE")


def test_origin_rows_ignore_hints_and_defaults() -> None:
    spec = RowSpec(LookupKind.ORIGIN, default_country="XX")
    row = plan_row(1, "Giulia", spec, country="nonsense")
    assert row.error is None and row.query == Query("first_name", "Giulia")


def test_invalid_rows_carry_the_rule_and_a_hash_of_their_input() -> None:
    empty = plan_row(7, "", GENDER)
    assert empty.query is None and empty.error is not None
    assert empty.error.status_id == "parameter-first-name-invalid" and empty.error.field == "first_name"
    assert empty.query_hash.startswith("invalid:")
    assert plan_row(8, "", GENDER).query_hash == empty.query_hash
    assert plan_row(8, "x" * 60, GENDER).query_hash != empty.query_hash
    bad_country = plan_row(9, "Anna", GENDER, country="Germany")
    assert bad_country.error is not None and bad_country.error.status_id == "invalid-country-code"
    refused = plan_refused(3, 42, GENDER, "row 3 is an int")
    assert refused.error is not None and refused.error.status_id == "mandatory-parameter-missing"


def test_bad_name_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="name_kind"):
        RowSpec(LookupKind.GENDER, "nickname")  # type: ignore[arg-type]


def test_rows_holding_the_token_are_refused_and_never_sent() -> None:
    spec = RowSpec(LookupKind.GENDER, secrets=frozenset({"tok-secret-123456"}))
    name = plan_row(1, "Anna tok-secret-123456", spec)
    assert name.query is None and name.error is not None
    assert (name.error.status_id, name.error.field) == ("parameter-first-name-invalid", "first_name")
    assert "tok-secret" not in str(name.error) and "tok-secret" not in name.query_hash
    by_id = plan_row(2, "Anna", spec, id="tok-secret-123456")
    assert by_id.error is not None and by_id.error.status_id == "invalid-id"
    assert plan_row(3, "Anna", spec).query is not None
    assert "tok-secret" not in repr(spec)


@pytest.mark.parametrize(("token", "real_names"), [
    ("t", ["Peter", "Tom", "Anna-Marie Tate", "theresa.t@example.com"]),
    ("dev", ["Sukhdev", "Jaidev", "Devika", "Dev", "Devon Smith", "dev.patel@example.com"]),
    ("Ann", ["Anna", "Hannah", "Ann Smith", "ann"]),
])
def test_a_short_token_never_refuses_a_real_name(token: str, real_names: list[str]) -> None:
    spec = RowSpec(LookupKind.GENDER, name_kind="full_name", secrets=frozenset({token}))
    for name in real_names:
        assert plan_row(name, name, spec).query is not None, name
    leaked = plan_row("whole", token, spec)  # the token itself as the whole value is still never sent
    assert leaked.query is None and leaked.error is not None and leaked.error.field == "full_name"


def test_a_long_token_is_refused_anywhere_in_a_name_or_id() -> None:
    token = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"  # shaped like a real service token (32 characters)
    spec = RowSpec(LookupKind.GENDER, name_kind="full_name", secrets=frozenset({token}))
    for name in (f"Anna {token}", f"{token}", f"x{token}y Smith"):
        row = plan_row(name, name, spec)
        assert row.query is None and row.error is not None and token not in str(row.error)
    assert plan_row("id", "Anna", spec, id=f"row-{token}").error is not None
    assert plan_row("fine", "Anna Zq8wJd3 Smith", spec).query is not None  # a prefix is no secret


def test_the_spec_fingerprint_changes_with_what_shapes_a_question() -> None:
    base = RowSpec(LookupKind.GENDER).fingerprint
    assert RowSpec(LookupKind.GENDER, secrets=frozenset({"tok"})).fingerprint == base  # not the token
    changed = [RowSpec(LookupKind.GENDER, default_country="DE"), RowSpec(LookupKind.GENDER, default_locale="de_DE"),
               RowSpec(LookupKind.GENDER, default_ip="1.2.3.4"), RowSpec(LookupKind.GENDER, "full_name"),
               RowSpec(LookupKind.ORIGIN)]
    assert len({base, *(spec.fingerprint for spec in changed)}) == 6
    # country of origin takes no hints, so a default hint does not change its questions
    assert RowSpec(LookupKind.ORIGIN, default_country="DE").fingerprint == RowSpec(LookupKind.ORIGIN).fingerprint
