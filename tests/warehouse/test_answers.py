"""The shared answers table on real warehouses: claims with leases, stores, releases."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, plan_value
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.warehouse import answers as answers_module
from airflow_provider_namelookup.warehouse.answers import AnswersTable
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import TableSource
from airflow_provider_namelookup.warehouse.valuemap import ValueMap

pytestmark = pytest.mark.usefixtures("airflow_db")
SPEC = QueryRules(LookupKind.GENDER)
NAMES = ["Anna", "Ben", "Carla", "Dora", "Emil"]
ANSWER = {"gender": "female", "probability": 0.9}


class Run:
    """One run's answers table (and the map it claims from), driven step by step."""

    def __init__(self, warehouse: Any, table: str, owner: str, lease: float = 60.0, chunk: int = 10_000) -> None:
        self.session = WarehouseSession(warehouse.hook)
        source = TableSource(self.session.dialect, table=table, key_column="customer_id", name_column="name")
        self.answers = AnswersTable(self.session, warehouse.answers_table,
                                    ValueMap(self.session, source.names(with_params=False)),
                                    lookup=LookupKind.GENDER, paid_for="t", owner=owner.ljust(32, "0"),
                                    lease_seconds=lease, claim_chunk=chunk)
        self.questions = [plan_value(SourceValue((n, None, None), {"first_name": n}, first_key=i), SPEC)
                          for i, n in enumerate(NAMES)]
        self.hashes = [q.query_hash for q in self.questions]

    def do(self, step: Any) -> Any:
        return asyncio.run(step)

    def start(self) -> None:
        self.do(self.answers.prepare(create=True))
        self.do(self.answers.register(self.questions))

    def claim_all(self) -> Any:
        outcomes = [self.do(self.answers.claim(c)) for c in self.answers.plan_claims(self.hashes)]
        mine = [h for o in outcomes for h in o.mine]
        held = set().union(*(o.held_by_others for o in outcomes))
        answered = set().union(*(o.answered for o in outcomes))
        return mine, held, answered


@pytest.fixture
def runs(warehouse: Any) -> Any:
    table = warehouse.create_customers([(i, n, None) for i, n in enumerate(NAMES)])
    made: list[Run] = []

    def make(owner: str, **options: Any) -> Run:
        made.append(Run(warehouse, table, owner, **options))
        made[-1].start()
        return made[-1]

    yield make
    for run in made:
        run.session.shutdown()


@pytest.mark.database
def test_one_run_wins_each_claim_and_only_the_holder_stores(runs: Any, warehouse: Any) -> None:
    first, second = runs("a"), runs("b")
    mine, held, _ = first.claim_all()
    assert sorted(mine) == sorted(first.hashes) and not held
    theirs, held_by_first, _ = second.claim_all()
    assert theirs == [] and held_by_first == set(first.hashes)
    assert second.do(second.answers.store({h: ANSWER for h in first.hashes})) == set()  # not its claims
    assert first.do(first.answers.store({h: ANSWER for h in first.hashes[:3]})) == set(first.hashes[:3])
    _, still_held, answered = second.claim_all()
    assert answered == set(first.hashes[:3]) and still_held == set(first.hashes[3:])
    assert second.do(second.answers.answered(first.hashes)) == set(first.hashes[:3])
    first.do(first.answers.release())  # what it did not answer is free again
    taken, _, _ = second.claim_all()
    assert sorted(taken) == sorted(first.hashes[3:])
    rows = warehouse.rows(f"SELECT paid_for, credits FROM {warehouse.answers_table} WHERE state = 'answered'")
    assert rows == [("t", 1)] * 3


class _Clock:
    """The answers table's wall clock, moved by the test: a lease expires by the clock, not by
    how fast a busy machine runs the steps between (issue 36: slept windows of 0.2 s)."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


@pytest.mark.database
def test_an_expired_lease_is_taken_over_and_a_renewed_one_is_not(runs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(answers_module, "time", clock)
    dead, alive = runs("a", lease=0.5), runs("b", lease=0.5)
    dead.claim_all()
    clock.now += 0.6  # the dead run stopped renewing
    taken, held, _ = alive.claim_all()
    assert sorted(taken) == sorted(alive.hashes) and not held
    waiting = runs("c", lease=0.5)
    clock.now += 0.3
    alive.do(alive.answers.renew())
    clock.now += 0.3  # past the first lease, within the renewed one
    _, held, _ = waiting.claim_all()
    assert held == set(alive.hashes)


@pytest.mark.database
def test_claims_are_made_a_chunk_at_a_time_in_one_statement_or_two(runs: Any) -> None:
    """Where the claim names the rows it took (RETURNING) or counts them, a claim nobody else
    contests is one statement; else, and when another run holds some of the chunk, its states are
    read after it."""
    run, other = runs("a", chunk=2), runs("b", chunk=2)
    claims = run.answers.plan_claims(run.hashes)
    assert [len(c.hashes) for c in claims] == [2, 2, 1]
    returning = run.session.dialect.engine.claim_returning is not None or run.session.dialect.engine.claim_counts_rows
    before = run.session.statements
    assert sorted(run.do(run.answers.claim(claims[0])).mine) == sorted(claims[0].hashes)
    assert run.session.statements - before == (1 if returning else 2)
    before = other.session.statements
    mine, held, _ = other.claim_all()  # its chunks start elsewhere: some of them hold a's two queries
    assert held == set(claims[0].hashes) and sorted(mine) == sorted(set(run.hashes) - held)
    contested = len({other.answers._chunks[h] for h in held})
    assert other.session.statements - before == (3 + contested if returning else 6)  # a read after a contest


@pytest.mark.database
def test_a_store_is_one_statement_where_the_warehouse_updates_straight_from_its_answers(runs: Any) -> None:
    """SQLite updates the answers rows from the store's JSON document: one statement and no
    incoming table. Elsewhere the answers go through the incoming table: its load, then the update
    (and once, the table itself)."""
    run = runs("a")
    run.claim_all()
    dialect = run.session.dialect
    straight = dialect.answers_document(["query_hash", "gender"]) is not None
    run.do(run.answers.store({h: ANSWER for h in run.hashes[:2]}))  # the first store may make the incoming table
    before = run.session.statements
    assert run.do(run.answers.store({h: ANSWER for h in run.hashes[2:]})) == set(run.hashes[2:])
    assert run.session.statements - before == (1 if straight else 2)
    assert run.answers.incoming.made is not straight
