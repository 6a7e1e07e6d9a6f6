"""warehouse/erasure.py on SQLite beyond the compliance suite's runs: pseudonymised tables matched by
keyed hash, a tombstone for a question with no answers row yet, and the checks of a request."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_namelookup.personal.pseudonym import pseudonym, pseudonymisation_key
from airflow_provider_namelookup.warehouse.erasure import Erasure, ErasureCounts, erase, period
from airflow_provider_namelookup.warehouse.schema import ANSWER_BOOKKEEPING, ANSWER_KEY, ANSWER_RESULTS
from airflow_provider_namelookup.warehouse.session import WarehouseSession

KEY = b"a key of the test's own, 32 bytes"


def _tables(house: Any) -> tuple[str, str]:
    """An answers table made as the engine makes it, and a target with the columns erasure reads."""
    answers, target = house.table_name("answers"), house.table_name("target")
    for statement in house.dialect.create_table(answers, ANSWER_KEY, (*ANSWER_BOOKKEEPING, *ANSWER_RESULTS)):
        house.hook.run(statement)
    house.hook.run(f"CREATE TABLE {target} (customer_id INTEGER PRIMARY KEY, gender TEXT, source_name TEXT, "
                   f"source_last_name TEXT, query_hash TEXT)")
    return answers, target


def _erase(house: Any, request: Erasure) -> ErasureCounts:
    session = WarehouseSession(house.hook, house.dialect)
    try:
        return asyncio.run(session.run(erase, session, request))
    finally:
        session.shutdown()


def _states(house: Any, answers: str) -> dict[str, str]:
    return dict(house.rows(f"SELECT query_hash, state FROM {answers}"))


def test_pseudonymised_tables_are_matched_by_the_keyed_hash_of_the_value(sqlite_warehouse: Any) -> None:
    house = sqlite_warehouse
    answers, target = _tables(house)
    house.hook.insert_rows(target, [(1, "female", pseudonym(KEY, "anna@example.com"), None, "h1"),
                                    (2, "male", pseudonym(KEY, "ben@example.com"), None, "h2")])
    house.hook.insert_rows(answers, [("h1", "gender", "answered", pseudonym(KEY, "Anna"), None),
                                     ("h2", "gender", "answered", pseudonym(KEY, "Ben"), None),
                                     ("h3", "gender", "answered", pseudonym(KEY, "Carla"), None)],
                           target_fields=["query_hash", "lookup", "state", "first_name", "last_name"])
    by_email = Erasure(answers_table=answers, target_tables=(target,), key_column="customer_id",
                       values=(" ANNA@example.com",), name_kind="email", pseudonym_key=KEY)
    assert _erase(house, by_email).as_dict()["target_rows_erased"] == 1
    by_name = Erasure(answers_table=answers, target_tables=(target,), key_column="customer_id",
                      values=("carla",), pseudonym_key=KEY)
    assert _erase(house, by_name).answers_erased == 1  # an answer no target row asks any more
    assert [r[0] for r in house.rows(f"SELECT customer_id FROM {target}")] == [2]
    assert _states(house, answers) == {"h1": "erased", "h2": "answered", "h3": "erased"}
    in_clear = Erasure(answers_table=answers, target_tables=(target,), key_column="customer_id", values=("ben",))
    assert _erase(house, in_clear).answers_erased == 0  # clear values match no pseudonym


def test_a_question_without_an_answers_row_gets_a_tombstone_once(sqlite_warehouse: Any) -> None:
    """A row whose question a run may be about to claim: its tombstone is there before the claim."""
    house = sqlite_warehouse
    answers, target = _tables(house)
    house.hook.insert_rows(target, [(7, "female", "Zoë", None, "h7")])
    request = Erasure(answers_table=answers, target_tables=(target,), key_column="customer_id", keys=(7,))
    first = _erase(house, request)
    assert (first.target_rows, first.answers_erased) == ({target: 1}, 0)
    assert _states(house, answers) == {"h7": "erased"}
    again = _erase(house, request)
    assert (again.target_rows, again.answers_erased, again.tombstones_removed) == ({target: 0}, 0, 0)
    assert house.rows(f"SELECT first_name, lease_expires > 0 FROM {answers}") == [(None, 1)]


def test_a_missing_table_is_named_without_a_value(sqlite_warehouse: Any) -> None:
    answers, _ = _tables(sqlite_warehouse)
    request = Erasure(answers_table=answers, target_tables=("no_such_target",), key_column="customer_id",
                      values=("anna@example.com",), name_kind="email")
    with pytest.raises(ValueError, match="target_tables: table no_such_target does not exist") as raised:
        _erase(sqlite_warehouse, request)
    assert "anna" not in str(raised.value)


@pytest.mark.parametrize(("given", "expected"), [
    ("P30D", timedelta(days=30)), ("p2w", timedelta(weeks=2)), ("PT12H30M", timedelta(hours=12, minutes=30)),
    ("P1Y6M", timedelta(days=545)), ("PT0.5S", timedelta(seconds=0.5)), (3600, timedelta(hours=1)),
    (timedelta(days=1), timedelta(days=1)), (None, None),
])
def test_periods_are_timedeltas_seconds_or_iso_durations(given: Any, expected: timedelta | None) -> None:
    assert period(given, "retention") == expected


@pytest.mark.parametrize("given", ["P", "PT", "30d", "P-1D", "P0D", 0, -5, True, timedelta(seconds=-1), [1]])
def test_a_bad_period_names_the_argument_and_the_rule(given: Any) -> None:
    with pytest.raises(ValueError, match=r"^older_than must be a positive timedelta, number of seconds or ISO-8601"):
        period(given, "older_than")


def test_a_request_shows_no_key_or_value() -> None:
    request = Erasure(answers_table="a", target_tables=("t",), key_column="id", keys=(4711,), values=("anna",),
                      pseudonym_key=KEY)
    assert "4711" not in repr(request) and "anna" not in repr(request) and "key of the test" not in repr(request)


def test_a_pseudonym_is_of_the_normalised_value_and_needs_the_key() -> None:
    assert pseudonym(KEY, "  Anna\u00a0 Smith ") == pseudonym(KEY, "anna smith") != pseudonym(b"other", "anna smith")
    assert len(pseudonym(KEY, "anna")) == 64


def test_a_missing_pseudonymisation_key_says_how_to_make_one() -> None:
    from tests.support import set_connection

    set_connection("namelookup_pseudonymisation_empty", {"conn_type": "generic"})
    with pytest.raises(ValueError, match="holds no key: set its password to a long random secret"):
        pseudonymisation_key("namelookup_pseudonymisation_empty")


def test_a_row_filled_from_an_answer_read_before_its_erasure_is_deleted_after_the_fill(
        sqlite_warehouse: Any, emulator: Any, make_account: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The erasure comes between a run's snapshot of the answers (the resolved map) and its fill: the
    fill writes the person's new row from the snapshot, and the run deletes it at once."""
    from airflow_provider_namelookup.testing.compliance import ComplianceAccount, enrich, erase_people
    from airflow_provider_namelookup.warehouse.valuemap import ValueMap

    house, account = sqlite_warehouse, ComplianceAccount(emulator, make_account(credits=100))
    table = house.create_customers([(1, "Theresa", None), (2, "John", None)])
    enrich(house, account, table)
    house.insert(table, [(3, "theresa", None)])  # the person's new row: answered from the answers table
    resolve = ValueMap.resolve
    erased: list[ErasureCounts] = []

    def resolve_then_erase(self: ValueMap, *args: Any, **kwargs: Any) -> None:
        resolve(self, *args, **kwargs)
        erased.append(erase_people(house, table, keys=(1,), values=("Theresa",)))

    monkeypatch.setattr(ValueMap, "resolve", resolve_then_erase)
    summary = enrich(house, account, table)
    monkeypatch.setattr(ValueMap, "resolve", resolve)
    assert summary["rows_enriched"] == 1 and erased[0].answers_erased == 1  # row 3 was written, then deleted
    assert [r[0] for r in house.rows(f"SELECT customer_id FROM {table}_gender")] == [2]
    assert enrich(house, account, table)["lookups"] == 1 and 100 - account.remaining() == 3
