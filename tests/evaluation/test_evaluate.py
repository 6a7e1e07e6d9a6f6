"""evaluate() on small labelled sets whose confusion matrices and ratios are computed by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from airflow_provider_namelookup.evaluation import UnreadableRow, abstains, evaluate


def row(label: Any, gender: Any, probability: Any = None, samples: Any = None, **more: Any) -> dict[str, Any]:
    return {"label": label, "gender": gender, "probability": probability, "samples": samples, **more}


MIXED = [
    *[row("m", "male", 0.99, 500, country="DE")] * 3,
    row("M", "female", 0.62, 20, country="IT"),
    row(" male ", "unknown", None, 0, country="IT"),
    *[row("f", "female", 0.95, 300, country="DE")] * 2,
    *[row("Female", "female", 0.95, 300, country="IT")] * 2,
    row("F", "male", 0.58, 8, country="IT"),
    row("woman", "unknown", 0.5, 3, country="DE"),
    row("u", "male", 0.99, 100, country="DE"),
    row(None, "female", 0.9, 100, country=None),
    row("f", None, None, None, country="DE"),
    row("robot", "male", 0.99, 100, country="DE"),
    row("f", "female", 1.5, 100, country="DE"),
]
"""Hand count (first letter the true gender, second the inferred one):

    mm = 3 (DE), mf = 1 (IT, p 0.62, 20 samples), mu = 1 (IT),
    ff = 4 (2 DE, 2 IT, p 0.95), fm = 1 (IT, p 0.58, 8 samples), fu = 1 (DE)
    total = 11, answered (mm+mf+fm+ff) = 9
    left out (true gender unknown): "u" and None = 2; not answered (gender None): 1
    unreadable: row 15 (label "robot") and row 16 (probability 1.5) = 2; rows read: 16

    errorCoded          = (fm+mf+mu+fu)/total = 4/11
    errorCodedWithoutNA = (fm+mf)/answered    = 2/9
    naCoded             = (mu+fu)/total       = 2/11
    errorGenderBias     = (mf-fm)/answered    = 0
"""


def ratios(errorCoded: Fraction, errorCodedWithoutNA: Fraction, naCoded: Fraction,
           errorGenderBias: Fraction) -> dict[str, Any]:
    return {"errorCoded": pytest.approx(float(errorCoded)), "errorCodedWithoutNA": pytest.approx(
        float(errorCodedWithoutNA)), "naCoded": pytest.approx(float(naCoded)),
        "errorGenderBias": pytest.approx(float(errorGenderBias))}


F = Fraction


def test_confusion_ratios_and_counts_of_a_hand_counted_set() -> None:
    result = evaluate(MIXED)
    assert result["confusion"] == {"mm": 3, "mf": 1, "mu": 1, "fm": 1, "ff": 4, "fu": 1}
    assert result["ratios"] == ratios(F(4, 11), F(2, 9), F(2, 11), F(0))
    assert (result["rows"], result["evaluated"], result["left_out"], result["not_answered"]) == (16, 11, 2, 1)
    assert result["kept"] == pytest.approx(9 / 11)
    assert result["unreadable"] == {"rows": 2, "examples": [
        {"row": 15, "field": "label", "value": "robot",
         "rule": "is not a gender: use m/f/u, male/female/unknown or add it to label_map"},
        {"row": 16, "field": "probability", "value": 1.5, "rule": "must be a number from 0 to 1"},
    ]}
    json.dumps(result, allow_nan=False)  # an XCom value as it is


def test_the_threshold_that_meets_the_bound_at_the_lowest_error_coded() -> None:
    """Raising min_probability (answers strictly below it become unknown):

    * 0.50-0.58: as answered, errorCodedWithoutNA = 2/9 = 22 %;
    * 0.59-0.62: fm (p 0.58) abstains: mm 3, mf 1, mu 1, ff 4, fu 2:
      errorCoded = 4/11, errorCodedWithoutNA = 1/8 = 12.5 %;
    * 0.63-0.95: mf (p 0.62) abstains too: mm 3, mu 2, ff 4, fu 2: errorCoded = 4/11, without NA 0;
    * 0.96-1.00: ff (p 0.95) abstains as well: errorCoded = 8/11, mm (p 0.99) too from 1.00: 11/11.

    errorCoded is 4/11 from 0.50 to 0.95, so the lowest threshold that meets the bound wins (it keeps most).
    """
    five = evaluate(MIXED, max_error_without_na=0.05)
    assert (five["best"]["min_probability"], five["best"]["min_samples"]) == (0.63, None)
    assert five["best"]["confusion"] == {"mm": 3, "mf": 0, "mu": 2, "fm": 0, "ff": 4, "fu": 2}
    assert five["best"]["ratios"] == ratios(F(4, 11), F(0), F(4, 11), F(0))
    assert five["best"]["kept"] == pytest.approx(7 / 11)
    assert evaluate(MIXED, max_error_without_na=0.15)["best"]["min_probability"] == 0.59
    assert evaluate(MIXED, max_error_without_na=0.25)["best"]["min_probability"] == 0.5

    by_threshold = {entry["min_probability"]: entry for entry in five["tuning"]}
    assert len(five["tuning"]) == 51 and (min(by_threshold), max(by_threshold)) == (0.5, 1.0)
    assert by_threshold[0.59]["errorCodedWithoutNA"] == pytest.approx(1 / 8)
    assert by_threshold[0.96]["errorCoded"] == pytest.approx(8 / 11)
    assert by_threshold[1.0]["errorCoded"] == pytest.approx(1.0) and by_threshold[1.0]["kept"] == 0.0
    assert by_threshold[1.0]["errorCodedWithoutNA"] is None  # nothing answered: no ratio, and never "best"


def test_min_samples_abstains_too_and_is_tuned_with_the_probability() -> None:
    """With min_samples 10 the fm answer (8 samples) abstains at any probability threshold, as
    min_probability 0.59 did; with 25 the mf answer (20 samples) too: errorCodedWithoutNA = 0 at 0.50,
    errorCoded 4/11, the lowest, and the lowest min_probability with it."""
    result = evaluate(MIXED, max_error_without_na=0.05, samples_thresholds=[0, 10, 25])
    assert len(result["tuning"]) == 3 * 51
    assert (result["best"]["min_probability"], result["best"]["min_samples"]) == (0.5, 25)
    assert result["best"]["confusion"] == {"mm": 3, "mf": 0, "mu": 2, "fm": 0, "ff": 4, "fu": 2}
    at = {(e["min_probability"], e["min_samples"]): e for e in result["tuning"]}
    assert at[(0.5, 10)]["errorCodedWithoutNA"] == pytest.approx(1 / 8)
    assert at[(0.5, 0)]["errorCodedWithoutNA"] == pytest.approx(2 / 9)

    fixed = evaluate(MIXED, min_probability=0.59, min_samples=25)  # the operators' knobs, as they would write
    assert fixed["confusion"] == {"mm": 3, "mf": 0, "mu": 2, "fm": 0, "ff": 4, "fu": 2}
    assert fixed["settings"]["min_probability"] == 0.59 and fixed["settings"]["min_samples"] == 25


def test_no_threshold_meets_the_bound() -> None:
    """Two women both taken for men with probability 1.0: errorCodedWithoutNA is 1 at every threshold
    that keeps them, and undefined (nothing answered) beyond: no best."""
    result = evaluate([row("f", "male", 1.0, 50), row("f", "male", 1.0, 50), row("m", "male", 1.0, 50)])
    assert result["ratios"] == ratios(F(2, 3), F(2, 3), F(0), F(-2, 3))
    assert result["best"] is None


def test_gender_bias_sign() -> None:
    """mf = 2, fm = 0, answered = 4 + 2 + 4 = 10 → errorGenderBias = +2/10: men taken for women."""
    rows = [row("m", "male", 0.9)] * 4 + [row("m", "female", 0.8)] * 2 + [row("f", "female", 0.9)] * 4
    assert evaluate(rows)["ratios"]["errorGenderBias"] == pytest.approx(0.2)


def test_by_group() -> None:
    """DE: mm 3, ff 2, fu 1 → errorCoded 1/6, without NA 0, naCoded 1/6; left out 1 ("u"), not answered 1.
    IT: mf 1, mu 1, ff 2, fm 1 → errorCoded 3/5, without NA 2/4, naCoded 1/5, bias 0.
    (none): the unlabelled row only. The unreadable rows belong to no group."""
    result = evaluate(MIXED, group_key="country", max_error_without_na=0.05)
    groups = result["by_group"]
    assert sorted(groups) == ["(none)", "DE", "IT"]
    assert groups["DE"]["confusion"] == {"mm": 3, "mf": 0, "mu": 0, "fm": 0, "ff": 2, "fu": 1}
    assert groups["DE"]["ratios"] == ratios(F(1, 6), F(0), F(1, 6), F(0))
    assert (groups["DE"]["left_out"], groups["DE"]["not_answered"]) == (1, 1)
    assert groups["IT"]["ratios"] == ratios(F(3, 5), F(1, 2), F(1, 5), F(0))
    assert groups["IT"]["at_best"]["ratios"]["errorCodedWithoutNA"] == 0  # at 0.63 both IT errors abstain
    assert groups["(none)"] == {**groups["(none)"], "evaluated": 0, "left_out": 1}
    assert groups["(none)"]["ratios"]["errorCoded"] is None


def test_labels_in_other_spellings_through_a_mapping() -> None:
    rows = [row(1, "male", 0.9), row("2", "female", 0.9), row(9, "female", 0.9), row(" X ", "male", 0.9)]
    result = evaluate(rows, label_map={1: "male", 2: "f", 9: "unknown", "x": "u"})
    assert result["confusion"] == {"mm": 1, "mf": 0, "mu": 0, "fm": 0, "ff": 1, "fu": 0}
    assert result["left_out"] == 2
    with pytest.raises(ValueError, match=r"label_map maps 3 to 'other', which is not m/f/u"):
        evaluate(rows, label_map={3: "other"})


def test_raise_on_an_unreadable_row_names_the_row_the_field_and_the_rule() -> None:
    with pytest.raises(UnreadableRow, match=r"^row 15: label 'robot' is not a gender: use m/f/u"):
        evaluate(MIXED, on_unreadable="raise")
    with pytest.raises(UnreadableRow, match=r"^row 1: samples -3 must be a whole number of at least 0"):
        evaluate([row("m", "male", 0.9, -3)], on_unreadable="raise")
    with pytest.raises(UnreadableRow, match=r"^row 2: row 'tuple' is not a mapping"):
        evaluate([row("m", "male", 0.9), ("m", "male")], on_unreadable="raise")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_error_without_na": 1.5}, "max_error_without_na must be a number from 0 to 1, got 1.5"),
    ({"min_probability": -0.1}, "min_probability must be a number from 0 to 1, got -0.1"),
    ({"min_samples": 2.5}, "min_samples must be a whole number of at least 0 (or None), got 2.5"),
    ({"thresholds": []}, "thresholds must hold at least one min_probability"),
    ({"thresholds": [0.5, 2]}, "thresholds must be a number from 0 to 1, got 2"),
    ({"on_unreadable": "skip"}, "on_unreadable must be 'count' or 'raise', got 'skip'"),
])
def test_bad_settings_are_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        evaluate(MIXED, **kwargs)
    assert str(caught.value) == message


def test_abstaining_rule_matches_the_operators_parameters() -> None:
    """Strictly below min_probability (or min_samples) → unknown; at it → kept; 0 or None → off."""
    assert abstains("m", 0.8, 5, 0.8, 5) is False
    assert abstains("m", 0.7999, 5, 0.8, None) is True
    assert abstains("f", 0.99, 4, None, 5) is True
    assert abstains("f", None, None, 0.0, 0) is False
    assert abstains("f", None, 10, 0.5, None) is True  # no probability: not above any threshold
    assert abstains("u", 0.1, 0, 0.9, 100) is False


def test_rows_from_a_database_driver() -> None:
    """Decimal probabilities and numeric strings (as drivers and CSV files give them) are read."""
    from decimal import Decimal

    result = evaluate([row("m", "male", Decimal("0.75"), Decimal("12")), row("f", "female", "0.9", "7")],
                      max_error_without_na=0.0)
    assert result["confusion"]["mm"] == 1 and result["confusion"]["ff"] == 1
    assert result["best"]["min_probability"] == 0.5
