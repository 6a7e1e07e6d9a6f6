"""Property: whatever names a table holds, every row ends ``ok`` or ``error``, none lost,
and the credits spent equal the distinct valid queries."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_namelookup.operators import SqlGenderLookupOperator

names = st.one_of(
    st.text(max_size=120).map(lambda s: s.replace("\x00", "")),
    st.sampled_from(["Anna", "anna ", "", " ", "x" * 51, "'; DROP TABLE t; --", "Zoë", "O'Brien", "王秀英"]),
    st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(allow_nan=False),
)
countries = st.one_of(st.none(), st.sampled_from(["DE", "it", "XX", "", "Germany"]))
tables = st.lists(st.tuples(names, countries), min_size=1, max_size=25)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=tables)
def test_every_row_ends_ok_or_error(rows: list[tuple[Any, Any]], sqlite_warehouse: Any, namelookup: Any) -> None:
    namelookup.set_credits(10_000)
    table = sqlite_warehouse.create_customers([(i, n, c) for i, (n, c) in enumerate(rows, start=1)],
                                              name=f"props_{uuid.uuid4().hex[:8]}")
    sqlite_warehouse.created += [table, f"{table}_gender"]
    op = SqlGenderLookupOperator(task_id="enrich", sql_conn_id=sqlite_warehouse.conn_id, source_table=table,
                                 key_column="customer_id", name_column="name", country_column="country")
    summary = op.execute({})
    outcome = dict(sqlite_warehouse.rows(f"SELECT customer_id, status FROM {table}_gender"))
    assert set(outcome) == set(range(1, len(rows) + 1))
    assert set(outcome.values()) <= {"ok", "error"}
    assert summary["rows_enriched"] + summary["rows_invalid"] == len(rows)
    assert 10_000 - namelookup.remaining() == summary["lookups"] == summary["credits_used"]


NAMES = ["Anna", "anna ", "Ben", "Carla", "Dora", "Emil", "", "x" * 60, None]
steps = st.lists(st.tuples(st.sampled_from(["insert", "rename", "delete"]), st.integers(0, 10 ** 6),
                           st.sampled_from(NAMES)), min_size=1, max_size=4)


@pytest.mark.database
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(st.sampled_from(NAMES), min_size=1, max_size=12), changes=steps)
def test_the_credits_of_a_target_add_up_to_what_its_answers_cost(start: list[Any], changes: list[Any],
                                                                 warehouse: Any, namelookup: Any) -> None:
    """Issue 19, item 9: after any sequence of inserts, name changes and deletes, SUM(credits_used)
    is the price of the distinct answered queries the target holds, each carried by one row."""
    namelookup.set_credits(10_000)
    table = warehouse.create_customers([(i, n, None) for i, n in enumerate(start, start=1)],
                                       name=f"props_{uuid.uuid4().hex[:8]}")
    warehouse.created += [table, f"{table}_gender"]
    # this target's own answers table: every answer it holds was paid for it
    answers = warehouse.qualified(f"ans_{uuid.uuid4().hex[:8]}")
    warehouse.created.append(answers)

    def enrich_and_check() -> None:
        SqlGenderLookupOperator(task_id="enrich", sql_conn_id=warehouse.conn_id, source_table=table,
                                key_column="customer_id", name_column="name", answers_table=answers,
                                check_remaining_credits=False).execute({})
        rows = warehouse.rows(f"SELECT customer_id, query_hash, credits_used, status FROM {table}_gender")
        held = {h for _, h, _, status in rows if status == "ok"}
        assert sum(c for _, _, c, _ in rows) == len(held)
        carriers = [k for k, _, c, _ in rows if c]
        lowest = {h: min(k for k, h2, _, s in rows if h2 == h and s == "ok") for h in held}
        assert sorted(carriers) == sorted(lowest.values())  # the lowest key holding each query

    enrich_and_check()
    next_key = len(start) + 1
    for action, pick, name in changes:
        keys = [r[0] for r in warehouse.rows(f"SELECT customer_id FROM {table}")]
        if action == "insert" or not keys:
            warehouse.insert(table, [(next_key, name, None)])
            next_key += 1
        elif action == "rename":
            warehouse.set_name(table, keys[pick % len(keys)], name)
        else:
            warehouse.hook.run(f"DELETE FROM {table} WHERE customer_id = {keys[pick % len(keys)]}")
        enrich_and_check()
