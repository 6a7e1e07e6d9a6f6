"""The one run, driven through its list adapters without Airflow: real HTTP to the emulator."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.run import LookupRun, RunOptions
from airflow_provider_namelookup.errors import NameLookupInsufficientCredits, NameLookupLimitExceeded
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.xcom import list_run
from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache
from airflow_provider_namelookup.xcom.sink import ListResults


class Lines(logging.Handler):
    """The run's log lines, as a list."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def log() -> Any:
    logger = logging.getLogger(f"test.run.{id(object())}")
    logger.setLevel(logging.INFO)
    handler = Lines()
    logger.addHandler(handler)
    logger.lines = handler.lines  # type: ignore[attr-defined]
    return logger


def _run(spec: QueryRules, items: list[Any], url: str, token: str, log: Any, *, saved: Any = None,
         options: RunOptions | None = None, **hook: Any) -> LookupRun:
    async def go() -> LookupRun:
        async with NameLookupAsyncHook.for_url(url, token, max_concurrency=hook.pop("max_concurrency", 1),
                                               **hook) as client:
            run = list_run(spec, items, client, log, options, saved=saved, label="people")
            try:
                await run.run()
            finally:
                go.run = run  # type: ignore[attr-defined]
            return run

    try:
        return asyncio.run(go())
    except BaseException as err:
        err.run = go.run  # type: ignore[attr-defined]
        raise


def _results(run: LookupRun) -> list[dict[str, Any]]:
    assert isinstance(run.sink, ListResults)
    return run.sink.results


def test_each_distinct_query_is_answered_once_and_results_align(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=10)
    run = _run(QueryRules(LookupKind.GENDER, default_country="DE"),
               ["Anna", " anna", {"full_name": "John Smith"}, "", 7, ["x"]], emulator.url, token, log)
    results = _results(run)
    assert [r.get("gender") for r in results[:3]] == ["female", "female", "male"]
    assert results[1]["input"] == {"first_name": "anna", "country": "DE"}  # each row's own query, echoed
    assert [r["error"]["status_id"] for r in results[3:]] == ["parameter-first-name-invalid",
                                                              "mandatory-parameter-missing",
                                                              "mandatory-parameter-missing"]
    assert emulator.state.remaining_credits(token) == 8
    summary = run.progress.summary()
    # cache_hits: rows answered from answers paid before this run (the repeat " anna" was paid here)
    counts = ("lookups", "cache_hits", "rows_enriched", "rows_invalid")
    assert tuple(summary[c] for c in counts) == (2, 0, 3, 3)
    assert (summary["distinct_queries"], summary["credits_used"], summary["rows_unchanged"]) == (2, 2, 0)


def test_the_query_hash_is_each_query_s_id_on_the_wire(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=10)
    run = _run(QueryRules(LookupKind.GENDER), ["Anna", "Ben"], emulator.url, token, log)
    cache = run.cache
    assert isinstance(cache, MemoryAnswerCache)
    assert {h: a["input"]["id"] for h, a in cache.answers.items()} == {h: h for h in cache.answers}


def test_saved_answers_are_not_paid_again(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=10)
    first = _run(QueryRules(LookupKind.ORIGIN), ["Giulia", "Sven"], emulator.url, token, log)
    saved = first.cache.answers  # type: ignore[attr-defined]
    second = _run(QueryRules(LookupKind.ORIGIN), ["Sven", "Giulia", "Aiko"], emulator.url, token, log, saved=saved)
    sven, giulia, aiko = _results(second)
    assert giulia["country_of_origin"][0]["country"] == "IT" and sven["first_name"] == "Sven"
    assert aiko["first_name"] == "Aiko" and sven == {**_results(first)[1], "input": {"first_name": "Sven"}}
    assert emulator.state.remaining_credits(token) == 10 - 4 - 2
    assert second.progress.lookups == 1 and second.progress.cache_hits == 2


def test_a_failure_midway_keeps_every_paid_answer(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=120)
    with pytest.raises(NameLookupLimitExceeded) as info:
        _run(QueryRules(LookupKind.GENDER), [f"Name{i:03d}" for i in range(250)], emulator.url, token, log,
             options=RunOptions(check_remaining_credits=False))
    run: LookupRun = info.value.run  # type: ignore[attr-defined]
    assert len(run.cache.answers) == 100  # type: ignore[attr-defined]  # the first batch; the second refused whole
    assert emulator.state.remaining_credits(token) == 20
    assert log.lines[-1].startswith("Summary: people: 250 rows read")  # the summary is the last line


def test_the_budget_is_decided_once_before_anything_is_spent(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=3)
    names = ["Anna", "Ben", "Carla", "Dora", "Emil"]
    before = emulator.stats()["requests"]
    with pytest.raises(NameLookupInsufficientCredits, match="needs 5 credits but only 3"):
        _run(QueryRules(LookupKind.GENDER), names, emulator.url, token, log)
    assert emulator.stats()["requests"] - before == 1  # the one statistic call
    partial = _run(QueryRules(LookupKind.GENDER), names, emulator.url, token, log,
                   options=RunOptions(on_insufficient_credits="partial"))
    assert [("gender" in r) for r in _results(partial)] == [True, True, True, False, False]
    assert _results(partial)[4]["error"]["status_id"] == "insufficient-credits"
    assert partial.progress.rows_deferred == 2 and emulator.state.remaining_credits(token) == 0


def test_progress_lines_come_while_looking_up(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=100)
    emulator.set_faults(latency_ms=150)
    _run(QueryRules(LookupKind.ORIGIN), [f"Name{i}" for i in range(12)], emulator.url, token, log,
         options=RunOptions(progress_interval=0.3))
    lines = [line for line in log.lines if line.startswith("Progress:")]
    assert lines, log.lines
    assert "lookups done" in lines[-1] and "credits spent" in lines[-1] and "requests in flight" in lines[-1]
    assert "latency" in lines[-1]


def test_the_log_says_where_it_looks_up_and_folds_invalid_values(emulator: Any, make_account: Any,
                                                                 log: Any) -> None:
    token = make_account(credits=10)
    items = ["Anna", "", "", "x" * 60, {"first_name": "Ben", "country": "Germany"}]
    _run(QueryRules(LookupKind.GENDER, secrets=frozenset({token})), items, emulator.url, token, log,
         options=RunOptions(log_values=True))
    assert log.lines[0] == f"Name Lookup service: {emulator.url}"  # once, first; never the token
    invalid = [line for line in log.lines if line.startswith("Invalid, costs nothing")]
    assert len(invalid) == 3  # the two empty names fold into one line
    assert invalid[0].startswith("Invalid, costs nothing: 2 rows (e.g. key 1: '')")
    assert "e.g. key 3: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'" in invalid[1]
    assert all(token not in line for line in log.lines)
    summary = log.lines[-1]
    assert "rows read in" not in summary  # a list has no pages
    assert "5 rows read, 1 enriched, 0 unchanged, 4 invalid" in summary


def test_a_token_inside_an_invalid_value_is_masked(emulator: Any, make_account: Any, log: Any) -> None:
    token = make_account(credits=10)
    secret = token  # a long random token: refused anywhere in a name
    _run(QueryRules(LookupKind.GENDER, secrets=frozenset({secret})), [f"Anna {secret}"], emulator.url, token, log,
         options=RunOptions(log_values=True))
    assert all(secret not in line for line in log.lines)
    assert any("'Anna ***'" in line for line in log.lines)


def test_invalid_values_are_named_by_key_unless_log_values(emulator: Any, make_account: Any, log: Any) -> None:
    """A name is a person's: by default a log line names an invalid row by its key alone."""
    token = make_account(credits=10)
    items = ["Anna", "", "x" * 60, {"email": "no-mailbox-for-zoe"}]
    _run(QueryRules(LookupKind.GENDER), items, emulator.url, token, log)
    invalid = [line for line in log.lines if line.startswith("Invalid, costs nothing")]
    assert invalid[0].startswith("Invalid, costs nothing: 1 row (e.g. key 1): ")
    assert [line for line in log.lines if "xxxxxxxx" in line or "zoe" in line] == []
    assert len(invalid) == 3
