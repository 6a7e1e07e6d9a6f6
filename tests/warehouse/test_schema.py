"""The columns the engine writes and the result values it takes from answers."""

from __future__ import annotations

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.warehouse.schema import result_values


def test_result_values_are_tolerant_and_fit_their_columns() -> None:
    values = result_values(LookupKind.GENDER, {"gender": "female" * 10, "probability": 1, "result_found": True,
                                               "details": {"samples": 12, "country": None}, "first_name": None})
    assert values == ("femalefemalefema", 1.0, 1, 12, None, None, None)
    assert result_values(LookupKind.GENDER, {}) == (None,) * 7
    origin = result_values(LookupKind.ORIGIN, {"country_of_origin": [{"country": "IT", "probability": 0.5}],
                                               "ethnicity": {"id": "ITALIAN"}})
    assert origin[5:9] == ("IT", 0.5, None, "ITALIAN") and origin[-1].startswith("{")
