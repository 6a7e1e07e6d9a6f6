"""How right are the genders of a lookup, against rows whose true gender is known.

:func:`evaluate` reads rows holding a true ``label`` beside the service's ``gender``,
``probability`` and (optional) ``samples``, and returns a JSON-serialisable dict: the
confusion matrix, the four ratios of Santamaría and Mihaljević (see
:mod:`~airflow_provider_namelookup.evaluation.ratios`), the same by group, and a tuning
table of thresholds with the one that keeps ``errorCodedWithoutNA`` under a bound at the
lowest ``errorCoded``. No Airflow needed: it is for notebooks too.

The thresholds are the gender operators' ``min_probability`` and ``min_samples``: an
answer whose probability is strictly below ``min_probability``, or whose ``samples`` is
strictly below ``min_samples``, counts as ``unknown`` (the service abstains), as the
paper's tuning does. An answer without ``samples`` never abstains for ``min_samples`` (its
count is not known); one without a probability abstains at any ``min_probability`` above 0.

Which rows count where:

* a row whose true gender is unknown (``u``, ``unknown``, empty, None) is left out of the
  ratios, as in the paper, and counted in ``left_out``;
* a row with no answer (``gender`` None or missing: not enriched yet, or its lookup
  failed) is counted in ``not_answered``, not as an abstention: the service was not asked;
* a row with a value that cannot be read (a label that is no gender, a probability
  outside 0 to 1) is counted in ``unreadable`` with the first examples (row number, field,
  rule); with ``on_unreadable="raise"`` it raises instead. One bad row never sinks the rest.

Example::

    >>> rows = [
    ...     {"label": "m", "gender": "male", "probability": 0.99, "samples": 900},
    ...     {"label": "f", "gender": "female", "probability": 0.97, "samples": 400},
    ...     {"label": "female", "gender": "male", "probability": 0.55, "samples": 12},
    ...     {"label": "u", "gender": "female", "probability": 0.60, "samples": 30},
    ... ]
    >>> result = evaluate(rows, max_error_without_na=0.05)
    >>> result["confusion"], result["left_out"]
    ({'mm': 1, 'mf': 0, 'mu': 0, 'fm': 1, 'ff': 1, 'fu': 0}, 1)
    >>> round(result["ratios"]["errorCoded"], 3)
    0.333
    >>> result["best"]["min_probability"], result["best"]["ratios"]["errorCoded"]
    (0.56, 0.3333333333333333)
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from itertools import accumulate
from typing import Any, Literal

from airflow_provider_namelookup.engine.abstain import Abstain
from airflow_provider_namelookup.evaluation.labels import GenderReader, Letter, UnreadableValue
from airflow_provider_namelookup.evaluation.ratios import Confusion

DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + step / 100, 2) for step in range(51))
"""0.50, 0.51, ..., 1.00: a gender answer's probability is at least 0.5."""
MAX_EXAMPLES = 10
"""Unreadable rows described in the result (all are counted)."""
MISSING_GROUP = "(none)"
"""The group of rows whose grouping value is None."""

OnUnreadable = Literal["count", "raise"]


class UnreadableRow(ValueError):
    """Raised by :func:`evaluate` with ``on_unreadable="raise"``: names the row, the field and the rule."""


def evaluate(rows: Iterable[Any], max_error_without_na: float = 0.05, *,
             min_probability: float | None = None, min_samples: int | None = None,
             thresholds: Sequence[float] | None = None, samples_thresholds: Sequence[int] | None = None,
             group_key: str | None = None, label_map: Mapping[Any, str] | None = None,
             label_key: str = "label", gender_key: str = "gender", probability_key: str = "probability",
             samples_key: str = "samples", on_unreadable: OnUnreadable = "count") -> dict[str, Any]:
    """Evaluate the genders of ``rows`` against their labels.

    :param rows: mappings with the true gender (``label_key``), the answer (``gender_key``:
        ``male``/``female``/``unknown`` or any spelling of :mod:`.labels`), ``probability``
        (0 to 1) and optional ``samples``.
    :param max_error_without_na: the bound on ``errorCodedWithoutNA`` that ``best`` must meet.
    :param min_probability: evaluate the answers as the gender operators' ``min_probability``
        would write them (``confusion``, ``ratios``, ``by_group``); default: as answered.
    :param min_samples: the same for ``min_samples``.
    :param thresholds: the ``min_probability`` values of the tuning table; default 0.50 to 1.00
        by 0.01.
    :param samples_thresholds: the ``min_samples`` values of the tuning table (each combined
        with each probability threshold); default: ``min_samples`` alone.
    :param group_key: report the confusion and ratios by this key's value too (``by_group``).
    :param label_map: labels beyond the common spellings, e.g. ``{"1": "m", "2": "f"}``.
    :param on_unreadable: ``count`` (default) counts unreadable rows apart; ``raise`` raises
        :class:`UnreadableRow` at the first one.
    :returns: ``{"rows", "evaluated", "left_out", "not_answered", "unreadable", "settings",
        "confusion", "ratios", "kept", "tuning", "best", "by_group"}``; ``best`` is None when no
        threshold meets the bound, and ``by_group`` is absent without ``group_key``.
    """
    _check_share(max_error_without_na, "max_error_without_na")
    if min_probability is not None:
        _check_share(min_probability, "min_probability")
    _check_count(min_samples, "min_samples")
    for threshold in thresholds or ():
        _check_share(threshold, "thresholds")
    grid = sorted({float(threshold) for threshold in (DEFAULT_THRESHOLDS if thresholds is None else thresholds)})
    if not grid:
        raise ValueError("thresholds must hold at least one min_probability")
    samples_grid = sorted(set([min_samples] if samples_thresholds is None else samples_thresholds),
                          key=lambda s: -1 if s is None else s)
    for count in samples_grid:
        _check_count(count, "samples_thresholds")
    if on_unreadable not in ("count", "raise"):
        raise ValueError(f"on_unreadable must be 'count' or 'raise', got {on_unreadable!r}")

    reader = GenderReader(label_map)
    tally = _Tally(reader, (label_key, gender_key, probability_key, samples_key, group_key), on_unreadable,
                   keep_samples=bool(min_samples) or any(samples_grid))
    for number, row in enumerate(rows, start=1):
        tally.add(number, row)

    overall = tally.confusion(min_probability, min_samples)
    tuning = [_tuning_entry(matrix, p, s) for s in samples_grid for p, matrix in zip(grid, tally.sweep(grid, s),
                                                                                     strict=True)]
    meeting = [entry for entry in tuning if entry["errorCodedWithoutNA"] is not None
               and entry["errorCodedWithoutNA"] <= max_error_without_na]
    best_entry = min(meeting, key=lambda e: (e["errorCoded"], e["min_probability"], e["min_samples"] or 0),
                     default=None)
    result: dict[str, Any] = {
        "rows": tally.rows,
        "evaluated": overall.total,
        "left_out": tally.left_out,
        "not_answered": tally.not_answered,
        "unreadable": {"rows": tally.unreadable, "examples": tally.examples},
        "settings": {"max_error_without_na": max_error_without_na, "min_probability": min_probability,
                     "min_samples": min_samples, "group_key": group_key},
        "confusion": overall.as_dict(),
        "ratios": overall.ratios(),
        "kept": overall.kept,
        "tuning": tuning,
        "best": None,
    }
    if best_entry is not None:
        chosen = tally.confusion(best_entry["min_probability"], best_entry["min_samples"])
        result["best"] = {"min_probability": best_entry["min_probability"],
                          "min_samples": best_entry["min_samples"], "kept": chosen.kept,
                          "confusion": chosen.as_dict(), "ratios": chosen.ratios()}
    if group_key is not None:
        result["by_group"] = tally.by_group(min_probability, min_samples, best_entry)
    return result


def _tuning_entry(confusion: Confusion, min_probability: float, min_samples: int | None) -> dict[str, Any]:
    return {"min_probability": min_probability, "min_samples": min_samples, "kept": confusion.kept,
            **confusion.ratios()}


def abstains(inferred: Letter, probability: float | None, samples: int | None, min_probability: float | None,
             min_samples: int | None) -> bool:
    """Whether a ``m``/``f`` answer counts as unknown under the thresholds (the gender operators' rule).

    >>> abstains("m", 0.79, 50, 0.8, None), abstains("m", 0.8, 50, 0.8, None), abstains("f", 0.9, 3, 0.5, 10)
    (True, False, True)
    >>> abstains("f", 0.9, None, 0.5, 10)  # samples unknown: never below min_samples
    False
    """
    return inferred != "u" and Abstain(min_probability, min_samples).applies(probability, samples)


Key = tuple[Any, Letter, Letter, float | None, int | None]
"""(group, true gender, inferred gender, probability, samples) of counted rows."""


class _Tally:
    """Rows read so far, counted by :data:`Key` (a million rows hold few distinct keys)."""

    def __init__(self, reader: GenderReader, keys: tuple[str, str, str, str, str | None],
                 on_unreadable: OnUnreadable, *, keep_samples: bool) -> None:
        self.reader = reader
        self.keep_samples = keep_samples
        """Whether a threshold reads ``samples``; if not, rows differing only in it count as one key."""
        self.label_key, self.gender_key, self.probability_key, self.samples_key, self.group_key = keys
        self.on_unreadable = on_unreadable
        self.counts: Counter[Key] = Counter()
        self.rows = 0
        self.left_out = 0
        self.not_answered = 0
        self.unreadable = 0
        self.examples: list[dict[str, Any]] = []
        self.left_out_by_group: Counter[Any] = Counter()
        self.not_answered_by_group: Counter[Any] = Counter()

    def add(self, number: int, row: Any) -> None:
        self.rows += 1
        try:
            if not isinstance(row, Mapping):
                raise UnreadableValue("row", type(row).__name__, "is not a mapping of column names to values")
            group = self._group(row)
            true = self.reader.read(row.get(self.label_key), self.label_key)
            answer = row.get(self.gender_key)
            inferred = None if answer is None else self.reader.read(answer, self.gender_key)
            probability = _probability(row.get(self.probability_key), self.probability_key)
            samples = _samples(row.get(self.samples_key), self.samples_key)
        except UnreadableValue as err:
            self._unreadable(number, err)
            return
        if true == "u":
            self.left_out += 1
            self.left_out_by_group[group] += 1
        elif inferred is None:
            self.not_answered += 1
            self.not_answered_by_group[group] += 1
        else:
            self.counts[(group, true, inferred, probability, samples if self.keep_samples else None)] += 1

    def _group(self, row: Mapping[str, Any]) -> Any:
        if self.group_key is None:
            return None
        value = row.get(self.group_key)
        return MISSING_GROUP if value is None else str(value)

    def _unreadable(self, number: int, err: UnreadableValue) -> None:
        if self.on_unreadable == "raise":
            raise UnreadableRow(f"row {number}: {err}") from err
        self.unreadable += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append({"row": number, "field": err.field, "value": _short(err.value), "rule": err.rule})

    def confusion(self, min_probability: float | None, min_samples: int | None, group: Any = ...) -> Confusion:
        matrix = Confusion()
        for (row_group, true, inferred, probability, samples), count in self.counts.items():
            if group is not ... and row_group != group:
                continue
            if abstains(inferred, probability, samples, min_probability, min_samples):
                inferred = "u"
            matrix.add(true, inferred, count)
        return matrix

    def sweep(self, thresholds: Sequence[float], min_samples: int | None) -> list[Confusion]:
        """``confusion(t, min_samples)`` for each ``t`` of the ascending ``thresholds``, in one pass over the
        keys and a bisection per threshold (the tuning table of a million distinct keys stays quick)."""
        fixed = Confusion()  # unknown answers, and those below min_samples: unknown at every threshold
        probabilities: dict[tuple[Letter, Letter], Counter[float]] = {}
        unrated: Counter[tuple[Letter, Letter]] = Counter()  # answers without a probability
        for (_, true, inferred, probability, samples), count in self.counts.items():
            if inferred == "u" or abstains(inferred, None, samples, 0.0, min_samples):
                fixed.add(true, "u", count)
            elif probability is None:
                unrated[(true, inferred)] += count
            else:
                probabilities.setdefault((true, inferred), Counter())[probability] += count
        cumulative = {cell: (sorted(counts), list(accumulate(counts[p] for p in sorted(counts))))
                      for cell, counts in probabilities.items()}
        matrices = []
        for threshold in thresholds:
            matrix = Confusion(**fixed.as_dict())
            for cell in {*cumulative, *unrated}:
                values, totals = cumulative.get(cell, ([], []))
                below = bisect_left(values, threshold) if threshold else 0
                abstaining = (totals[below - 1] if below else 0) + (unrated[cell] if threshold else 0)
                matrix.add(cell[0], "u", abstaining)
                matrix.add(*cell, (totals[-1] if totals else 0) + unrated[cell] - abstaining)
            matrices.append(matrix)
        return matrices

    def by_group(self, min_probability: float | None, min_samples: int | None,
                 best: Mapping[str, Any] | None) -> dict[str, Any]:
        groups = sorted({key[0] for key in self.counts} | set(self.left_out_by_group) | set(self.not_answered_by_group))
        report = {}
        for group in groups:
            matrix = self.confusion(min_probability, min_samples, group)
            entry: dict[str, Any] = {"evaluated": matrix.total, "left_out": self.left_out_by_group[group],
                                     "not_answered": self.not_answered_by_group[group],
                                     "confusion": matrix.as_dict(), "ratios": matrix.ratios(), "kept": matrix.kept}
            if best is not None:
                at_best = self.confusion(best["min_probability"], best["min_samples"], group)
                entry["at_best"] = {"kept": at_best.kept, "ratios": at_best.ratios()}
            report[group] = entry
        return report


def _probability(value: Any, field: str) -> float | None:
    if value is None:
        return None
    number = _number(value, field, "must be a number from 0 to 1")
    if not 0.0 <= number <= 1.0:
        raise UnreadableValue(field, value, "must be a number from 0 to 1")
    return number


def _samples(value: Any, field: str) -> int | None:
    if value is None:
        return None
    number = _number(value, field, "must be a whole number of at least 0")
    if number < 0 or not number.is_integer():
        raise UnreadableValue(field, value, "must be a whole number of at least 0")
    return int(number)


def _number(value: Any, field: str, rule: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        raise UnreadableValue(field, value, rule)
    try:
        number = float(value)
    except ValueError:
        raise UnreadableValue(field, value, rule) from None
    if not math.isfinite(number):
        raise UnreadableValue(field, value, rule)
    return number


def _short(value: Any) -> Any:
    """A value as the result shows it: JSON-safe, at most 80 characters."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_share(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, got {value!r}")


def _check_count(value: Any, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be a whole number of at least 0 (or None), got {value!r}")
