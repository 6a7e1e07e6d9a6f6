"""Rows as an Arrow table, for a warehouse that reads one where it lies (DuckDB:
:attr:`~.dialects.traits.BulkLoad.ARROW`).

Binding a list per column (``UNNEST``) makes the driver convert every value on its own; an Arrow
table is converted in bulk, and the warehouse scans it in place: 2,500 answers went in 3.4 ms
instead of 10.6 ms. An Arrow array holds one type, so a column whose values are of more than
one Python type (or that Arrow cannot hold exactly: an integer past 64 bits, a text with a
lone surrogate) gives None, and such rows are bound as lists as before. So does a missing
``pyarrow`` (the ``duckdb`` extra installs it).

Example::

    >>> table = arrow_table([("Anna", 1, None), ("Zoë", 2, 0.5)], 3)
    >>> table.column_names, table.num_rows
    (['c0', 'c1', 'c2'], 2)
    >>> arrow_table([("Anna",), (7,)], 1) is None      # a text and a number in one column
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def arrow_table(rows: Sequence[Sequence[Any]], width: int) -> Any | None:
    """``rows`` as an Arrow table of columns ``c0``, ``c1``, ... (each one Python type, or None),
    or None where they cannot be one exactly (see the module docstring)."""
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
