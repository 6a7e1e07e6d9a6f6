"""A list of names, query objects or rows as the source of a lookup run.

Each item is one value (its index is its key), so results can be aligned with the input.

Example::

    >>> from airflow_provider_namelookup.contract import LookupKind
    >>> source = ListQuestions(["Anna", {"full_name": "John Smith"}, 42], QueryRules(LookupKind.GENDER))
    >>> [v.query_object for v in source.values()][:2]
    [{'first_name': 'Anna'}, {'full_name': 'John Smith'}]
    >>> str(source.values()[2].refusal)
    'mandatory-parameter-missing: row 2 is a int; expected a name or a query object (or set query_field to read rows)'
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from airflow_provider_namelookup.contract import HINT_FIELDS, ID_FIELD
from airflow_provider_namelookup.engine.plan import QueryRules, build_query_object
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import InvalidArgument, NameLookupValidationError


def as_item_list(queries: Any) -> list[Any]:
    """The items of ``queries`` (a list of names, query objects or rows); None is empty.

    :raises InvalidArgument: for a single string, bytes or mapping instead of a list.
    """
    if queries is None:
        return []
    if isinstance(queries, (str, bytes, Mapping)):
        raise InvalidArgument("queries must be a list (of names, query objects or rows), "
                         f"got a single {type(queries).__name__}")
    return list(queries)


def _refused(index: int, item: Any, detail: str, field: str | None = None) -> SourceValue:
    refusal = NameLookupValidationError("mandatory-parameter-missing", detail, field=field)
    return SourceValue(ref=index, query_object=None, refusal=refusal, first_key=index, shown=item)


def item_value(index: int, item: Any, rules: QueryRules, query_field: str | int | None) -> SourceValue:
    """One item as a source value: its query object (a bare name, a query object, or a row read at
    ``query_field``), or the refusal of a shape that is none of these."""
    if isinstance(item, str):
        return _value(index, item, build_query_object(item, rules))
    if query_field is None:
        if isinstance(item, Mapping):
            return _value(index, item, item)
        return _refused(index, item, f"row {index} is a {type(item).__name__}; expected a name or a query object "
                                     "(or set query_field to read rows)")
    if isinstance(item, Mapping):
        if query_field not in item:
            return _refused(index, item, f"row {index} has no field {query_field!r}", str(query_field))
        hints = {hint: item.get(hint) for hint in HINT_FIELDS}
        return _value(index, item, build_query_object(item[query_field], rules, **hints, id=item.get(ID_FIELD)))
    if isinstance(item, Sequence) and isinstance(query_field, int) and -len(item) <= query_field < len(item):
        return _value(index, item, build_query_object(item[query_field], rules))
    return _refused(index, item, f"row {index} has no field {query_field!r}", str(query_field))


def _value(index: int, item: Any, query_object: Mapping[str, Any]) -> SourceValue:
    return SourceValue(ref=index, query_object=query_object, first_key=index, shown=item)


class ListQuestions:
    """The items of a list, one page.

    :param items: names, query objects or rows.
    :param query_field: the key (or index) of a row holding the name; None for names and
        query objects.
    """

    reads_while_writing = False
    asks_while_reading = False  # one page
    reads_pages = False

    def __init__(self, items: Sequence[Any], rules: QueryRules, query_field: str | int | None = None, *,
                 label: str = "list") -> None:
        self.items = list(items)
        self.rules = rules
        self.query_field = query_field
        self.label = label
        self.total_rows = len(self.items)
        self.distinct_bound: int | None = len(self.items)

    def values(self) -> list[SourceValue]:
        return [item_value(i, item, self.rules, self.query_field) for i, item in enumerate(self.items)]

    async def prepare(self) -> bool:
        return True

    async def pages(self, *, own_connection: bool = False) -> AsyncGenerator[list[SourceValue]]:
        yield self.values()

