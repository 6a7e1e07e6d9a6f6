"""What a warehouse's ``where`` may hold and how the engine may read it, as one value a dialect
owns: :class:`WhereSpelling` (its :attr:`~.spelling.Spelling.where`).

The rules of a ``where`` (:mod:`~airflow_provider_namelookup.warehouse.where_clause`) and the check
of what it sends (:mod:`~airflow_provider_namelookup.warehouse.sent_where`) read it; how a string
is written stays the dialect's own method (:meth:`~.spelling.Spelling.where_string`).

Example::

    >>> from sqlglot import exp
    >>> [form.__name__ for form in WhereSpelling(string_forms=(exp.National,)).string_forms]
    ['National']
    >>> "lower" in WhereSpelling().functions
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from airflow_provider_namelookup.warehouse.dialects.where_functions import COMMON_WHERE_FUNCTIONS, WhereFunctions
from airflow_provider_namelookup.warehouse.dialects.where_literals import WhereReading

__all__ = ["WhereSpelling"]


@dataclass(frozen=True)
class WhereSpelling:
    """What a ``where`` may call and write on one engine, and the engine's settings that read text otherwise.

    :param functions: the pure scalar functions a ``where`` may call: the name a user writes, and
        the sqlglot expressions it parses to (:mod:`.where_functions`; SQLite's list has no
        ``extract`` and adds ``strftime``).
    :param readings: the engine's settings that change how it reads a literal or an operator
        (:mod:`.where_literals`): what a ``where`` sends must read the same under each.
    :param string_forms: the spellings of a string the dialect's ``where_string`` writes besides
        ``'...'`` (SQL Server's ``N'...'``, MySQL's ``REPEAT(' ', 0)`` for ``''``, Databricks'
        ``CHR(39)``): a ``where`` may hold them too, over no column, so that what runs keeps the rules.
    """

    functions: WhereFunctions = field(default_factory=lambda: COMMON_WHERE_FUNCTIONS)
    readings: tuple[WhereReading, ...] = ()
    string_forms: tuple[type[exp.Expression], ...] = ()
