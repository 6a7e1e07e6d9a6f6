"""How one run may spend and how it reports: :class:`RunOptions`, read by the run and its pieces.

A module of its own so that the pieces (:mod:`.spending`) read it without importing the run
that imports them.

Example::

    RunOptions(max_credits=500, on_insufficient_credits="partial")
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from airflow_provider_namelookup.engine.budget import InsufficientCreditsMode

__all__ = ["RunOptions"]


@dataclass
class RunOptions:
    """How one run may spend and how it reports.

    :param max_credits: most credits the run may spend; None for no budget.
    :param on_insufficient_credits: ``fail`` stops before spending anything when the need
        exceeds what is available; ``partial`` spends what it may.
    :param check_remaining_credits: read the account's remaining credits (a free call)
        before spending.
    :param plan_only: count the need; spend, create and write nothing.
    :param progress_interval: seconds between progress lines.
    :param poll_seconds: how often a run waiting for another run's claims looks again.
    :param spent_earlier: what earlier executions covered by the same ``max_credits`` spent (the
        earlier tries of the task instance in its DAG run, when ``max_credits_scope`` is
        ``dag_run``): ``max_credits`` bounds them and this run together. Read once, when the
        budget is decided; None: ``max_credits`` is this run's alone.
    :param log_values: log lines about rows show an example value beside its key (the operators'
        ``log_values``); else rows are named by key only.
    """

    max_credits: int | None = None
    on_insufficient_credits: InsufficientCreditsMode = "fail"
    check_remaining_credits: bool = True
    plan_only: bool = False
    progress_interval: float = 15.0
    poll_seconds: float = 1.0
    spent_earlier: Callable[[], Awaitable[int]] | None = None
    log_values: bool = False
