"""evaluate() on labelled people from gender-guesser's dictionary, looked up for real against the
emulator over loopback (see ``labelled.py`` for how the people and their true genders are drawn)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from airflow_provider_namelookup.evaluation import evaluate
from tests.evaluation.labelled import SURE


def test_names_the_dictionary_is_sure_of_are_all_right(looked_up: list[dict[str, Any]]) -> None:
    sure = [row for row in looked_up if row["class"] in SURE]
    result = evaluate(sure)
    assert result["evaluated"] > 150
    assert result["confusion"]["mf"] == result["confusion"]["fm"] == 0
    assert result["ratios"]["errorCoded"] == 0 and result["ratios"]["naCoded"] == 0


def test_ambiguous_names_bring_errors_that_a_threshold_removes(looked_up: list[dict[str, Any]]) -> None:
    result = evaluate(looked_up, max_error_without_na=0.05, group_key="country")
    unrecorded = sum(row["label"] is None for row in looked_up)
    assert result["left_out"] == unrecorded == 40
    assert result["not_answered"] == 0 and result["unreadable"]["rows"] == 0
    assert result["evaluated"] == len(looked_up) - unrecorded

    # As answered, people bearing a mostly-male or mostly-female name are sometimes of the other gender...
    assert result["ratios"]["errorCodedWithoutNA"] > 0.05
    assert result["confusion"]["mf"] > 0 and result["confusion"]["fm"] > 0
    # ... and unisex names are left unknown by the service (the paper's naCoded).
    unisex = sum(row["class"] == "andy" and row["label"] is not None for row in looked_up)
    assert result["confusion"]["mu"] + result["confusion"]["fu"] >= unisex > 0

    best = result["best"]
    assert best is not None and best["ratios"]["errorCodedWithoutNA"] <= 0.05
    wrong = [row["probability"] for row in looked_up if row["label"] is not None
             and row["gender"] in ("male", "female") and row["gender"][0] != row["label"]]
    assert best["min_probability"] > min(wrong)  # the cheapest wrong answers abstain
    sure_rows = sum(row["class"] in SURE and row["label"] is not None for row in looked_up)
    assert best["confusion"]["mm"] + best["confusion"]["ff"] >= sure_rows  # the sure answers are all kept
    assert best["kept"] < result["kept"]

    assert sorted(result["by_group"]) == sorted({row["country"] for row in looked_up})
    assert sum(g["evaluated"] for g in result["by_group"].values()) == result["evaluated"]
    assert Counter({c: g["left_out"] for c, g in result["by_group"].items()}) == Counter(
        row["country"] for row in looked_up if row["label"] is None)


def test_the_chosen_threshold_written_as_the_operators_would_meets_the_bound(looked_up: list[dict[str, Any]]) -> None:
    """What ``min_probability=best`` would write (answers below it as unknown) scores as ``best`` said."""
    best = evaluate(looked_up)["best"]
    written = [{**row, "gender": "unknown" if row["gender"] != "unknown" and row["probability"] < best[
        "min_probability"] else row["gender"]} for row in looked_up]
    again = evaluate(written)
    assert again["confusion"] == best["confusion"]
    assert again["ratios"]["errorCodedWithoutNA"] <= 0.05
