"""A list's items as a run's source: one value per item, its index its key."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.xcom.source import ListQuestions, as_item_list, item_value

GENDER = QueryRules(LookupKind.GENDER, default_country="DE")


def test_each_item_is_one_value_keyed_by_its_index() -> None:
    source = ListQuestions(["Anna", {"full_name": "John Smith", "id": 7}, ("x", "Ben")], GENDER, label="people")
    pages = asyncio.run(_pages(source))
    assert len(pages) == 1 and [v.ref for v in pages[0]] == [0, 1, 2] and source.total_rows == 3
    assert pages[0][0].query_object == {"first_name": "Anna", "country": "DE"}
    assert pages[0][1].query_object == {"full_name": "John Smith", "id": 7}
    assert isinstance(pages[0][2].refusal, NameLookupValidationError)  # a tuple without query_field


async def _pages(source: ListQuestions) -> list[list]:  # type: ignore[type-arg]
    assert await source.prepare() and source.distinct_bound == len(source.items)
    return [page async for page in source.pages()]


@pytest.mark.parametrize(("item", "field", "expected"), [
    ({"name": "Anna", "country": "IT", "id": 3}, "name", {"first_name": "Anna", "country": "IT", "id": 3}),
    (("1", "Ben"), 1, {"first_name": "Ben", "country": "DE"}),
    ({"nom": "Anna"}, "name", "row 0 has no field 'name'"),
    (("only",), 3, "row 0 has no field 3"),
])
def test_rows_are_read_at_their_query_field(item: object, field: object, expected: object) -> None:
    value = item_value(0, item, GENDER, field)  # type: ignore[arg-type]
    assert value.ref == value.first_key == 0 and value.shown == item
    if isinstance(expected, str):
        assert value.query_object is None and expected in str(value.refusal)
    else:
        assert value.query_object == expected and value.refusal is None


def test_queries_must_be_a_list() -> None:
    assert as_item_list(None) == [] and as_item_list(("Anna",)) == ["Anna"]
    for single in ("Anna", b"Anna", {"first_name": "Anna"}):
        with pytest.raises(ValueError, match="queries must be a list"):
            as_item_list(single)
