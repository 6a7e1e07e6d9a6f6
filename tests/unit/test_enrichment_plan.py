"""The plan step and the credit budget: pure functions, no I/O."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_namelookup.enrichment.budget import CreditBudget
from airflow_provider_namelookup.enrichment.plan import (
    LookupKind,
    RowSpec,
    distinct_queries,
    plan_query_object,
    plan_refused,
    plan_row,
    query_hash,
)
from airflow_provider_namelookup.errors import NameLookupInsufficientCredits
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.tables.identifiers import check_identifier
from airflow_provider_namelookup.tables.schema import Column, column_type, key_column_for, result_values

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


def test_budget_fail_mode_refuses_before_spending() -> None:
    with pytest.raises(NameLookupInsufficientCredits) as info:
        CreditBudget.decide(needed=30, max_credits=None, remaining=20, mode="fail")
    assert (info.value.needed, info.value.available) == (30, 20)
    assert "needs 30 credits but only 20" in str(info.value) and "remaining" in str(info.value)
    with pytest.raises(NameLookupInsufficientCredits, match="max_credits=10"):
        CreditBudget.decide(needed=30, max_credits=10, remaining=100, mode="fail")


def test_budget_partial_mode_grants_what_fits() -> None:
    budget = CreditBudget.decide(needed=30, max_credits=None, remaining=9, mode="partial")
    assert budget.grant(4, cost=2) == 4
    assert budget.grant(4, cost=2) == 0  # 1 credit left, a query costs 2
    budget.refund(1, cost=2)
    assert budget.grant(4, cost=2) == 1 and budget.spent == 8


def test_budget_without_limits_is_unlimited() -> None:
    budget = CreditBudget.decide(needed=10**6, max_credits=None, remaining=None, mode="fail")
    assert budget.allowance is None and budget.grant(10**6, cost=2) == 10**6
    with pytest.raises(ValueError, match="on_insufficient_credits"):
        CreditBudget.decide(needed=1, max_credits=1, remaining=1, mode="maybe")  # type: ignore[arg-type]


def test_result_values_are_tolerant_and_fit_their_columns() -> None:
    values = result_values(LookupKind.GENDER, {"gender": "female" * 10, "probability": 1, "result_found": True,
                                               "details": {"samples": 12, "country": None}, "first_name": None})
    assert values == ("femalefemalefema", 1.0, 1, 12, None, None, None)
    assert result_values(LookupKind.GENDER, {}) == (None,) * 7
    origin = result_values(LookupKind.ORIGIN, {"country_of_origin": [{"country": "IT", "probability": 0.5}],
                                               "ethnicity": {"id": "ITALIAN"}})
    assert origin[5:9] == ("IT", 0.5, None, "ITALIAN") and origin[-1].startswith("{")


def test_column_types_and_keys() -> None:
    assert column_type(Column("x", "timestamp"), "mysql") == "DATETIME(6)"
    assert column_type(Column("x", "float"), "oracle") == "DOUBLE PRECISION"
    assert key_column_for("id", 5).kind == "bigint" and key_column_for("id", "a").kind == "text"
    with pytest.raises(ValueError, match="integers or text"):
        key_column_for("id", 1.5)


@pytest.mark.parametrize("bad", ["", "1abc", "a-b", "a b", "a;drop", "a.b.c", "é", None, 5, "a" * 64])
def test_identifiers_are_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="plain SQL identifier"):
        check_identifier(bad, "source_table", qualified=True)


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


def _table_run(spec: RowSpec) -> Any:
    from types import SimpleNamespace

    from airflow_provider_namelookup.tables.run import TableJob, TableRun

    target = SimpleNamespace(name="customers_gender", dialect="sqlite")
    job = TableJob(session=None, source=SimpleNamespace(label="customers"), target=target,  # type: ignore[arg-type]
                   answers=None, spec=spec)  # type: ignore[arg-type]
    return TableRun(job, hook=None, log=logging.getLogger("test"))  # type: ignore[arg-type]


def test_table_run_plans_each_distinct_value_once_and_counts_its_rows() -> None:
    run = _table_run(RowSpec(LookupKind.GENDER))
    # (name, country, hash its rows have in the target, rows, lowest key): the distinct pass's output.
    for value in [("Anna", "DE", None, 5, 20), ("Anna", "FR", None, 2, 3), ("Anna", "DE", "old-hash", 3, 11),
                  ("", None, None, 4, 1)]:
        run._take(value)
    anna_de = plan_row(9, "Anna", GENDER, country="DE").query_hash
    assert run.rows_by_hash[anna_de] == 8 and len(run.queries) == 2
    assert run.first_rows[anna_de][0] == 11  # the row that will carry the query's price
    assert len(run.entries) == 3  # one map entry per raw value, whatever the stored hashes
    assert (run.progress.rows_read, run.progress.rows_invalid) == (14, 4)
    info = run._plan_value.cache_info()
    assert (info.hits, info.misses) == (1, 3)
    run._take(("Anna", "DE", anna_de, 6, 2))  # rows already enriched with the same query
    assert run.progress.rows_unchanged == 6 and run.rows_by_hash[anna_de] == 8


def test_table_run_plans_values_that_cannot_be_memoised() -> None:
    run = _table_run(RowSpec(LookupKind.GENDER))
    for name in (["Anna"], {"first": "Anna"}, 1, 1.0):
        planned = run._plan(name, None)
        assert planned.query is None
        assert planned.error is not None and planned.error.field == "first_name"
