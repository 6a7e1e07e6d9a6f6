"""A list of names, query objects or rows as the source of a lookup run.

Each item is one value (its index is its key), so results can be aligned with the input.

Example::

    >>> from airflow_provider_namelookup.contract import LookupKind
    >>> source = ListQuestions(["Anna", {"full_name": "John Smith"}, 42], RowSpec(LookupKind.GENDER))
    >>> [v.raw for v in source.values()][:2]
    [{'first_name': 'Anna'}, {'full_name': 'John Smith'}]
    >>> str(source.values()[2].raw)
    'mandatory-parameter-missing: row 2 is a int; expected a name or a query object (or set query_field to read rows)'
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from airflow_provider_namelookup.contract import HINT_FIELDS, ID_FIELD
from airflow_provider_namelookup.engine.plan import RowSpec, build_query_object
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError


def as_item_list(queries: Any) -> list[Any]:
    """The items of ``queries`` (a list of names, query objects or rows); None is empty.

    :raises ValueError: for a single string, bytes or mapping instead of a list.
    """
    if queries is None:
        return []
    if isinstance(queries, (str, bytes, Mapping)):
        raise ValueError("queries must be a list (of names, query objects or rows), "
                         f"got a single {type(queries).__name__}")
    return list(queries)


def _refused(detail: str, field: str | None = None) -> NameLookupValidationError:
    return NameLookupValidationError("mandatory-parameter-missing", detail, field=field)


def item_query(index: int, item: Any, spec: RowSpec, query_field: str | int | None) -> Any:
    """The query object of one item (a bare name, a query object, or a row read at
    ``query_field``), or the error that refuses a shape that is none of these."""
    if isinstance(item, str):
        return build_query_object(item, spec)
    if query_field is None:
        if isinstance(item, Mapping):
            return item
        return _refused(f"row {index} is a {type(item).__name__}; expected a name or a query object "
                        "(or set query_field to read rows)")
    if isinstance(item, Mapping):
        if query_field not in item:
            return _refused(f"row {index} has no field {query_field!r}", str(query_field))
        hints = {hint: item.get(hint) for hint in HINT_FIELDS}
        return build_query_object(item[query_field], spec, **hints, id=item.get(ID_FIELD))
    if isinstance(item, Sequence) and isinstance(query_field, int) and -len(item) <= query_field < len(item):
        return build_query_object(item[query_field], spec)
    return _refused(f"row {index} has no field {query_field!r}", str(query_field))


class ListQuestions:
    """The items of a list, one page.

    :param items: names, query objects or rows.
    :param query_field: the key (or index) of a row holding the name; None for names and
        query objects.
    """

    reads_while_writing = False
    reads_pages = False

    def __init__(self, items: Sequence[Any], spec: RowSpec, query_field: str | int | None = None, *,
                 label: str = "list") -> None:
        self.items = list(items)
        self.spec = spec
        self.query_field = query_field
        self.label = label
        self.total_rows = len(self.items)

    def values(self) -> list[SourceValue]:
        return [SourceValue(ref=i, raw=item_query(i, item, self.spec, self.query_field), rows=1, first_key=i,
                            shown=item) for i, item in enumerate(self.items)]

    async def prepare(self) -> bool:
        return True

    async def pages(self, *, separately: bool = False) -> AsyncIterator[list[SourceValue]]:
        yield self.values()

    async def row_bound(self) -> int:
        return len(self.items)
