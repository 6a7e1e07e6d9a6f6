"""Properties of evaluate() that hold for any labelled set (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_namelookup.evaluation import evaluate

LABELS = st.sampled_from(["m", "f", "u", "male", "female", "unknown", None, "robot"])
probabilities = st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0.5, 0.75, 0.99, 1.0]))
ROW = st.fixed_dictionaries({
    "label": LABELS,
    "gender": st.sampled_from(["male", "female", "unknown", None]),
    "probability": probabilities,
    "samples": st.one_of(st.none(), st.integers(0, 1_000)),
    "country": st.sampled_from(["DE", "IT", None]),
})
ROWS = st.lists(ROW, max_size=60)
ANSWERED = st.lists(st.fixed_dictionaries({
    "label": st.sampled_from(["m", "f"]), "gender": st.sampled_from(["male", "female"]),
    "probability": st.floats(0.5, 1), "samples": st.integers(1, 1_000)}), min_size=1, max_size=60)
THRESHOLDS = st.one_of(st.none(), st.lists(st.floats(0, 1), min_size=1, max_size=12))
BOUND = st.floats(0, 1)


@given(ROWS, BOUND, THRESHOLDS)
@settings(max_examples=200, deadline=None)
def test_ratios_in_range_and_counts_add_up(rows: list[dict[str, Any]], bound: float,
                                           thresholds: list[float] | None) -> None:
    result = evaluate(rows, bound, thresholds=thresholds, group_key="country")
    json.dumps(result, allow_nan=False)
    assert result["evaluated"] + result["left_out"] + result["not_answered"] + result["unreadable"]["rows"] \
        == result["rows"] == len(rows)
    assert sum(result["confusion"].values()) == result["evaluated"]
    for entry in [result["ratios"], result["best"]["ratios"] if result["best"] else {}, *result["tuning"]]:
        for name in ("errorCoded", "errorCodedWithoutNA", "naCoded", "kept"):
            assert entry.get(name) is None or 0 <= entry[name] <= 1
        assert entry.get("errorGenderBias") is None or -1 <= entry["errorGenderBias"] <= 1
    for entry in result["tuning"]:  # errorCoded = errorCodedWithoutNA × kept + naCoded
        if entry["errorCodedWithoutNA"] is not None:
            assert entry["errorCoded"] == pytest.approx(entry["errorCodedWithoutNA"] * entry["kept"]
                                                        + entry["naCoded"])
    groups = result["by_group"].values()
    for cell in result["confusion"]:
        assert sum(group["confusion"][cell] for group in groups) == result["confusion"][cell]
    assert sum(group["left_out"] for group in groups) == result["left_out"]


@given(ANSWERED)
@settings(max_examples=200, deadline=None)
def test_without_unknowns_error_coded_equals_error_coded_without_na(rows: list[dict[str, Any]]) -> None:
    ratios = evaluate(rows)["ratios"]
    assert ratios["naCoded"] == 0
    assert ratios["errorCoded"] == ratios["errorCodedWithoutNA"]


@given(ROWS, st.lists(st.integers(0, 1_000), min_size=1, max_size=4))
@settings(max_examples=200, deadline=None)
def test_tuning_table_is_monotone_in_the_share_kept(rows: list[dict[str, Any]], samples: list[int]) -> None:
    """A higher min_probability (or min_samples) keeps no more rows and leaves no fewer unknown."""
    tuning = evaluate(rows, samples_thresholds=samples)["tuning"]
    for min_samples in set(samples):
        line = [e for e in tuning if e["min_samples"] == min_samples]
        assert [e["min_probability"] for e in line] == sorted(e["min_probability"] for e in line)
        kept = [e["kept"] for e in line if e["kept"] is not None]
        assert kept == sorted(kept, reverse=True)
        na = [e["naCoded"] for e in line if e["naCoded"] is not None]
        assert na == sorted(na)
    for probability in {e["min_probability"] for e in tuning}:
        column = sorted((e for e in tuning if e["min_probability"] == probability), key=lambda e: e["min_samples"])
        kept = [e["kept"] for e in column if e["kept"] is not None]
        assert kept == sorted(kept, reverse=True)


@given(ROWS, BOUND)
@settings(max_examples=200, deadline=None)
def test_best_meets_the_bound_at_the_lowest_error_coded(rows: list[dict[str, Any]], bound: float) -> None:
    result = evaluate(rows, bound)
    meeting = [e for e in result["tuning"] if e["errorCodedWithoutNA"] is not None
               and e["errorCodedWithoutNA"] <= bound]
    if not meeting:
        assert result["best"] is None
        return
    best = result["best"]
    assert best["ratios"]["errorCodedWithoutNA"] <= bound
    assert best["ratios"]["errorCoded"] == min(e["errorCoded"] for e in meeting)
    assert isinstance(best["min_probability"], float) and 0 <= best["min_probability"] <= 1
    # The operators' rule applied with the chosen threshold gives the same matrix.
    assert evaluate(rows, bound, min_probability=best["min_probability"])["confusion"] == best["confusion"]


@given(ROWS, THRESHOLDS, st.lists(st.one_of(st.none(), st.integers(0, 1_000)), min_size=1, max_size=3))
@settings(max_examples=60, deadline=None)
def test_each_tuning_entry_is_the_evaluation_at_its_thresholds(rows: list[dict[str, Any]],
                                                               thresholds: list[float] | None,
                                                               samples: list[int | None]) -> None:
    """The tuning table (computed in one sweep) agrees with evaluating at each threshold on its own."""
    tuning = evaluate(rows, thresholds=thresholds, samples_thresholds=samples)["tuning"]
    for entry in tuning:
        alone = evaluate(rows, min_probability=entry["min_probability"], min_samples=entry["min_samples"],
                         thresholds=[0.5])
        assert {**alone["ratios"], "kept": alone["kept"]} == {
            name: entry[name] for name in (*alone["ratios"], "kept")}
