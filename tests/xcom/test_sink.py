"""The list run's sink: one result per item, in input order."""

from __future__ import annotations

import asyncio

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, plan_name
from airflow_provider_namelookup.engine.ports import Question, RunOutcome
from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache
from airflow_provider_namelookup.xcom.sink import ListResults

SPEC = QueryRules(LookupKind.GENDER)


def _question(index: int, name: str, **hints: str) -> Question:
    return plan_name(name, SPEC, **hints, ref=index)


def test_results_align_with_the_input_and_say_why_a_row_has_none() -> None:
    anna, ben, empty, carla = (_question(1, "Anna", id="a-1"), _question(0, "Ben"), _question(2, ""),
                               _question(3, "Carla"))
    cache = MemoryAnswerCache({anna.query_hash: {"gender": "female", "input": {"first_name": "Anna", "id": "hash"}}})
    sink = ListResults(cache)
    asyncio.run(sink.fill(RunOutcome([anna, ben, empty, carla], answered={anna.query_hash}, paid_here=set(),
                                     deferred={carla.query_hash})))
    first, second, third, fourth = sink.results
    assert first["error"]["status_id"] == "not-answered"  # Ben, item 0
    assert second == {"gender": "female", "input": {"first_name": "Anna", "id": "a-1"}}  # its own id echoed
    assert third["error"]["status_id"] == "parameter-first-name-invalid"
    assert fourth["error"]["status_id"] == "insufficient-credits"
