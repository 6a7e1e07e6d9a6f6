"""Property: whatever names a table holds, every row ends ``ok`` or ``error``, none lost,
and the credits spent equal the distinct valid queries."""

from __future__ import annotations

import uuid
from typing import Any

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
