"""SqlNameLookupErasureOperator in real DAG runs (issue 49, items 3 and 4): people erased by key and by
value leave the target and the answers table and nothing else does, the next enrichment pays only for
them again, and no key or value shows in the task's log or XCom. Every warehouse keeps the same
promises through the compliance suite (tests/warehouse/test_compliance.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_namelookup.operators import SqlNameLookupErasureOperator

pytestmark = pytest.mark.usefixtures("airflow_db")

PEOPLE = [
    (1, "anna.miller@example.com"), (2, "ben.fox@example.com"), (3, "Carla.Rossi@Example.com"),
    (4, "dora.lee@example.com"), (5, "emil.berg@example.com"), (6, "fritz.hahn@example.com"),
]
ERASED = {1, 2, 3}


def _enrich_task(house: Any, table: str) -> str:
    return (f"SqlGenderLookupOperator(task_id='enrich', conn_id={house.conn_id!r}, source_table={table!r}, "
            f"key_column='customer_id', name_column='name', name_kind='email', answers_table={house.answers_table!r})")


def _erase_task(house: Any, table: str) -> str:
    return f"""
        from airflow_provider_namelookup.operators import SqlNameLookupErasureOperator
        SqlNameLookupErasureOperator(task_id='erase', conn_id={house.conn_id!r}, answers_table={house.answers_table!r},
                                     target_tables=[{table + '_gender'!r}], key_column='customer_id', keys=[1, 2],
                                     values=[' carla.rossi@example.com'], name_kind='email')
    """


def _target(house: Any, table: str) -> dict[int, tuple[Any, ...]]:
    rows = house.rows(f"SELECT customer_id, gender, status, credits_used, query_hash, source_name FROM {table}_gender")
    return {int(r[0]): tuple(r[1:]) for r in rows}


def _answers(house: Any) -> dict[str, str]:
    return {r[0]: r[1] for r in house.rows(f"SELECT query_hash, state FROM {house.answers_table}")}


@pytest.mark.database
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_erasing_two_people_by_key_and_one_by_value_costs_only_them_again(
        kind: str, request: pytest.FixtureRequest, write_dag: Any, namelookup: Any,
        caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    house = request.getfixturevalue(f"{kind}_warehouse")
    table = house.create_customers([(key, email, None) for key, email in PEOPLE])
    enrich = write_dag(_enrich_task(house, table))
    assert str(enrich.run().state) == "success"
    assert namelookup.remaining() == 100 - len(PEOPLE)
    before, answers_before = _target(house, table), _answers(house)
    erased_hashes = {before[k][3] for k in ERASED}

    caplog.clear()
    erase = write_dag(_erase_task(house, table))
    assert str(erase.run().state) == "success"
    counts = erase.xcom("erase")
    assert (counts["target_rows_erased"], counts["answers_erased"]) == (3, 3)
    assert counts["target_rows"] == {f"{table}_gender": 3}
    after = _target(house, table)
    assert after == {k: r for k, r in before.items() if k not in ERASED}  # nothing else
    answers = _answers(house)
    assert {h for h, state in answers.items() if state == "erased"} == erased_hashes
    assert {h: s for h, s in answers.items() if h not in erased_hashes} == \
        {h: s for h, s in answers_before.items() if h not in erased_hashes}
    shown = repr(counts) + caplog.text + "".join(capfd.readouterr())
    assert "Erased 3 target rows" in shown
    for _, email in PEOPLE[:3]:  # neither a value nor its local part, in any case
        assert email.split("@")[0].lower() not in shown.lower()

    assert str(erase.run().state) == "success"  # idempotent
    again = erase.xcom("erase")
    assert (again["target_rows_erased"], again["answers_erased"]) == (0, 0)

    assert str(enrich.run().state) == "success"
    assert enrich.xcom("enrich")["lookups"] == 3
    assert namelookup.remaining() == 100 - len(PEOPLE) - 3  # the emulator charged only the three again
    assert sorted(_target(house, table)) == [key for key, _ in PEOPLE]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"keys": [1]}, "key_column is required with keys or values"),
    ({"keys": [1], "key_column": "id"}, "target_tables is required"),
    ({}, "give keys, values or older_than"),
    ({"values": ["anna@example.com", " "], "key_column": "id", "target_tables": ["t"]},
     "values must be non-blank strings: item 2 is blank"),
    ({"keys": [1, None], "key_column": "id", "target_tables": ["t"]},
     "keys must be strings or numbers: item 2 is NoneType"),
    ({"values": "anna@example.com", "key_column": "id", "target_tables": ["t"]}, "values must be a list"),
    ({"older_than": "30 days"}, "older_than must be a positive timedelta"),
    ({"older_than": timedelta(0)}, "older_than must be a positive"),
    ({"values": ["x"], "name_kind": "nickname", "key_column": "id", "target_tables": ["t"]},
     "name_kind must be one of"),
    ({"keys": [1], "key_column": "id; drop", "target_tables": ["t"]}, "key_column"),
])
def test_bad_requests_fail_when_the_dag_is_parsed_naming_the_argument_not_the_value(
        arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        SqlNameLookupErasureOperator(task_id="erase", conn_id="warehouse", answers_table="namelookup_answers",
                                     **arguments)
    assert "anna" not in str(raised.value)


def test_retention_is_checked_on_the_table_operators() -> None:
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    args = {"task_id": "t", "conn_id": "w", "source_table": "s", "key_column": "id", "name_column": "n"}
    assert SqlGenderLookupOperator(**args, retention="P90D").retention == timedelta(days=90)
    assert SqlGenderLookupOperator(**args, retention="PT36H").retention == timedelta(hours=36)
    with pytest.raises(ValueError, match="retention must be a positive timedelta, number of seconds or ISO-8601"):
        SqlGenderLookupOperator(**args, retention="-P1D")


@pytest.mark.database
def test_a_full_name_kept_as_two_pseudonyms_is_erased_by_its_value(sqlite_warehouse: Any, write_dag: Any,
                                                                     namelookup: Any) -> None:
    """A run with ``last_name_column`` keeps a first and a last name as two pseudonyms (pseudonymised by
    default), and the erasure of ``name_kind='full_name'`` (pseudonymised by default too) finds the person
    by the full name however its words were split between the two columns, in the target and in the
    answers' echoes; the other person with the same first name stays."""
    house = sqlite_warehouse
    table = house.create_people([(1, "Anna Maria", "Miller", None), (2, "Anna", "Maria Miller", None),
                                 (3, "Anna Maria", "Schmidt", None), (4, "John", "Smith", None)])
    enrich = write_dag(f"SqlGenderLookupOperator(task_id='enrich', conn_id={house.conn_id!r}, "
                       f"source_table={table!r}, key_column='customer_id', name_column='name', "
                       f"last_name_column='last_name', answers_table={house.answers_table!r})")
    assert str(enrich.run().state) == "success"
    paid = 100 - namelookup.remaining()
    names = house.rows(f"SELECT source_name, source_last_name FROM {table}_gender")
    assert all(len(first) == len(last) == 64 for first, last in names)  # pseudonyms, not names
    erase = write_dag(f"""
        from airflow_provider_namelookup.operators import SqlNameLookupErasureOperator
        SqlNameLookupErasureOperator(task_id='erase', conn_id={house.conn_id!r}, answers_table={house.answers_table!r},
                                     target_tables=[{table + '_gender'!r}], key_column='customer_id',
                                     values=['anna maria  MILLER'], name_kind='full_name')
    """)
    assert str(erase.run().state) == "success"
    assert erase.xcom("erase")["target_rows_erased"] == 2
    assert sorted(r[0] for r in house.rows(f"SELECT customer_id FROM {table}_gender")) == [3, 4]
    assert str(enrich.run().state) == "success"  # only the erased person's questions are asked again
    assert 100 - namelookup.remaining() == paid + enrich.xcom("enrich")["credits_used"]
    assert enrich.xcom("enrich")["lookups"] == 1  # rows 1 and 2 ask one question: anna maria miller
