"""engine/abstain.py: the thresholds' parsing, and the same rule in Python and in SQL."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_namelookup.engine.abstain import Abstain
from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules
from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect


@pytest.mark.parametrize(("probability", "samples", "message"), [
    (1.01, None, "min_probability must be a number from 0 to 1, got 1.01"),
    ("high", None, "min_probability must be a number from 0 to 1, got 'high'"),
    ("nan", None, "min_probability must be a number from 0 to 1, got 'nan'"),
    (True, None, "min_probability must be a number from 0 to 1, got True"),
    (None, -1, "min_samples must be a whole number from 0, got -1"),
    (None, 2.5, "min_samples must be a whole number from 0, got 2.5"),
])
def test_a_bad_threshold_names_its_argument_and_rule(probability: object, samples: object, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        Abstain.parse(min_probability=probability, min_samples=samples)


def test_rendered_templates_and_empty_values_parse() -> None:
    assert Abstain.parse(min_probability="0.75", min_samples="10") == Abstain(0.75, 10)
    assert Abstain.parse(min_probability="", min_samples=None) is None
    assert Abstain.parse(min_probability=None, min_samples="  ") is None


def test_only_gender_abstains_and_a_threshold_changes_the_rows_fingerprint() -> None:
    plain = QueryRules(LookupKind.GENDER)
    assert QueryRules(LookupKind.GENDER, abstain=None).fingerprint == plain.fingerprint  # rows of before stay
    strict, stricter = (QueryRules(LookupKind.GENDER, abstain=Abstain(p)) for p in (0.8, 0.9))
    assert len({plain.fingerprint, strict.fingerprint, stricter.fingerprint}) == 3
    with pytest.raises(ValueError, match="gender lookups only"):
        QueryRules(LookupKind.ORIGIN, abstain=Abstain(0.8))


def test_a_missing_probability_abstains_and_missing_samples_do_not() -> None:
    rule = Abstain(0.9, 50)
    assert rule.written({"gender": "female", "probability": None, "samples": 80})["gender"] == "unknown"
    assert rule.written({"gender": "female", "probability": 0.95, "samples": None})["gender"] == "female"
    assert Abstain(0.0, 50).written({"gender": "male", "probability": None})["gender"] == "male"  # 0: no bar
    assert rule.written({"gender": None, "probability": None})["gender"] is None  # no answer stays none
    assert rule.written({"gender": "female", "probability": 0.95, "samples": 49})["gender"] == "unknown"
    assert rule.written({"gender": "female", "probability": 0.9, "samples": 50})["gender"] == "female"  # not below
    kept = rule.written({"gender": "male", "probability": 0.5, "samples": 3, "first_name": "Kim"})
    assert kept == {"gender": "unknown", "probability": 0.5, "samples": 3, "first_name": "Kim"}


@given(min_probability=st.none() | st.floats(0, 1), min_samples=st.none() | st.integers(0, 10_000),
       probability=st.none() | st.floats(0, 1), samples=st.none() | st.integers(0, 10_000),
       gender=st.sampled_from(["male", "female", "unknown", None]))
def test_the_sql_rule_writes_what_the_python_rule_writes(min_probability: float | None, min_samples: int | None,
                                                         probability: float | None, samples: int | None,
                                                         gender: str | None) -> None:
    rule = Abstain.parse(min_probability=min_probability, min_samples=min_samples)
    if rule is None:
        return
    literal = WarehouseDialect.literal.__get__(object.__new__(WarehouseDialect))
    with sqlite3.connect(":memory:") as db:
        (written,) = db.execute(f"SELECT {rule.sql('g', 'p', 's', literal)} FROM (SELECT ? AS g, ? AS p, ? AS s)",
                                (gender, probability, samples)).fetchone()
    assert written == rule.written({"gender": gender, "probability": probability, "samples": samples})["gender"]
