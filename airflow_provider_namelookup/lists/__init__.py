"""The list ends of a lookup run (the XCom operators): items in, aligned results out.

Example::

    from airflow_provider_namelookup.lists import list_run

    run = list_run(RowSpec(LookupKind.GENDER), ["Anna", "anna", {"full_name": "John Smith"}], hook, log)
    await run.run()                        # 2 distinct queries, 2 credits
    run.sink.results                       # 3 results, in input order (run.cache.answers: what was paid)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_namelookup.engine.plan import RowSpec
from airflow_provider_namelookup.engine.run import LookupRun, RunOptions
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.lists.cache import MemoryAnswers
from airflow_provider_namelookup.lists.sink import ListResults
from airflow_provider_namelookup.lists.source import ListQuestions, as_item_list

__all__ = ["ListQuestions", "ListResults", "MemoryAnswers", "as_item_list", "list_run"]


def list_run(spec: RowSpec, items: Sequence[Any], hook: NameLookupAsyncHook, log: logging.Logger | Any,
             options: RunOptions | None = None, *, query_field: str | int | None = None,
             saved: Mapping[str, dict[str, Any]] | None = None, label: str = "list") -> LookupRun:
    """A run over ``items``: answers saved by an earlier try (``saved``) are not paid again."""
    cache = MemoryAnswers(saved)
    return LookupRun(spec, ListQuestions(items, spec, query_field, label=label), cache, ListResults(cache), hook,
                     log, options)
