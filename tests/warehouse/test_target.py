"""The fill on real warehouses: a new table's insert, upserts, and one price per query held.

These drive the warehouse adapters directly on SQLite, PostgreSQL and MariaDB, to reach
orders of events whole operator runs only meet by chance: another run writing the same
rows into a table this run has just created, and two runs rewriting each other's rows in
either order.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, plan_value
from airflow_provider_namelookup.engine.ports import RunOutcome
from airflow_provider_namelookup.warehouse.answers import AnswersTable
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import FirstRow, TableQuestions, TableSource
from airflow_provider_namelookup.warehouse.target import TargetTable
from airflow_provider_namelookup.warehouse.valuemap import ValueMap

pytestmark = pytest.mark.usefixtures("airflow_db")

ROWS = [(1, "Anna", "DE"), (2, "Anna", "DE"), (3, "Ben", None), (4, "", None)]
ANSWER = {"gender": "female", "probability": 0.98, "details": {"samples": 10}, "result_found": True}
SPEC = QueryRules(LookupKind.GENDER)


class Pieces:
    """One run's warehouse adapters over a customers table."""

    def __init__(self, warehouse: Any, table: str, owner: str) -> None:
        self.session = WarehouseSession(warehouse.hook)
        source = TableSource(self.session.dialect, table=table, key_column="customer_id", name_column="name",
                             country_column="country")
        self.map = ValueMap(self.session, source.names(with_params=False))
        self.target_name = f"{table}_gender"
        self.answers = AnswersTable(self.session, warehouse.answers_table, self.map, lookup=LookupKind.GENDER,
                                    paid_for=self.target_name, owner=owner.ljust(32, "0"), lease_seconds=60)
        self.target = TargetTable(self.session, self.target_name, source, self.map, self.answers.quoted, SPEC,
                                  stamp=self.session.dialect.timestamp(datetime.now(UTC)), first_row=FirstRow(1))
        self.source = TableQuestions(self.session, source, SPEC, self.target)

    async def _read(self, *, pay: bool) -> RunOutcome:
        await self.source.prepare()
        await self.target.prepare(create=True)
        await self.answers.prepare(create=True)
        questions = [plan_value(v, SPEC) async for page in self.source.pages() for v in page]
        await self.answers.register(questions)
        hashes = sorted({q.query_hash for q in questions if q.valid})
        paid: set[str] = set()
        if pay:
            for claim in self.answers.plan_claims(hashes):
                outcome = await self.answers.claim(claim)
                paid |= await self.answers.store({h: ANSWER for h in outcome.mine})
        return RunOutcome(questions, answered=set(hashes), paid_here=paid, deferred=set())

    def read(self, *, pay: bool) -> RunOutcome:
        return asyncio.run(self._read(pay=pay))

    def fill(self, outcome: RunOutcome) -> None:
        asyncio.run(self.target.fill(outcome))

    def rows(self) -> list[tuple[Any, ...]]:
        sql = f"SELECT customer_id, status, credits_used, gender FROM {self.target.quoted} ORDER BY customer_id"
        return asyncio.run(self.session.run(self.session.fetchall, sql))

    def close(self) -> None:
        """Drop the run's stage as a run's end does (PostgreSQL's is a table of the warehouse's), then close."""
        asyncio.run(self.session.run(self.map.drop))
        self.session.shutdown()


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


@pytest.mark.database
def test_a_new_tables_fill_becomes_an_upsert_when_another_run_wrote_the_rows_first(pieces: Any) -> None:
    mine = pieces("a")
    outcome = mine.read(pay=True)  # this run creates the table (or, on PostgreSQL, will create it at its fill)
    other = pieces("b")
    other.fill(other.read(pay=False))  # another run wrote every row first

    mine.fill(outcome)  # the plain insert (or CREATE TABLE AS) would conflict

    assert mine.rows() == [(1, "ok", 1, "female"), (2, "ok", 0, "female"), (3, "ok", 1, "female"),
                           (4, "error", 0, None)]


@pytest.mark.database
@pytest.mark.parametrize("payer_first", [True, False])
def test_one_row_per_query_carries_its_price_whoever_writes_last(pieces: Any, payer_first: bool) -> None:
    payer, reader = pieces("a"), pieces("b")
    paid = payer.read(pay=True)
    read = reader.read(pay=False)
    fills = [lambda: payer.fill(paid), lambda: reader.fill(read)]
    for fill in fills if payer_first else fills[::-1]:
        fill()

    rows = payer.rows()
    assert [r[2] for r in rows] == [1, 0, 1, 0]  # the lowest key of each query, whoever wrote last
    assert sum(r[2] for r in rows) == 2  # two distinct valid queries


@pytest.mark.database
def test_an_unchanged_table_is_read_as_nothing_to_do(pieces: Any, warehouse: Any) -> None:
    first = pieces("a")
    first.fill(first.read(pay=True))
    again = pieces("b")
    outcome = again.read(pay=False)
    assert outcome.questions == [] and again.source.total_rows == 4  # every row unchanged
    warehouse.hook.run(f"UPDATE {first.target_name[:-len('_gender')]} SET name = 'Carla' WHERE customer_id = 2")
    changed = pieces("c").read(pay=False)
    assert [q.ref for q in changed.questions] == [("Carla", "DE", None)]  # (name, country, last name)
