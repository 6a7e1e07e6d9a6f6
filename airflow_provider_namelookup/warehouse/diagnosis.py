"""Mistakes in what a DAG author wrote, named: the error the source and target raise for them.

When the source cannot be read, a few probes that read no row find out why (the table
does not exist, a column is misspelled, the ``where`` or the ``sql`` does not run:
:func:`~.source.explain_source_error`). The error names the parameter and what was written
in it, with the first line of the warehouse's own message (:func:`first_line`), never SQL
the author did not write. Such mistakes fail the task at once, without Airflow's retries
(no retry can fix them); anything else (a lost connection, a lock) is raised as it was and
retried.

Example::

    raise WarehouseInputError(f"name_column 'nmae' is not a column of source_table 'customers'"
                              f"{connection_of(hook)}: {first_line(err)}")
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any


class WarehouseInputError(ValueError):
    """A table operator's parameter names something the warehouse does not have or cannot run."""


def first_line(err: BaseException) -> str:
    """The warehouse's message, first line only (drivers go on with the statement they ran)."""
    text = str(err).strip().splitlines()
    return text[0].strip() if text else type(err).__name__


def connection_of(hook: Any) -> str:
    """`` on connection '<conn_id>'`` of a warehouse hook, or nothing when it has no connection id."""
    conn_id = getattr(hook, getattr(hook, "conn_name_attr", ""), None)
    return f" on connection {conn_id!r}" if conn_id else ""


def nearest_names(name: str, candidates: Sequence[str], *, count: int = 3) -> list[str]:
    """The names among ``candidates`` closest to a misspelled ``name`` (case aside), best first.

    >>> nearest_names("frist_name", ["customer_id", "first_name", "last_name", "country"])
    ['first_name', 'last_name']
    """
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    return [by_lower[match] for match in difflib.get_close_matches(name.lower(), list(by_lower), n=count, cutoff=0.6)]
