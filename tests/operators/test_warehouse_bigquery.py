"""The whole-run tests of the issue's list that the ``warehouse`` fixture does not run on every
engine (they run on SQLite there), run on BigQuery's statements too: bqemulator behind the real
``BigQueryHook`` (``tests/bigquery_emulator.py``). The rest of the list (first run, rerun,
changed names, invalid rows, country of origin, credits running out midway) runs on BigQuery
through the ``warehouse`` fixture.

Example (bqemulator installed once; without it these tests are skipped)::

    make bigquery-emulator
    pytest tests/operators/test_warehouse_bigquery.py
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.operators.test_warehouse import (  # noqa: F401  (run here on BigQuery)
    test_a_budget_fails_whole_or_spends_part_and_the_next_run_the_rest,
    test_plan_only_counts_credits_and_creates_nothing,
)
from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

house = warehouses("bigquery")
"""BigQuery for the two tests imported above, which test_warehouse.py runs on SQLite."""


STORE_STATEMENTS = {"load": b"INSERT INTO `analytics`.`namelookup_incoming_", "update": b"SET state = 'answered'"}
"""What marks a store's two statements on the wire: the answers loaded into the incoming table, then
moved into the answers table."""


@pytest.mark.parametrize("statement", STORE_STATEMENTS)
@pytest.mark.parametrize("after_forwarding", [False, True], ids=["request-lost", "answer-lost"])
def test_a_connection_cut_mid_store_loses_no_paid_answer(bigquery_warehouse: Any, namelookup: Any,
                                                         bigquery_emulator: Any, after_forwarding: bool,
                                                         statement: str) -> None:
    """The network cuts one of the store's statements once: before BigQuery sees it, or after it ran and
    before its answer came back. google-cloud-bigquery sends it again; every answer paid for is stored,
    once."""
    import os
    from urllib.parse import urlsplit

    from airflow_provider_namelookup.operators import SqlGenderLookupOperator
    from tests.cutting_proxy import CuttingProxy

    house = bigquery_warehouse
    table = house.create_customers([(i, f"Name{i % 150:03d}", None) for i in range(1, 401)])
    namelookup.set_credits(1000)
    server = urlsplit(bigquery_emulator.url)
    with CuttingProxy((server.hostname, server.port), STORE_STATEMENTS[statement],
                      after_forwarding=after_forwarding) as proxy:
        os.environ["BIGQUERY_EMULATOR_HOST"] = proxy.url
        try:
            summary = SqlGenderLookupOperator(task_id="enrich", conn_id=house.conn_id, source_table=table,
                                              key_column="customer_id", name_column="name").execute({})
        finally:
            os.environ["BIGQUERY_EMULATOR_HOST"] = bigquery_emulator.url
    assert proxy.cuts == 1
    assert summary["credits_used"] == 150 == 1000 - namelookup.remaining()
    assert house.rows(f"SELECT status, COUNT(*) FROM {table}_gender GROUP BY status") == [("ok", 400)]
    stored = house.rows(f"SELECT state, COUNT(*), COUNT(DISTINCT query_hash) FROM {house.answers_table} "
                        f"GROUP BY state")
    assert stored == [("answered", 150, 150)]
    assert house.rows(f"SELECT SUM(credits_used) FROM {table}_gender") == [(150,)]
