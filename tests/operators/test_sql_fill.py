"""The fill step on real warehouses: a new table's plain insert, and charges that survive rewrites.

These drive the engine's pieces (source, value map, target) directly on SQLite,
PostgreSQL and MariaDB, to reach orders of events a whole operator run only meets by
chance: another run writing the same rows into a table this run has just created, and
two runs rewriting each other's rows in either order.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_namelookup.enrichment.plan import LookupKind, RowSpec, plan_row
from airflow_provider_namelookup.tables.answers import AnswersTable
from airflow_provider_namelookup.tables.schema import result_values, timestamp_value
from airflow_provider_namelookup.tables.session import WarehouseSession
from airflow_provider_namelookup.tables.source import TableSource
from airflow_provider_namelookup.tables.target import TargetTable
from airflow_provider_namelookup.tables.valuemap import MapEntry, ValueMap

pytestmark = pytest.mark.usefixtures("airflow_db")

ROWS = [(1, "Anna", "DE"), (2, "Anna", "DE"), (3, "Ben", None), (4, "", None)]
ANSWER = {"gender": "female", "probability": 0.98, "samples": 10, "result_found": True}


class Pieces:
    """One run's engine pieces over a customers table, with every valid query answered."""

    def __init__(self, warehouse: Any, table: str, owner: str) -> None:
        self.session = WarehouseSession(warehouse.hook)
        self.source = TableSource(self.session, table=table, key_column="customer_id", name_column="name",
                                  country_column="country")
        self.target = TargetTable(self.session, f"{table}_gender", "customer_id", LookupKind.GENDER)
        self.answers = AnswersTable(self.session, warehouse.answers_table)
        self.owner = owner
        self.planned = {(n, c): plan_row(None, n, RowSpec(LookupKind.GENDER), country=c) for _, n, c in ROWS}

    def answer_all(self) -> None:
        self.answers.ensure()
        hashes = sorted({p.query_hash for p in self.planned.values() if p.query is not None})
        claim = self.answers.claim(hashes, LookupKind.GENDER, owner=self.owner, lease_seconds=60)
        self.answers.store({h: result_values(LookupKind.GENDER, ANSWER) for h in claim.mine},
                           owner=self.owner, lookup=LookupKind.GENDER)

    def fill(self, *, charge: dict[tuple[Any, Any], int], new_table: bool) -> None:
        entries: list[MapEntry] = [
            (n, c, p.query_hash, None if p.error is None else str(p.error), charge.get((n, c)))
            for (n, c), p in self.planned.items()]
        value_map = ValueMap(self.session, self.source)
        value_map.create()
        try:
            value_map.load(entries)
            value_map.resolve(self.answers, LookupKind.GENDER)
            self.target.fill(self.source, value_map, new_table=new_table,
                             stamp=timestamp_value(datetime.now(UTC), self.session.dialect.name))
        finally:
            value_map.drop()

    def close(self) -> None:
        self.session.close()


@pytest.fixture
def pieces(warehouse: Any) -> Any:
    table = warehouse.create_customers(ROWS)
    made: list[Pieces] = []

    def make(owner: str) -> Pieces:
        made.append(Pieces(warehouse, table, owner))
        return made[-1]

    yield make
    for p in made:
        p.close()


def target_rows(p: Pieces) -> list[tuple[Any, ...]]:
    return p.session.fetchall(f"SELECT customer_id, status, credits_used, gender FROM {p.target.quoted} "
                              "ORDER BY customer_id")


@pytest.mark.database
def test_a_new_tables_insert_falls_back_to_an_upsert_when_another_run_wrote_rows(pieces: Any) -> None:
    mine, other = pieces("run-a"), pieces("run-b")
    mine.target.ensure(key_sample=1)
    mine.answer_all()
    other.fill(charge={}, new_table=False)  # the other run wrote every row first

    mine.fill(charge={("Anna", "DE"): 1, ("Ben", None): 3}, new_table=True)  # the plain insert would conflict

    assert target_rows(mine) == [(1, "ok", 1, "female"), (2, "ok", 0, "female"), (3, "ok", 1, "female"),
                                 (4, "error", 0, None)]


@pytest.mark.database
@pytest.mark.parametrize("payer_first", [True, False])
def test_a_charge_survives_another_run_rewriting_the_row_in_either_order(pieces: Any, payer_first: bool) -> None:
    payer, reader = pieces("run-a"), pieces("run-b")
    payer.target.ensure(key_sample=1)
    payer.answer_all()
    fills = [lambda: payer.fill(charge={("Anna", "DE"): 1, ("Ben", None): 3}, new_table=False),
             lambda: reader.fill(charge={}, new_table=False)]
    for fill in fills if payer_first else fills[::-1]:
        fill()

    rows = target_rows(payer)
    assert [r[2] for r in rows] == [1, 0, 1, 0]  # the payer's prices, whoever wrote last
    assert sum(r[2] for r in rows) == 2  # two distinct valid queries
