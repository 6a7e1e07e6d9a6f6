"""The pure scalar functions a ``where`` may call: the common list, which a dialect may narrow or extend.

Named as a user writes them, each with the sqlglot expressions its spellings parse to
(``ifnull`` and ``nvl`` parse to ``coalesce``). A dialect's
:attr:`~.where_spelling.WhereSpelling.functions` is its whole list: SQLite has no ``extract``
and adds ``strftime``.

Example::

    >>> sorted(COMMON_WHERE_FUNCTIONS)[:3]
    ['abs', 'cast (::, try_cast, safe_cast) to a plain type', 'coalesce (ifnull, nvl)']
    >>> "extract (date_part)" in without("extract (date_part)")
    False
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

WhereFunctions = Mapping[str, tuple[type[exp.Expression], ...]]

COMMON_WHERE_FUNCTIONS: WhereFunctions = {
    "lower": (exp.Lower,),
    "upper": (exp.Upper,),
    "trim": (exp.Trim,),
    "length": (exp.Length,),
    "coalesce (ifnull, nvl)": (exp.Coalesce,),
    "nullif": (exp.Nullif,),
    "substring (substr)": (exp.Substring,),
    "abs": (exp.Abs,),
    "extract (date_part)": (exp.Extract,),
    "year, month, day": (exp.Year, exp.Month, exp.Day, exp.TsOrDsToDate),
    "date": (exp.Date, exp.TsOrDsToDate),
    "cast (::, try_cast, safe_cast) to a plain type": (exp.Cast, exp.TryCast),
    "current_date, current_timestamp": (exp.CurrentDate, exp.CurrentTimestamp),
}
"""What every warehouse's ``where`` may call, unless its dialect says otherwise."""

STRFTIME: WhereFunctions = {"strftime": (exp.TimeToStr, exp.TsOrDsToTimestamp)}


def without(*names: str) -> dict[str, tuple[type[exp.Expression], ...]]:
    """The common list without ``names`` (functions an engine lacks)."""
    return {name: kinds for name, kinds in COMMON_WHERE_FUNCTIONS.items() if name not in names}
