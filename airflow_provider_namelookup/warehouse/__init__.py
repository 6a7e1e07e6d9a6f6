"""The warehouse ends of a lookup run: a table's distinct values in, an enriched table out.

Rows stay in the warehouse; Python sees only distinct questions. The adapters of the one
run (:mod:`airflow_provider_namelookup.engine.run`) are :class:`~.source.TableQuestions`
(the source), :class:`~.answers.AnswersTable` (the shared answers table with leases) and
:class:`~.target.TargetTable` (the sink); every statement they send is spelled by the
warehouse's dialect (:mod:`.dialects`), grouped by job; they write no SQL of their own.

Example::

    session = WarehouseSession(hook)
    run = table_run(session, TableRunSpec(source=TableSource(session.dialect, table="customers",
                                                             key_column="customer_id", name_column="first_name"),
                                          target="customers_gender", answers="namelookup_answers",
                                          rules=QueryRules(LookupKind.GENDER)), async_hook, log)
    progress = await run.run()
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.ports import LookupService
from airflow_provider_namelookup.engine.run import LookupRun, RunOptions
from airflow_provider_namelookup.errors import NameLookupBudgetReached, with_what_to_change
from airflow_provider_namelookup.personal.pseudonym import Pseudonymiser
from airflow_provider_namelookup.personal.service import PseudonymisingService
from airflow_provider_namelookup.warehouse.answers import (
    CLAIM_CHUNK,
    DEFAULT_ANSWERS_TABLE,
    SPENDER_LENGTH,
    AnswersTable,
)
from airflow_provider_namelookup.warehouse.schema import chosen_result_columns
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import FirstRow, TableQuestions, TableSource
from airflow_provider_namelookup.warehouse.target import TargetTable
from airflow_provider_namelookup.warehouse.valuemap import ValueMap

__all__ = ["DEFAULT_ANSWERS_TABLE", "TableRunSpec", "TableSource", "WarehouseSession", "spender_of", "table_run"]


@dataclass(frozen=True)
class TableRunSpec:
    """What one table run enriches, and how.

    :param target: the target table's name; ``answers``: the shared answers table's.
    :param page_size: distinct values read at a time.
    :param max_age: answers (and target rows) older than this are looked up again; None: never.
    :param lease_seconds: how long a claim holds without renewal (renewed every third of it).
    :param claim_chunk: questions claimed together.
    :param spender: the paying task instance (its DAG, run, task and map index, hashed: see
        :func:`spender_of`), written after this run's id in the answers it stores.
    :param max_credits_covers_earlier_tries: ``max_credits`` bounds what every execution with this
        ``spender`` stored, this one included (``max_credits_scope="dag_run"``).
    :param retention: answers stored longer ago than this are deleted from the answers table when the
        run starts; None: kept until erased.
    :param columns: the result columns the target holds (:func:`~.schema.chosen_result_columns`);
        None: every one of the lookup's. The provider's own columns are always there.
    """

    source: TableSource
    target: str
    answers: str
    rules: QueryRules
    page_size: int = 10_000
    max_age: timedelta | None = None
    lease_seconds: float = 60.0
    claim_chunk: int = CLAIM_CHUNK
    spender: str = ""
    max_credits_covers_earlier_tries: bool = False
    retention: timedelta | None = None
    columns: tuple[str, ...] | None = None


def spender_of(dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    """The hex id of a task instance in its DAG run, the same for each of its tries and clears.

    >>> spender_of("d", "manual__1", "enrich", -1) == spender_of("d", "manual__1", "enrich", -1)
    True
    >>> len(spender_of("d", "manual__1", "enrich", -1)), spender_of("d", "r", "t", 0) == spender_of("d", "r", "t", 1)
    (24, False)
    """
    return hashlib.sha256(f"{dag_id}\0{run_id}\0{task_id}\0{map_index}".encode()).hexdigest()[:SPENDER_LENGTH]

def table_run(session: WarehouseSession, job: TableRunSpec, service: LookupService, log: Any,
              options: RunOptions | None = None) -> LookupRun:
    """The run of one table enrichment over ``session``'s warehouse."""
    options = options or RunOptions()
    dialect = session.dialect
    pseudonymiser = Pseudonymiser(job.rules.identity_key) if job.rules.identity_key is not None else None
    if pseudonymiser is not None:  # the echoes are hashed as each answer comes, before the answers table
        service = PseudonymisingService(service, pseudonymiser)
    if dialect.proof == "parsed only":
        log.warning("The SQL the table operators send to %s is generated and parsed in this release's tests, but has "
                    "not been run on %s by them: check the first runs (docs: Warehouses)",
                    dialect.name, dialect.name)
    if dialect.tuning.store_every_seconds > 2 and not options.plan_only:
        log.warning("Answers are stored in %s at most every %.0f s (each statement costs time there): a task "
                    "killed outright loses up to that long's answers, which the next run pays again", dialect.name,
                    dialect.tuning.store_every_seconds)
    now = datetime.now(UTC)
    stale_rows = dialect.timestamp(now - job.max_age) if job.max_age else None
    stale_answers = (now - job.max_age).timestamp() if job.max_age else None
    value_map = ValueMap(session, job.source.names(with_params=False), schema=job.answers.rpartition(".")[0] or None,
                         pseudonymiser=pseudonymiser)
    answers = AnswersTable(session, job.answers, value_map, lookup=job.rules.lookup, paid_for=job.target,
                           owner=uuid.uuid4().hex + job.spender, lease_seconds=job.lease_seconds,
                           stale_before=stale_answers,
                           plan_only=options.plan_only, claim_chunk=job.claim_chunk,
                           expire_before=(now - job.retention).timestamp() if job.retention else None)
    if job.max_credits_covers_earlier_tries and job.spender:
        options = replace(options, spent_earlier=answers.spent_earlier)
    first_row = FirstRow()
    target = TargetTable(session, job.target, job.source, value_map, answers.quoted, job.rules,
                         stamp=dialect.timestamp(now), stale_rows_before=stale_rows, first_row=first_row, log=log,
                         erased_since=answers.started, results=chosen_result_columns(job.rules.lookup, job.columns))
    questions = TableQuestions(session, job.source, job.rules, target, page_size=job.page_size,
                               stale_rows_before=stale_rows, first_row=first_row)
    return LookupRun(job.rules, questions, answers, target, service, log, options,
                     label=f"{job.source.label} -> {target.name}", statements=answers,
                     on_failure=_stopped(log, answers.name))


def _stopped(log: Any, answers: str) -> Any:
    """What a table run says when it stops on an error: what it paid for is kept in ``answers``
    (or that it paid for nothing), and what answers lost on the way may have cost, in one sentence
    whatever the error's own punctuation."""
    def say(err: BaseException, paid: int, maybe_charged: int) -> None:
        said = with_what_to_change(err).rstrip().rstrip(".")
        if maybe_charged and not isinstance(err, NameLookupBudgetReached):  # which says it already
            said += f"; {maybe_charged} credits may have been charged for answers lost on the way"
        if not paid:
            log.error("Stopped: %s; %s.", said, "no answer was received" if maybe_charged else "nothing was paid for")
            return
        log.error("Stopped: %s. The %d answers this run paid for are stored in %s; the next run pays only for "
                  "the rest.", said, paid, answers)
    return say
