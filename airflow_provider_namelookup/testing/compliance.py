"""The warehouse compliance suite: the table engine's whole-run promises, on one warehouse.

A dialect is right when runs on its warehouse keep the engine's promises, whatever SQL it
writes to get there. The suite runs whole runs (the real engine, over a real DB-API connection,
against the Name Lookup emulator over loopback) and checks each promise on the warehouse's own
tables:

- **paid once, rerun 0**: every distinct valid query is paid for once, every row gets an outcome,
  ``SUM(credits_used)`` is what the table cost, and a second run over the unchanged table sends
  no request; a changed row is looked up again and its price moves with its query;
- **parallel runs**: four runs over ``where`` shards of one table at once (threads, a connection
  each) pay each distinct query once and leave no claim behind;
- **a cut mid-run**: a run the service stops midway (credits exhausted) keeps every answer it
  paid for; the next run pays only for the rest;
- **where**: a checked filter keeps, on the warehouse, the rows it means;
- **max_age**: answers older than ``max_age`` are looked up again, younger ones are not;
- **erasure**: people erased by key and by value leave their targets and the answers table, and
  nothing else does; erasing them again removes nothing; the next run pays only for them again;
- **erasure beside a run in flight**: what an erasure removes while a run is between its claim and
  its store does not come back from that run;
- **retention**: answers older than a run's ``retention`` (or the erasure's ``older_than``) are
  deleted, younger ones kept;
- **narrow and non-text columns**: ``VARCHAR(20)`` names, ``CHAR(2)`` countries, big-integer and
  (where the warehouse has the type) UUID keys fill every row, and a rerun pays nothing (integer
  keys and wide text columns are every other promise's tables);
- **some answer fields** (``columns``): a target holding only the result columns asked for, beside
  the provider's own, is paid once, reports its invalid rows, reruns free and looks a changed name up
  again for its row alone; an existing target with other answer columns is refused before anything
  is spent;
- **the statement budget** the provider's own warehouses are held to: a first run sends at most
  :data:`FIRST_RUN_STATEMENTS` statements, a rerun at most :data:`RERUN_STATEMENTS`, whatever the
  row count.

What a warehouse cannot do for a reason of its engine or its test setup it declares
(:class:`~.capabilities.Capabilities`, the fixture's ``capabilities``); the tests that need it are
skipped, naming the capability. A failure names the dialect method at fault: a statement's error
carries a note naming the method that built it (:mod:`.trace`), a broken promise the methods it
rests on, each marked as the dialect's own or inherited, and a statement budget exceeded the
statements sent by each method.

How to run it on a warehouse (a test module of the contributor's, as SQLAlchemy's dialect suite
is run)::

    import pytest
    from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests and fixtures)
    from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse

    @pytest.fixture
    def compliance_warehouse(tmp_path):
        yield DbApiWarehouse(lambda: mydriver.connect(str(tmp_path / "db")), MyDialect)

The fixture gives any object with the :class:`ComplianceWarehouse` members: a
:class:`~.dbapi.DbApiWarehouse` for a bare DB-API driver, or (as the provider's own tests do) a
warehouse behind an Airflow connection. The emulator comes from the ``emulator`` extra
(``pip install --find-links ./dist 'airflow-provider-namelookup[emulator]'`` after ``make dist``, or
``pip install ./namelookup-emulator`` in a checkout).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.options import RunOptions
from airflow_provider_namelookup.engine.plan import QueryRules, plan_name
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.testing.capabilities import Capabilities, needs
from airflow_provider_namelookup.testing.trace import DialectTrace, TracedSession, written_by
from airflow_provider_namelookup.warehouse import TableRunSpec, TableSource, WarehouseSession, table_run
from airflow_provider_namelookup.warehouse.erasure import Erasure, ErasureCounts, erase

__all__ = [
    "Capabilities",
    "ComplianceWarehouse",
    "compliance_account",
    "compliance_emulator",
    "enrich",
    "erase_people",
    "test_a_run_cut_midway_keeps_what_it_paid_for",
    "test_a_target_of_some_answer_fields_fills_and_reruns_free",
    "test_each_query_is_paid_once_and_a_rerun_pays_nothing",
    "test_erasure_beside_a_run_in_flight_holds",
    "test_erasure_removes_the_people_and_nothing_else",
    "test_max_age_looks_stale_answers_up_again",
    "test_narrow_and_non_text_columns_fill_and_rerun_free",
    "test_parallel_runs_pay_each_query_once",
    "test_retention_deletes_old_answers_only",
    "test_where_keeps_the_rows_it_means",
    "test_whole_runs_keep_the_statement_budget",
]

_log = logging.getLogger("airflow_provider_namelookup.compliance")

CUSTOMERS = [
    (1, "Theresa", None), (2, "theresa ", None), (3, "Andrea", "IT"), (4, "Andrea", "DE"), (5, "John", "US"),
    (6, "", None), (7, "x" * 60, None), (8, "Anna", "Germany"), (9, "Theresa", None), (10, None, None),
]
"""Spellings of one name, hints that change the query, and the three kinds of invalid row."""

COLUMN_KINDS = ("integer", "bigint", "uuid", "text", "varchar(20)", "char(2)")
"""The column types the suite asks for, by a name of its own: each warehouse spells them
(:meth:`ComplianceWarehouse.sql_type`); ``text`` is a wide text column of its choice."""


class ComplianceWarehouse(Protocol):
    """What the suite needs of the warehouse under test (the ``compliance_warehouse`` fixture's value)."""

    hook: Any
    """What the engine opens connections with (a common-sql ``DbApiHook``, or :class:`~.dbapi.DbApiConnectionHook`)."""
    dialect: Any
    """The dialect under test, built on :attr:`hook`."""
    answers_table: str
    """An answers table of the test's own (the suite's runs share it, other tests do not)."""
    capabilities: Capabilities
    """What it can do (the tests that need what it cannot are skipped, naming the capability)."""

    def table_name(self, prefix: str = "customers") -> str:
        """A table name no other test uses."""
        ...

    def create_customers(self, rows: list[tuple[Any, ...]], *, key_type: str = "integer", name_type: str = "text",
                         country_type: str = "text") -> str:
        """A table ``customers(customer_id key, name, country)`` holding ``rows``; its name. The
        types are :data:`COLUMN_KINDS`, spelled by :meth:`sql_type`."""
        ...

    def sql_type(self, kind: str) -> str | None:
        """This warehouse's type for one of :data:`COLUMN_KINDS`; None where it has none (UUID)."""
        ...

    def insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``(customer_id, name, country)`` rows."""
        ...

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        ...


@dataclass
class ComplianceAccount:
    """An emulator account the suite's runs pay with."""

    emulator: Any
    token: str

    def remaining(self) -> int:
        return int(self.emulator.state.remaining_credits(self.token))

    def set_credits(self, remaining: int) -> None:
        self.emulator.top_up(self.token, remaining=remaining)

    def settings(self) -> ClientSettings:
        return ClientSettings.from_parts(host=self.emulator.url, port=None, password=self.token,
                                         extra={"backoff_base": 0.01})


@pytest.fixture(scope="module")
def compliance_emulator() -> Iterator[Any]:
    """The Name Lookup emulator over loopback, for the module's tests."""
    from namelookup_emulator import EmulatorServer

    with EmulatorServer() as server:
        yield server


@pytest.fixture
def compliance_account(compliance_emulator: Any) -> Iterator[ComplianceAccount]:
    """A fresh account of 100 credits; the emulator's faults off before and after."""
    compliance_emulator.set_faults()
    yield ComplianceAccount(compliance_emulator, compliance_emulator.create_account(credits=100))
    compliance_emulator.set_faults()


def enrich(house: ComplianceWarehouse, account: ComplianceAccount, table: str, *, where: str | None = None,
           target: str | None = None, max_age: timedelta | None = None, lookup: LookupKind = LookupKind.GENDER,
           retention: timedelta | None = None, columns: tuple[str, ...] | None = None,
           **options: Any) -> dict[str, Any]:
    """One whole run of the engine over ``table`` (key ``customer_id``, name ``name``, country
    ``country``) into ``target`` (default ``<table>_gender``); its summary, with the statements sent by
    the dialect method that built them (``statements_by_method``)."""
    trace = DialectTrace(house.dialect)
    session = TracedSession(house.hook, trace)
    try:
        source = TableSource(session.dialect, table=table, key_column="customer_id", name_column="name",
                             country_column="country" if lookup.takes_hints else None, where=where)
        job = TableRunSpec(source=source, target=target or f"{table}_gender", answers=house.answers_table,
                           rules=QueryRules(lookup), max_age=max_age, page_size=options.pop("page_size", 10_000),
                           retention=retention, columns=columns)

        async def run() -> dict[str, Any]:
            async with NameLookupAsyncHook(settings=account.settings(),
                                           max_concurrency=options.pop("max_concurrency", None)) as service:
                lookup_run = table_run(session, job, service, _log, RunOptions(**options))
                await lookup_run.run()
                return {**lookup_run.state.progress.summary(), "statements_by_method": dict(trace.sent)}
        return asyncio.run(run())
    finally:
        session.shutdown()


def erase_people(house: ComplianceWarehouse, table: str, **request: Any) -> ErasureCounts:
    """Erase people from ``<table>_gender`` (key ``customer_id``) and the suite's answers table."""
    session = WarehouseSession(house.hook, house.dialect)
    try:
        erasure = Erasure(answers_table=house.answers_table, target_tables=(f"{table}_gender",),
                          key_column="customer_id", **request)
        return asyncio.run(session.run(erase, session, erasure))
    finally:
        session.shutdown()


def _answers(house: ComplianceWarehouse) -> dict[str, tuple[Any, ...]]:
    """``query_hash -> (state, first_name)`` of the suite's answers table."""
    return {r[0]: (r[1], r[2]) for r in house.rows(f"SELECT query_hash, state, first_name FROM {house.answers_table}")}


def distinct_valid(rows: list[tuple[Any, ...]]) -> int:
    """The distinct valid gender queries of ``(key, name, country)`` rows, planned as the engine plans them."""
    rules = QueryRules(LookupKind.GENDER)
    return len({p.query_hash for _, name, country in rows
                if (p := plan_name(name, rules, country=country)).query is not None})


def _target(house: ComplianceWarehouse, table: str) -> dict[int, tuple[Any, ...]]:
    """``customer_id -> (gender, status, credits_used, query_hash)`` of a target."""
    rows = house.rows(f"SELECT customer_id, gender, status, credits_used, query_hash FROM {table}")
    return {int(r[0]): tuple(r[1:]) for r in rows}


def _claims_left(house: ComplianceWarehouse) -> int:
    return int(house.rows(f"SELECT COUNT(*) FROM {house.answers_table} WHERE state = 'claimed'")[0][0])


def rests_on(*methods: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A promise's test whose failed assertion notes the dialect methods the promise rests on: the
    dialect's own first (the likelier culprit), then those it inherits, marked so."""
    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(test)
        def checked(*args: Any, **kwargs: Any) -> None:
            try:
                test(*args, **kwargs)
            except AssertionError as err:
                house = kwargs.get("compliance_warehouse")
                if house is not None:
                    suspects = [written_by(type(house.dialect), m) for m in methods]
                    named = ", ".join(sorted(suspects, key=lambda suspect: "(inherited" in suspect))  # its own first
                    err.add_note(f"{house.dialect.name}: this promise rests on the dialect's {named}")
                raise
        return checked
    return decorate


# The promises -----------------------------------------------------------------------------------------------

@rests_on("claim", "claim_params", "store_answers", "update_from", "distinct_values", "upsert")
def test_each_query_is_paid_once_and_a_rerun_pays_nothing(compliance_warehouse: ComplianceWarehouse,
                                                          compliance_account: ComplianceAccount) -> None:
    """Paid once, rerun 0: each distinct valid query paid once, every row an outcome,
    ``SUM(credits_used)`` what the table cost; an unchanged table costs no request; a new row of a
    known query costs nothing, a new query one credit."""
    house, account = compliance_warehouse, compliance_account
    table = house.create_customers(CUSTOMERS)
    summary = enrich(house, account, table)
    rows = _target(house, f"{table}_gender")
    spent = 100 - account.remaining()
    assert spent == distinct_valid(CUSTOMERS) == summary["credits_used"]
    assert set(rows) == {c[0] for c in CUSTOMERS}  # every row has an outcome
    assert {k for k, r in rows.items() if r[1] == "error"} == {6, 7, 8, 10}
    assert [rows[k][0] for k in (1, 2, 3, 4, 5, 9)] == ["female", "female", "male", "female", "male", "female"]
    assert sum(r[2] for r in rows.values()) == spent  # SUM(credits_used) is what the table cost

    again = enrich(house, account, table)
    assert (again["rows_unchanged"], again["lookups"], again["requests"], again["credits_used"]) == (10, 0, 0, 0)
    assert _target(house, f"{table}_gender") == rows

    house.insert(table, [(11, "JOHN", "US"), (12, "Giulia", None)])  # a known query, and a new one
    third = enrich(house, account, table)
    assert (third["lookups"], third["rows_unchanged"]) == (1, 10)
    after = _target(house, f"{table}_gender")
    held = {r[3] for r in after.values() if r[1] == "ok"}
    assert sum(r[2] for r in after.values()) == len(held) == 100 - account.remaining() == spent + 1
    assert _claims_left(house) == 0


@rests_on("claim", "claim_params", "lock_answers", "store_answers")
def test_parallel_runs_pay_each_query_once(compliance_warehouse: ComplianceWarehouse,
                                           compliance_account: ComplianceAccount) -> None:
    """Four runs over ``where`` shards of one table at once pay each distinct query once, and leave no claim."""
    house, account = compliance_warehouse, compliance_account
    needs(house, "concurrent_runs")
    from namelookup_emulator.sample import customer_rows

    rows = list(customer_rows(800, seed=21))
    table = house.create_customers(rows)
    account.set_credits(10_000)
    account.emulator.set_faults(latency_ms=15)  # the runs' requests overlap in time
    summaries: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def shard(index: int) -> None:
        try:
            start.wait()
            summaries.append(enrich(house, account, table, where=f"customer_id % 4 = {index}",
                                    check_remaining_credits=False))
        except BaseException as err:  # handed to the test's thread
            errors.append(err)

    threads = [threading.Thread(target=shard, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    account.emulator.set_faults()
    assert not errors, errors[0]
    spent = 10_000 - account.remaining()
    assert spent == distinct_valid(rows) == sum(s["lookups"] for s in summaries)  # not once per shard
    target = _target(house, f"{table}_gender")
    assert sorted(target) == sorted(r[0] for r in rows)
    assert sum(r[2] for r in target.values()) == spent
    assert _claims_left(house) == 0


@rests_on("store_answers", "update_from", "claim")
def test_a_run_cut_midway_keeps_what_it_paid_for(compliance_warehouse: ComplianceWarehouse,
                                                 compliance_account: ComplianceAccount) -> None:
    """A run the service stops midway keeps every answer it paid for; the next run pays only for the rest."""
    house, account = compliance_warehouse, compliance_account
    table = house.create_customers([(i, f"Person{i:03d}", None) for i in range(1, 251)])
    account.set_credits(150)  # a request of 100 is answered, the next one refused whole
    with pytest.raises(Exception, match=r"(?i)credit"):
        enrich(house, account, table, check_remaining_credits=False, max_concurrency=1)
    paid = 150 - account.remaining()
    first = _target(house, f"{table}_gender")
    assert 0 < paid < 150 and len({r[3] for r in first.values()}) == paid  # every answer paid for was kept

    account.set_credits(1_000)
    enrich(house, account, table)
    assert 1_000 - account.remaining() == 250 - paid  # only the names still missing were paid
    final = _target(house, f"{table}_gender")
    assert len(final) == 250 and sum(r[2] for r in final.values()) == 250
    assert all(final[k] == first[k] for k in first)
    assert _claims_left(house) == 0


@rests_on("where_string", "user_sql", "distinct_values")
def test_where_keeps_the_rows_it_means(compliance_warehouse: ComplianceWarehouse,
                                       compliance_account: ComplianceAccount) -> None:
    """A checked ``where`` (``%``, ``lower``, ``LIKE``, ``COALESCE``, ``IN``) keeps, on the
    warehouse, the rows it means."""
    house, account = compliance_warehouse, compliance_account
    table = house.create_customers([(1, "Anna", "DE"), (2, "ben", "AT"), (3, " Carla ", None), (4, "Dora", "DE"),
                                    (5, "O'Neil", "FR"), (6, None, "IT"), (7, "Emil", None), (8, "Fritz", "CH")])
    where = "(customer_id % 2 = 0 AND lower(name) LIKE '%o%') OR COALESCE(country, 'XX') IN ('XX', 'FR')"
    summary = enrich(house, account, table, where=where, target=f"{table}_out")
    assert sorted(_target(house, f"{table}_out")) == [3, 4, 5, 7]
    assert summary["rows_read"] == 4


@rests_on("claim", "timestamp", "store_answers")
def test_max_age_looks_stale_answers_up_again(compliance_warehouse: ComplianceWarehouse,
                                              compliance_account: ComplianceAccount) -> None:
    """Answers older than ``max_age`` are looked up again (and priced anew); younger ones, and a
    run without it, are not."""
    house, account = compliance_warehouse, compliance_account
    table = house.create_customers([(1, "Anna", None), (2, "Ben", None), (3, "anna", None)])
    assert enrich(house, account, table)["lookups"] == 2
    assert enrich(house, account, table, max_age=timedelta(hours=1))["lookups"] == 0  # young answers are kept
    time.sleep(1.2)
    again = enrich(house, account, table, max_age=timedelta(seconds=1))
    assert (again["lookups"], again["rows_enriched"], again["rows_unchanged"]) == (2, 3, 0)
    assert 100 - account.remaining() == 4
    assert sum(r[2] for r in _target(house, f"{table}_gender").values()) == 2  # the fresh answers' prices
    assert enrich(house, account, table)["lookups"] == 0  # without max_age nothing expires


ERASABLE = [
    (1, "Theresa", None), (2, "Andrea", "IT"), (3, "John", "US"), (4, "Giulia", None), (5, "Sven", "SE"),
    (6, "giulia ", "IT"), (7, "Andrea", "DE"),
]
"""Two people erased by key (1, 2), one by value (Giulia, asked with two hints: 4, 6), and the rest."""


@rests_on("erasure.rows_of_keys", "erasure.rows_with_values", "erasure.echoed_names", "erasure.delete_where_in",
          "erasure.erase_answers", "erasure.insert_tombstone")
def test_erasure_removes_the_people_and_nothing_else(compliance_warehouse: ComplianceWarehouse,
                                                     compliance_account: ComplianceAccount) -> None:
    """Erasing two people by key and one by value (whatever hints their queries carried) removes their
    target rows and their answers, and nothing else; a second erasure removes nothing; the next run
    pays again only for their questions."""
    house, account = compliance_warehouse, compliance_account
    table = house.create_customers(ERASABLE)
    enrich(house, account, table)
    before = _target(house, f"{table}_gender")
    answers_before = _answers(house)
    erased_hashes = {before[k][3] for k in (1, 2, 4, 6)}
    assert len(erased_hashes) == 4 and 100 - account.remaining() == 7

    counts = erase_people(house, table, keys=(1, 2), values=("GIULIA",)).as_dict()
    assert (counts["target_rows_erased"], counts["answers_erased"]) == (4, 4)
    after = _target(house, f"{table}_gender")
    assert after == {k: r for k, r in before.items() if k not in (1, 2, 4, 6)}  # nothing else
    answers = _answers(house)
    assert {h for h, (state, _) in answers.items() if state == "erased"} == erased_hashes
    assert all(first is None for h, (_, first) in answers.items() if h in erased_hashes)
    assert {h: a for h, a in answers.items() if h not in erased_hashes} == \
        {h: a for h, a in answers_before.items() if h not in erased_hashes}

    again = erase_people(house, table, keys=(1, 2), values=("Giulia",)).as_dict()
    assert (again["target_rows_erased"], again["answers_erased"]) == (0, 0)  # idempotent

    paid = 100 - account.remaining()
    rerun = enrich(house, account, table)
    assert rerun["lookups"] == 4 == 100 - account.remaining() - paid  # only the erased questions again
    assert sorted(_target(house, f"{table}_gender")) == [r[0] for r in ERASABLE]
    assert _claims_left(house) == 0


@rests_on("erasure.insert_tombstone", "erasure.erase_answers", "erasure.delete_erased_rows", "claim", "store_answers")
def test_erasure_beside_a_run_in_flight_holds(compliance_warehouse: ComplianceWarehouse,
                                              compliance_account: ComplianceAccount) -> None:
    """A run that holds a claim (its request in flight: it refreshes stale answers under ``max_age``) when
    a person is erased neither stores their answer again nor writes their rows back, not even a row of
    theirs it reads from the answers table; a run that starts after the erasure looks them up again."""
    house, account = compliance_warehouse, compliance_account
    needs(house, "concurrent_runs")
    table = house.create_customers([(1, "Theresa", None), (2, "John", None)])
    enrich(house, account, table)
    house.insert(table, [(3, "theresa", None)])  # a new row of the person, answered from the cache
    time.sleep(1.2)
    account.emulator.set_faults(latency_ms=1500)
    errors: list[BaseException] = []

    def in_flight() -> None:
        try:
            enrich(house, account, table, max_age=timedelta(seconds=1), check_remaining_credits=False)
        except BaseException as err:  # handed to the test's thread
            errors.append(err)

    run = threading.Thread(target=in_flight)
    run.start()
    deadline = time.monotonic() + 20
    while not any(state == "claimed" for state, _ in _answers(house).values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    counts = erase_people(house, table, keys=(1,), values=("Theresa",))
    run.join(60)
    account.emulator.set_faults()
    assert not errors, errors[0]
    assert counts.answers_erased == 1
    assert sorted(_target(house, f"{table}_gender")) == [2]  # rows 1 and 3 did not come back
    assert [a for a in _answers(house).values() if a[0] == "answered"] == [("answered", "John")]

    paid = 100 - account.remaining()
    assert enrich(house, account, table)["lookups"] == 1 == 100 - account.remaining() - paid
    assert sorted(_target(house, f"{table}_gender")) == [1, 2, 3]


@rests_on("erasure.delete_answers_before", "timestamp")
def test_retention_deletes_old_answers_only(compliance_warehouse: ComplianceWarehouse,
                                            compliance_account: ComplianceAccount) -> None:
    """A run's ``retention`` deletes, when it starts, the answers stored longer ago (whichever run stored
    them), and the erasure's ``older_than`` does the same on its own; younger answers stay and cost
    nothing again."""
    house, account = compliance_warehouse, compliance_account
    old = house.create_customers([(1, "Anna", None), (2, "Ben", None)])
    enrich(house, account, old)
    time.sleep(1.2)
    young = house.create_customers([(1, "Carla", None), (2, "anna", None)])
    assert enrich(house, account, young, retention=timedelta(seconds=1))["lookups"] == 2  # Anna's was deleted
    assert sorted(first for state, first in _answers(house).values() if state == "answered") == ["Anna", "Carla"]
    assert enrich(house, account, young, retention=timedelta(hours=1))["lookups"] == 0  # young answers are kept

    time.sleep(1.2)
    counts = erase_people(house, young, older_than=timedelta(seconds=1))
    assert (counts.answers_expired, counts.target_rows) == (2, {})
    assert not [a for a in _answers(house).values() if a[0] == "answered"]
    assert 100 - account.remaining() == 4


NARROW = [
    ("Theresa", None), ("theresa ", "DE"), ("Andrea", "IT"), ("Andrea", "DE"), ("John", "US"), ("", None),
    ("Maximilian-Johannes", "AT"), ("Anna", "D"), (None, "FR"), ("Giulia", "IT"),
]
"""``(name, country)`` that fit ``VARCHAR(20)`` and ``CHAR(2)``: a name of 19 characters, a country
of one (``CHAR`` pads it; it is an invalid hint), an empty and a missing name."""


@rests_on("create_like_source", "create_temp_as", "cast", "upsert")
def test_narrow_and_non_text_columns_fill_and_rerun_free(compliance_warehouse: ComplianceWarehouse,
                                                         compliance_account: ComplianceAccount) -> None:
    """``VARCHAR(20)`` names and ``CHAR(2)`` countries, keyed by big integers (beyond 32 bits) and by
    UUIDs where the warehouse has the type: every row gets its outcome, each query is paid once
    across the tables, and a rerun over the unchanged table sends no request. One table per key kind,
    each carrying every narrow column at once (two runs a kind: the fill, then the rerun)."""
    import uuid

    house, account = compliance_warehouse, compliance_account
    account.set_credits(1_000)
    keys: dict[str, list[Any]] = {"bigint": [5_000_000_000 + i for i in range(len(NARROW))]}
    if house.sql_type("uuid") is not None:
        keys["uuid"] = [str(uuid.UUID(int=(i + 1) << 64 | i)) for i in range(len(NARROW))]
    rows_of = {kind: [(key, *row) for key, row in zip(values, NARROW, strict=True)] for kind, values in keys.items()}
    expected = distinct_valid(rows_of["bigint"])
    for kind, rows in rows_of.items():
        table = house.create_customers(rows, key_type=kind, name_type="varchar(20)", country_type="char(2)")
        summary = enrich(house, account, table)
        target = {_key_text(r[0]): r[1:] for r in
                  house.rows(f"SELECT customer_id, status, gender, credits_used FROM {table}_gender")}
        assert sorted(target) == sorted(_key_text(r[0]) for r in rows), kind  # every row, once
        errors = {_key_text(r[0]) for r in rows if r[1] in ("", None) or r[2] == "D"}
        assert {k for k, r in target.items() if r[0] == "error"} == errors, kind
        assert all(r[1] in ("female", "male") for k, r in target.items() if k not in errors), kind
        assert summary["lookups"] == (expected if kind == "bigint" else 0), kind  # the second table pays nothing
        assert sum(r[2] or 0 for r in target.values()) == summary["credits_used"], kind
        again = enrich(house, account, table)
        assert (again["rows_unchanged"], again["lookups"], again["requests"]) == (len(rows), 0, 0), kind
    assert 1_000 - account.remaining() == expected
    assert _claims_left(house) == 0


def _key_text(key: Any) -> str:
    """A key as text, whatever type the driver gives it back as (an int, a ``uuid.UUID``, a string, a
    UUID's 16 bytes)."""
    import uuid

    if isinstance(key, bytes | bytearray) and len(key) == 16:
        return str(uuid.UUID(bytes=bytes(key)))
    return str(key).lower()


OWN_COLUMNS = {"status", "error", "credits_used", "query_hash", "enriched_at", "query_spec", "source_name",
               "source_country"}
"""The columns every gender target of the suite's customers holds, whatever its ``columns``."""


def _columns_of(house: ComplianceWarehouse, table: str) -> set[str]:
    """The names of a table's columns, in lower case."""
    session = WarehouseSession(house.hook, house.dialect)
    try:
        return {name.lower() for name in asyncio.run(session.run(session.column_names, house.dialect.quote(table)))}
    finally:
        session.shutdown()


def _rename(house: ComplianceWarehouse, table: str, key: int, name: str) -> None:
    session = WarehouseSession(house.hook, house.dialect)
    try:
        def rename() -> None:
            session.execute(f"UPDATE {house.dialect.quote(table)} SET name = {house.dialect.literal(name)} "
                            f"WHERE customer_id = {key}")
            session.commit()
        asyncio.run(session.run(rename))
    finally:
        session.shutdown()


@rests_on("create_like_source", "create_temp_as", "create_stage_as", "no_rows", "upsert", "distinct_values")
def test_a_target_of_some_answer_fields_fills_and_reruns_free(compliance_warehouse: ComplianceWarehouse,
                                                             compliance_account: ComplianceAccount) -> None:
    """``columns``: a target of ``gender`` and ``probability`` (and the provider's own columns) is
    filled like a whole one, each query paid once and every invalid row reported; a rerun pays
    nothing; a changed name is looked up again for its row alone. The same target asked for every
    answer field is refused, naming what it lacks, before anything is spent."""
    from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError

    house, account = compliance_warehouse, compliance_account
    table = house.create_customers(CUSTOMERS)
    target, asked = f"{table}_gender", ("gender", "probability")
    summary = enrich(house, account, table, columns=asked)
    assert _columns_of(house, target) == {"customer_id", *asked, *OWN_COLUMNS}
    spent = 100 - account.remaining()
    assert spent == distinct_valid(CUSTOMERS) == summary["credits_used"]
    rows = _target(house, target)
    assert {k for k, r in rows.items() if r[1] == "error"} == {6, 7, 8, 10}
    assert [rows[k][0] for k in (1, 2, 3, 4, 5, 9)] == ["female", "female", "male", "female", "male", "female"]
    assert sum(r[2] for r in rows.values()) == spent
    found = house.rows(f"SELECT probability FROM {target} WHERE status = 'ok'")
    assert len(found) == 6 and all(0 < float(p) <= 1 for (p,) in found)

    again = enrich(house, account, table, columns=asked)
    assert (again["rows_unchanged"], again["lookups"], again["requests"], again["credits_used"]) == (10, 0, 0, 0)
    assert again["statements"] <= RERUN_STATEMENTS, _over_budget(house, "rerun", 10, again)  # its columns checked
    assert _target(house, target) == rows

    _rename(house, table, 5, "Giulia")
    third = enrich(house, account, table, columns=asked)
    assert (third["lookups"], third["rows_enriched"], third["rows_unchanged"]) == (1, 1, 9)
    after = _target(house, target)
    assert after[5][0] == "female" and after[5][3] != rows[5][3]
    assert {k: r for k, r in after.items() if k != 5} == {k: r for k, r in rows.items() if k != 5}
    held = {r[3] for r in after.values() if r[1] == "ok"}  # John's answer no longer held: its price went with it
    assert sum(r[2] for r in after.values()) == len(held) and 100 - account.remaining() == spent + 1

    house.insert(table, [(11, "Sven", None)])  # a new query the refused run would have paid for
    with pytest.raises(WarehouseInputError, match=r"lacks result_found, samples, first_name, last_name, country\b"):
        enrich(house, account, table)
    assert 100 - account.remaining() == spent + 1 and _columns_of(house, target) == {"customer_id", *asked,
                                                                                    *OWN_COLUMNS}
    assert _claims_left(house) == 0


# The statement budget ---------------------------------------------------------------------------------------

FIRST_RUN_STATEMENTS = 25
"""The most statements a first run may send (its distinct values fit one page), whatever its row count."""
RERUN_STATEMENTS = 6
"""The most statements a rerun over an unchanged table may send."""
WRITER_LEASE_STATEMENTS = 5
"""What a first run costs besides, under the ``SINGLE_WRITER`` claim protocol: its claim's writer lease
taken and dropped and what is reclaimable taken over (3), and the target's writer lease its fill holds,
taken and dropped (2)."""


def first_run_budget(house: ComplianceWarehouse) -> int:
    """:data:`FIRST_RUN_STATEMENTS`, and :data:`WRITER_LEASE_STATEMENTS` where ``house``'s claims and fills need
    the leases."""
    from airflow_provider_namelookup.warehouse.dialects.engine_traits import ClaimProtocol

    single_writer = house.dialect.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER
    return FIRST_RUN_STATEMENTS + (WRITER_LEASE_STATEMENTS if single_writer else 0)


@rests_on("distinct_values", "create_temp_as", "claim", "store_answers", "upsert")
def test_whole_runs_keep_the_statement_budget(compliance_warehouse: ComplianceWarehouse,
                                              compliance_account: ComplianceAccount) -> None:
    """On a cloud warehouse every statement costs: a first run sends at most
    :data:`FIRST_RUN_STATEMENTS` (:func:`first_run_budget`), a rerun at most :data:`RERUN_STATEMENTS`, and
    ten times the rows (of as many distinct names) send as many. Each size's first run creates its answers table, as a
    warehouse's first run does."""
    house, account = compliance_warehouse, compliance_account
    account.set_credits(1_000)
    sent: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    shared = house.answers_table
    try:
        for rows in (100, 1_000):  # each size a first run: its own answers table, created by the run
            house.answers_table = house.table_name("answers")
            table = house.create_customers([(i, f"Name{i % 40:02d}", None) for i in range(1, rows + 1)])
            sent[rows] = (enrich(house, account, table), enrich(house, account, table))
    finally:
        house.answers_table = shared
    for rows, (first, rerun) in sent.items():
        assert first["lookups"] == 40 and rerun["requests"] == 0, (rows, first, rerun)
        assert first["statements"] <= first_run_budget(house), _over_budget(house, "first run", rows, first)
        assert rerun["statements"] <= RERUN_STATEMENTS, _over_budget(house, "rerun", rows, rerun)
    (small, _), (large, _) = sent[100], sent[1_000]
    assert large["statements"] == small["statements"], (
        f"{house.dialect.name}: a first run over 1,000 rows sent {large['statements']} statements, over 100 "
        f"{small['statements']}; by method, 1,000 rows: {_by_method(large)}; 100 rows: {_by_method(small)}")


def _over_budget(house: ComplianceWarehouse, run: str, rows: int, summary: dict[str, Any]) -> str:
    budget = first_run_budget(house) if run == "first run" else RERUN_STATEMENTS
    return (f"{house.dialect.name}: a {run} over {rows} rows sent {summary['statements']} statements (budget "
            f"{budget}); by the dialect method that built them: {_by_method(summary)}")


def _by_method(summary: dict[str, Any]) -> str:
    counts = sorted(summary["statements_by_method"].items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{method} x{count}" for method, count in counts)
