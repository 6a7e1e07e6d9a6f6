"""The XCom path's run, without Airflow: real HTTP to the emulator through the async hook."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.enrichment.list_run import ListRun, as_item_list
from airflow_provider_namelookup.enrichment.plan import RowSpec
from airflow_provider_namelookup.errors import NameLookupLimitExceeded
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook


def _answer(run: ListRun, url: str, token: str, **options: Any) -> None:
    async def go() -> None:
        async with NameLookupAsyncHook.for_url(url, token, max_concurrency=1) as hook:
            await run.answer(hook, **options)

    asyncio.run(go())


def test_a_list_run_answers_each_distinct_query_once_in_input_order(emulator: Any, make_account: Any) -> None:
    token = make_account(credits=10)
    run = ListRun(RowSpec(LookupKind.GENDER, default_country="DE"),
                  ["Anna", " anna", {"full_name": "John Smith"}, "", 7, ["x"]], label="people")
    assert run.progress.distinct_queries == 2 and run.progress.rows_invalid == 3
    _answer(run, emulator.url, token)
    results = run.results()
    assert [r.get("gender") for r in results[:3]] == ["female", "female", "male"]
    assert results[1]["input"] == {"first_name": "anna", "country": "DE"}
    assert [r["error"]["status_id"] for r in results[3:]] == ["parameter-first-name-invalid",
                                                              "mandatory-parameter-missing",
                                                              "mandatory-parameter-missing"]
    assert emulator.state.remaining_credits(token) == 8
    assert (run.progress.lookups, run.progress.cache_hits, run.progress.rows_enriched) == (2, 1, 3)


def test_saved_answers_are_not_paid_again(emulator: Any, make_account: Any) -> None:
    token = make_account(credits=10)
    first = ListRun(RowSpec(LookupKind.ORIGIN), ["Giulia", "Sven"])
    _answer(first, emulator.url, token)
    second = ListRun(RowSpec(LookupKind.ORIGIN), ["Sven", "Giulia", "Aiko"], saved=first.answers)
    assert list(second.distinct) and len(second.distinct) == 1 and second.reused == 2
    _answer(second, emulator.url, token)
    sven, giulia, aiko = second.results()
    assert giulia["country_of_origin"][0]["country"] == "IT" and sven["first_name"] == "Sven"
    assert aiko["first_name"] == "Aiko" and sven == {**first.results()[1], "input": {"first_name": "Sven"}}
    assert emulator.state.remaining_credits(token) == 10 - 4 - 2


def test_a_failure_midway_leaves_every_paid_answer_in_the_run(emulator: Any, make_account: Any) -> None:
    token = make_account(credits=120)
    run = ListRun(RowSpec(LookupKind.GENDER), [f"Name{i:03d}" for i in range(250)])
    with pytest.raises(NameLookupLimitExceeded):
        _answer(run, emulator.url, token, check_remaining=False)
    assert len(run.answers) == 100  # the first batch was paid; the second was refused whole
    assert emulator.state.remaining_credits(token) == 20


def test_queries_must_be_a_list() -> None:
    assert as_item_list(None) == [] and as_item_list(("Anna",)) == ["Anna"]
    for single in ("Anna", b"Anna", {"first_name": "Anna"}):
        with pytest.raises(ValueError, match="queries must be a list"):
            as_item_list(single)
