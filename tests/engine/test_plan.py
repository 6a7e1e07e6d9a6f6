"""The plan step: rows to validated queries and their hashes, pure functions, no I/O."""

from __future__ import annotations

import pytest

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules, plan_name, plan_value, query_hash
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import Query

GENDER = QueryRules(LookupKind.GENDER)


def test_same_question_same_hash_whatever_case_spacing_or_id() -> None:
    a = plan_name("Anna", GENDER, id=1, ref=1)
    b = plan_name("  ANNA ", GENDER, id=2, ref=2)
    assert a.query_hash == b.query_hash
    assert a.query is not None and (a.query.name, a.query.id) == ("Anna", 1)  # the caller's id kept for its result


def test_hints_endpoint_and_name_kind_change_the_hash() -> None:
    base = plan_name("Anna", GENDER, ref=1).query_hash
    assert plan_name("Anna", GENDER, country="DE", ref=1).query_hash != base
    assert plan_name("Anna", QueryRules(LookupKind.ORIGIN), ref=1).query_hash != base
    assert plan_name("Anna", QueryRules(LookupKind.GENDER, "full_name"), ref=1).query_hash != base


def test_hash_is_pinned() -> None:
    # Target tables store these hashes: changing how they are computed would make every
    # table look changed and pay for everything again. Change this pin only on purpose.
    q = Query(kind="first_name", name="Anna", country="DE")
    assert query_hash(LookupKind.GENDER, q) == "d74e62af6b935efc1235a45b24357457b06c3639"


def test_defaults_fill_missing_hints_only() -> None:
    spec = QueryRules(LookupKind.GENDER, default_country="DE", default_locale="de_DE")
    assert plan_name("Anna", spec, ref=1).query == Query("first_name", "Anna", country="DE", locale="de_DE")
    assert plan_name("Anna", spec, country="it", ref=1).query.country == "IT"  # type: ignore[union-attr]
    assert plan_name("Anna", spec, country="  ", ref=1).query.country == "DE"  # type: ignore[union-attr]
    obj = plan_value(SourceValue(1, {"full_name": "John Smith", "country": "US"}), spec)
    assert obj.query == Query("full_name", "John Smith", country="US", locale="de_DE")


def test_origin_rows_ignore_hints_and_defaults() -> None:
    spec = QueryRules(LookupKind.ORIGIN, default_country="XX")
    row = plan_name("Giulia", spec, country="nonsense", ref=1)
    assert row.error is None and row.query == Query("first_name", "Giulia")


def test_invalid_rows_carry_the_rule_and_a_hash_of_their_input() -> None:
    empty = plan_name("", GENDER, ref=7)
    assert empty.query is None and empty.error is not None
    assert empty.error.status_id == "parameter-first-name-invalid" and empty.error.field == "first_name"
    assert empty.query_hash.startswith("invalid:")
    assert plan_name("", GENDER, ref=8).query_hash == empty.query_hash
    assert plan_name("x" * 60, GENDER, ref=8).query_hash != empty.query_hash
    bad_country = plan_name("Anna", GENDER, country="Germany", ref=9)
    assert bad_country.error is not None and bad_country.error.status_id == "invalid-country-code"
    shape = NameLookupValidationError("mandatory-parameter-missing", "row 3 is an int")
    refused = plan_value(SourceValue(3, None, refusal=shape, shown=42), GENDER)
    assert refused.error is shape and refused.query is None and refused.query_hash == "invalid:3"


def test_bad_name_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="name_kind"):
        QueryRules(LookupKind.GENDER, "nickname")  # type: ignore[arg-type]


def test_rows_holding_the_token_are_refused_and_never_sent() -> None:
    spec = QueryRules(LookupKind.GENDER, secrets=frozenset({"tok-secret-123456"}))
    name = plan_name("Anna tok-secret-123456", spec, ref=1)
    assert name.query is None and name.error is not None
    assert (name.error.status_id, name.error.field) == ("parameter-first-name-invalid", "first_name")
    assert "tok-secret" not in str(name.error) and "tok-secret" not in name.query_hash
    by_id = plan_name("Anna", spec, id="tok-secret-123456", ref=2)
    assert by_id.error is not None and by_id.error.status_id == "invalid-id"
    assert plan_name("Anna", spec, ref=3).query is not None
    assert "tok-secret" not in repr(spec)


@pytest.mark.parametrize(("token", "real_names"), [
    ("t", ["Peter", "Tom", "Anna-Marie Tate", "theresa.t@example.com"]),
    ("dev", ["Sukhdev", "Jaidev", "Devika", "Dev", "Devon Smith", "dev.patel@example.com"]),
    ("Ann", ["Anna", "Hannah", "Ann Smith", "ann"]),
])
def test_a_short_token_never_refuses_a_real_name(token: str, real_names: list[str]) -> None:
    spec = QueryRules(LookupKind.GENDER, name_kind="full_name", secrets=frozenset({token}))
    for name in real_names:
        assert plan_name(name, spec, ref=name).query is not None, name
    leaked = plan_name(token, spec, ref="whole")  # the token itself as the whole value is still never sent
    assert leaked.query is None and leaked.error is not None and leaked.error.field == "full_name"


def test_a_long_token_is_refused_anywhere_in_a_name_or_id() -> None:
    token = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"  # shaped like a real service token (32 characters)
    spec = QueryRules(LookupKind.GENDER, name_kind="full_name", secrets=frozenset({token}))
    for name in (f"Anna {token}", f"{token}", f"x{token}y Smith"):
        row = plan_name(name, spec, ref=name)
        assert row.query is None and row.error is not None and token not in str(row.error)
    assert plan_name("Anna", spec, id=f"row-{token}", ref="id").error is not None
    assert plan_name("Anna Zq8wJd3 Smith", spec, ref="fine").query is not None  # a prefix is no secret


def test_the_spec_fingerprint_changes_with_what_shapes_a_question() -> None:
    base = QueryRules(LookupKind.GENDER).fingerprint
    assert QueryRules(LookupKind.GENDER, secrets=frozenset({"tok"})).fingerprint == base  # not the token
    changed = [QueryRules(LookupKind.GENDER, default_country="DE"), QueryRules(LookupKind.GENDER, default_locale="de"),
               QueryRules(LookupKind.GENDER, default_ip="1.2.3.4"), QueryRules(LookupKind.GENDER, "full_name"),
               QueryRules(LookupKind.ORIGIN)]
    assert len({base, *(spec.fingerprint for spec in changed)}) == 6
    # country of origin takes no hints, so a default hint does not change its questions
    assert QueryRules(LookupKind.ORIGIN, default_country="DE").fingerprint == QueryRules(LookupKind.ORIGIN).fingerprint


@pytest.mark.parametrize("kind", ["first_name", "full_name", "email"])
@pytest.mark.parametrize("lookup", [LookupKind.GENDER, LookupKind.ORIGIN])
def test_a_missing_name_is_reported_against_the_field_the_run_reads(kind: str, lookup: LookupKind) -> None:
    """Issue 50, item 3: a NULL full name in a ``name_kind="full_name"`` run was reported as
    ``mandatory-parameter-missing [first_name]``, a field the run never reads."""
    missing = plan_name(None, QueryRules(lookup, kind), ref=1)  # type: ignore[arg-type]
    assert missing.error is not None and missing.query is None
    assert (missing.error.status_id, missing.error.field) == ("mandatory-parameter-missing", kind)
    assert str(missing.error) == (f"mandatory-parameter-missing [{kind}]: {kind} is null; one of first_name, "
                                  "full_name or email must be set")


def test_last_names_make_full_names_and_their_rules_are_the_first_name_s() -> None:
    """Issue 50, item 2: a table's ``last_name_column`` beside its first names."""
    from airflow_provider_namelookup.engine.plan import build_query_object

    rules = QueryRules(LookupKind.GENDER, last_names=True)
    both = plan_value(SourceValue(1, build_query_object(" theresa ", rules, last_name="MILLER")), rules)
    assert both.query == Query("full_name", "theresa MILLER")
    assert both.query_hash == plan_name("Theresa Miller", QueryRules(LookupKind.GENDER, "full_name")).query_hash
    alone = [plan_value(SourceValue(1, build_query_object("Theresa", rules, last_name=last)), rules)
             for last in (None, "", "  ")]
    assert {q.query_hash for q in alone} == {plan_name("Theresa", GENDER).query_hash}  # the first name's
    no_first = plan_value(SourceValue(1, build_query_object(None, rules, last_name="Miller")), rules)
    assert no_first.error is not None and no_first.error.field == "first_name"
    with pytest.raises(NameLookupValidationError, match=r"parameter-full-name-invalid \[last_name\]: last_name "
                                                        "must be text, got int"):
        build_query_object("Theresa", rules, last_name=7)
    # reading last names (or no longer) changes what every row was enriched from: each row is read again
    assert rules.fingerprint != GENDER.fingerprint
    with pytest.raises(ValueError, match="name_kind must be 'first_name'"):
        QueryRules(LookupKind.GENDER, "full_name", last_names=True)
