"""Rows as an Arrow table, for a warehouse that reads one where it lies (DuckDB:
:attr:`~.dialects.traits.BulkLoad.ARROW`).

Binding a list per column (``UNNEST``) makes the driver convert every value on its own; an Arrow
table is converted in bulk, and the warehouse scans it in place: 2,500 answers went in 3.4 ms
instead of 10.6 ms. An Arrow array holds one type, so a column whose values are of more than
one Python type (or that Arrow cannot hold exactly: an integer past 64 bits, a text with a
lone surrogate) gives None, and such rows are bound as lists as before. So does a missing
``pyarrow`` (the ``duckdb`` extra installs it).

So does a process that has not imported pandas but could: pyarrow's first conversion of a list
imports pandas when it is installed (any list might be a pandas object), about 0.2 s that a fresh
task process pays inside its run. That is more than Arrow saves a run of 42,000 distinct names
(a DuckDB 1M-row first run, each in a fresh process: 3.41 s with Arrow, 3.29 s with lists, 3.13 s
with Arrow when pandas was imported before). A worker whose DAG files import pandas, or that has no
pandas, converts with Arrow.

Example::

    >>> import pandas  # as a worker whose DAG files use it has (else: lists, the same values)
    >>> table = arrow_table([("Anna", 1, None), ("Zoë", 2, 0.5)], 3)
    >>> table.column_names, table.num_rows
    (['c0', 'c1', 'c2'], 2)
    >>> arrow_table([("Anna",), (7,)], 1) is None      # a text and a number in one column
    True
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any


@functools.cache
def _pandas_installed() -> bool:
    return importlib.util.find_spec("pandas") is not None


def converts_without_pandas() -> bool:
    """Whether pyarrow's conversion of a list would not import pandas now: pandas is imported
    already, or not installed."""
    return "pandas" in sys.modules or not _pandas_installed()


def arrow_table(rows: Sequence[Sequence[Any]], width: int) -> Any | None:
    """``rows`` as an Arrow table of columns ``c0``, ``c1``, ... (each one Python type, or None),
    or None where they cannot be one exactly, or where converting them would import pandas
    (see the module docstring)."""
    if not converts_without_pandas():
        return None
    try:
        import pyarrow as pa
    except ImportError:
        return None
    columns = []
    for i in range(width):
        values = [row[i] for row in rows]
        if len({type(value) for value in values if value is not None}) > 1:
            return None  # Arrow would convert one into the other (an int into a float, a text into bytes)
        try:
            columns.append(pa.array(values))
        except (pa.ArrowException, OverflowError, TypeError, ValueError):  # UnicodeError is a ValueError
            return None
    return pa.table(columns, names=[f"c{i}" for i in range(width)])
