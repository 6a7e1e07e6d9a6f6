"""The confusion matrix of a gender inference and the four ratios of Santamaría and Mihaljević.

In a cell's name the first letter is the true gender, the second the inferred one (``u``:
unknown, the service abstained). Rows whose true gender is unknown are not in the matrix.

* ``errorCoded = (fm + mf + mu + fu) / (mm + fm + mf + ff + mu + fu)``: the share of rows
  not given their true gender, abstentions counted as errors;
* ``errorCodedWithoutNA = (fm + mf) / (mm + fm + mf + ff)``: the share of wrong answers
  among the rows that got one;
* ``naCoded = (mu + fu) / (mm + fm + mf + ff + mu + fu)``: the share of abstentions;
* ``errorGenderBias = (mf - fm) / (mm + fm + mf + ff)``: positive when more men are taken
  for women than women for men.

A ratio whose denominator is 0 is None (JSON has no NaN).

Example::

    >>> c = Confusion(mm=8, mf=1, mu=1, fm=0, ff=9, fu=1)
    >>> r = c.ratios()
    >>> r["errorCoded"], r["errorCodedWithoutNA"], r["naCoded"], r["errorGenderBias"]
    (0.15, 0.05555555555555555, 0.1, 0.05555555555555555)
    >>> c.kept
    0.9
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

RATIO_NAMES = ("errorCoded", "errorCodedWithoutNA", "naCoded", "errorGenderBias")
CELLS = ("mm", "mf", "mu", "fm", "ff", "fu")


@dataclass
class Confusion:
    """Counts of (true, inferred) pairs over the rows whose true gender is known."""

    mm: int = 0
    mf: int = 0
    mu: int = 0
    fm: int = 0
    ff: int = 0
    fu: int = 0

    def add(self, true: str, inferred: str, count: int = 1) -> None:
        """Count ``count`` rows of true gender ``true`` (``m``/``f``) inferred as ``inferred`` (``m``/``f``/``u``)."""
        cell = true + inferred
        setattr(self, cell, getattr(self, cell) + count)

    @property
    def total(self) -> int:
        return self.mm + self.mf + self.mu + self.fm + self.ff + self.fu

    @property
    def answered(self) -> int:
        """Rows given a gender (``m`` or ``f``)."""
        return self.mm + self.mf + self.fm + self.ff

    @property
    def kept(self) -> float | None:
        """The share of rows given a gender (1 - naCoded), None without rows."""
        return _share(self.answered, self.total)

    def ratios(self) -> dict[str, float | None]:
        """The four ratios, by the paper's names."""
        return {
            "errorCoded": _share(self.fm + self.mf + self.mu + self.fu, self.total),
            "errorCodedWithoutNA": _share(self.fm + self.mf, self.answered),
            "naCoded": _share(self.mu + self.fu, self.total),
            "errorGenderBias": _share(self.mf - self.fm, self.answered),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
