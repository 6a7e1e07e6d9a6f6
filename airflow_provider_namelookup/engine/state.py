"""What one run's pieces share: :class:`RunState`, made once by the run and handed to each piece.

The reading, the claims, the asking and the finish all note what they did in the same ledger and
counts, against the same answer cache; each is handed this one value instead of the parts one by
one, so that what a piece shares with the others is said in one place, and a piece is made for a
run in one line.

Example::

    state = RunState(cache, Ledger(), RunProgress(label="customers"), log, price=1)
    planner = PagePlanner(rules, source, state)
    claimer = Claimer(state, poll_seconds=1.0)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.engine.ledger import Ledger
from airflow_provider_namelookup.engine.ports import AnswerCache
from airflow_provider_namelookup.engine.progress import RunProgress


@dataclass(frozen=True)
class RunState:
    """One run's shared state (the module docstring says why one value).

    :param cache: the answer cache the run claims in, stores into and reads answers from.
    :param ledger: each distinct query's state in this run.
    :param progress: the run's counts and progress lines.
    :param log: the task's logger.
    :param price: credits per query of the run's lookup.
    """

    cache: AnswerCache
    ledger: Ledger
    progress: RunProgress
    log: logging.Logger | Any
    price: int
