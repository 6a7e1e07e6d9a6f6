"""The columns the engine writes and the result values it takes from answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.warehouse.schema import _values_of_view, result_values


def test_result_values_are_tolerant_and_fit_their_columns() -> None:
    values = result_values(LookupKind.GENDER, {"gender": "female" * 10, "probability": 1, "result_found": True,
                                               "details": {"samples": 12, "country": None}, "first_name": None})
    assert values == ("femalefemalefema", 1.0, 1, 12, None, None, None)
    assert result_values(LookupKind.GENDER, {}) == (None,) * 7
    origin = result_values(LookupKind.ORIGIN, {"country_of_origin": [{"country": "IT", "probability": 0.5}],
                                               "ethnicity": {"id": "ITALIAN"}})
    assert origin[5:9] == ("IT", 0.5, None, "ITALIAN") and origin[-1].startswith("{")


_ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=300),
                       st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["gender", "probability", "result_found", "first_name", "last_name", "input"]),
                       _ANY_VALUE),
       st.dictionaries(st.sampled_from(["samples", "country", "credits_used"]), _ANY_VALUE))
def test_a_gender_answer_stores_what_its_whole_view_says(result: dict[str, Any], details: dict[str, Any]) -> None:
    """The short way a gender answer of plain dicts takes (a store's hot loop) agrees with the
    values read through the whole result view, whatever the service put in the fields."""
    answer = {**result, "details": details}
    assert result_values(LookupKind.GENDER, answer) == _values_of_view(LookupKind.GENDER, answer)
