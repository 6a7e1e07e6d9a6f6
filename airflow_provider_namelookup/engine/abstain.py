"""Abstaining: a gender answer the service is not sure enough of is written as ``unknown``.

The answer itself is kept whole (in the answers table and in the row's ``probability`` and
``samples`` columns), so a later run with another threshold rewrites the rows from the
answers already paid for, at 0 credits. An answer abstains when its probability is strictly
below ``min_probability`` or its sample count strictly below ``min_samples``; an answer
without a probability abstains at any ``min_probability`` above 0, one without samples never
abstains on that count (its count is not known). The accuracy report counts with the same
rule (:func:`airflow_provider_namelookup.evaluation.evaluate.abstains`), and its chosen
threshold (``best["min_probability"]``) is meant to be passed straight in.

Example::

    >>> rule = Abstain.parse(min_probability="0.8", min_samples=None)
    >>> rule.written({"gender": "female", "probability": 0.62, "samples": 40})["gender"]
    'unknown'
    >>> rule.written({"gender": "male", "probability": 0.93, "samples": 40})["gender"]
    'male'
    >>> Abstain.parse(min_probability=1.5, min_samples=None)
    Traceback (most recent call last):
    ...
    InvalidArgument: min_probability must be a number from 0 to 1, got 1.5
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.errors import InvalidArgument

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Abstain:
    """The thresholds below which a gender answer is written as ``unknown``.

    :param min_probability: from 0 to 1, or None.
    :param min_samples: a whole number from 0, or None.
    """

    min_probability: float | None = None
    min_samples: int | None = None

    @classmethod
    def parse(cls, *, min_probability: Any, min_samples: Any) -> Abstain | None:
        """The rule of two operator arguments (numbers or rendered templates; None or "" for
        none), or None when neither is set.

        :raises ValueError: naming the argument and its rule.
        """
        probability = _number("min_probability", min_probability, _share, _SHARE)
        samples = _number("min_samples", min_samples, _count, _COUNT)
        return None if probability is None and samples is None else cls(probability, samples)

    @property
    def fingerprint(self) -> str:
        """Its part of the rows' settings fingerprint: a new threshold rewrites every row."""
        return f"abstain={self.min_probability if self.min_probability is not None else ''}," \
               f"{self.min_samples if self.min_samples is not None else ''}"

    def applies(self, probability: Any, samples: Any) -> bool:
        """Whether an answer with this probability and sample count abstains."""
        known = lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)  # noqa: E731
        if self.min_probability and (not known(probability) or probability < self.min_probability):
            return True
        return bool(self.min_samples) and known(samples) and samples < self.min_samples

    def written(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """``answer`` as a row gets it: its gender ``unknown`` when it abstains, all else kept
        (``samples`` flat, as a table's column, or in the service's ``details``)."""
        details = answer.get("details")
        samples = answer.get("samples", details.get("samples") if isinstance(details, Mapping) else None)
        if answer.get("gender") is not None and self.applies(answer.get("probability"), samples):
            return {**answer, "gender": UNKNOWN}
        return dict(answer)

    def sql(self, gender: str, probability: str, samples: str, literal: Callable[[Any], str]) -> str:
        """The same rule as a SQL expression over the three columns (a NULL gender, a row
        without an answer, stays NULL)."""
        below = []
        if self.min_probability:
            below.append(f"{probability} IS NULL OR {probability} < {literal(self.min_probability)}")
        if self.min_samples:
            below.append(f"{samples} < {literal(self.min_samples)}")
        if not below:
            return gender
        return f"CASE WHEN {gender} IS NOT NULL AND ({' OR '.join(below)}) THEN {literal(UNKNOWN)} ELSE {gender} END"


_SHARE = "a number from 0 to 1"
_COUNT = "a whole number from 0"


def _number(name: str, value: Any, read: Callable[[Any], Any], rule: str) -> Any:
    """``value`` read by ``read``; None for none (None or blank); an
    :class:`~airflow_provider_namelookup.errors.InvalidArgument` naming ``name`` and its ``rule``
    when it cannot be read."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        return read(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be {rule}, got {value!r}") from None


def _share(value: Any) -> float:
    number = float(value)
    if not 0 <= number <= 1:  # NaN too
        raise ValueError
    return number


def _count(value: Any) -> int:
    number = float(value)
    if not number.is_integer() or number < 0:
        raise ValueError
    return int(number)
