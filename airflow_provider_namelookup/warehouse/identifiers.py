"""Table and column names: validated before they reach SQL (the dialect quotes them).

Names come from DAG authors, but they still never reach SQL unchecked: a name is one
or two (``schema.table``) plain identifiers of letters, digits and underscores, the whole
name (``fullmatch``: ``$`` would let a final newline through).

Example::

    >>> check_identifier("customers_2024", "source_table")
    'customers_2024'
    >>> check_identifier("analytics.customers", "source_table", qualified=True)
    'analytics.customers'
    >>> check_identifier("x; DROP TABLE y", "source_table")
    Traceback (most recent call last):
    ...
    ValueError: source_table must be a plain SQL identifier (letters, digits, _), got 'x; DROP TABLE y'
    >>> check_identifier("customers\\n", "target_table")
    Traceback (most recent call last):
    ...
    ValueError: target_table must be a plain SQL identifier (letters, digits, _), got 'customers\\n'
"""

from __future__ import annotations

import re
from typing import Any

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def check_identifier(name: Any, what: str, *, qualified: bool = False) -> str:
    """Return ``name`` if it is a safe identifier (optionally ``schema.name``), else raise ValueError."""
    parts = name.split(".") if isinstance(name, str) else [None]
    if not (1 <= len(parts) <= (2 if qualified else 1)) or not all(
            isinstance(p, str) and _IDENTIFIER.fullmatch(p) for p in parts):
        raise ValueError(f"{what} must be a plain SQL identifier (letters, digits, _), got {name!r}")
    return str(name)
