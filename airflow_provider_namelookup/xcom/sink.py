"""The sink of a list run: one result per input item, in input order.

Each item gets the service's answer to its question (with its own ``input`` echoed, its
id included), or ``{"error": {"status_id", "detail", "field"}}``: the rule it broke, or
why it was not answered (``insufficient-credits`` when the budget ran out).

Example::

    sink = ListResults(cache)              # the run's MemoryAnswerCache
    await sink.fill(outcome)
    sink.results          # [{"gender": "female", ...}, {"error": {...}}, ...]
"""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.engine.abstain import Abstain
from airflow_provider_namelookup.engine.ports import Question, Result, RunOutcome
from airflow_provider_namelookup.personal.pseudonym import Pseudonymiser
from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache

NOT_ANSWERED = {"status_id": "not-answered", "field": None, "detail": "no answer was received"}
DEFERRED = {"status_id": "insufficient-credits", "field": None,
            "detail": "not looked up: the credit budget was used up; run again later"}


class ListResults:
    """Results aligned with the input items (filled at the end of the run).

    :param cache: the run's answers.
    :param abstain: gender answers below its thresholds are given as ``unknown`` (their
        probability and samples kept).
    :param pseudonymiser: a pseudonymising run's: each result's ``input`` holds the pseudonym of
        the name it was asked for (the answers' own echoes are hashed as they come).
    """

    def __init__(self, cache: MemoryAnswerCache, abstain: Abstain | None = None,
                 pseudonymiser: Pseudonymiser | None = None) -> None:
        self.cache = cache
        self.abstain = abstain
        self.pseudonymiser = pseudonymiser
        self.results: list[Result] = []

    async def prepare(self, *, create: bool) -> bool:
        return True

    async def fill(self, outcome: RunOutcome) -> None:
        answers = self.cache.answers
        self.results = [self._output(q, answers, outcome) for q in sorted(outcome.questions, key=lambda q: q.ref)]

    def _output(self, question: Question, answers: dict[str, Result], outcome: RunOutcome) -> dict[str, Any]:
        if question.error is not None:
            return {"error": question.error.as_dict()}
        if question.query_hash in answers and question.query is not None:
            answer = answers[question.query_hash]
            if self.abstain is not None:
                answer = self.abstain.written(answer)
            payload = question.query.to_payload()
            if self.pseudonymiser is not None:
                payload = self.pseudonymiser.payload(payload)
            return {**answer, "input": payload}
        if question.query_hash in outcome.deferred:
            return {"error": dict(DEFERRED)}
        return {"error": dict(NOT_ANSWERED)}
