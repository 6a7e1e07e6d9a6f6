"""Reading genders as people spell them: true labels and the service's answers.

A gender is read as ``m``, ``f`` or ``u`` (unknown), the letters of Santamaría and
Mihaljević's paper. The common spellings are understood in any case and with surrounding
blanks; a ``mapping`` adds others (codes of a survey, another language). A value that
cannot be read raises :class:`UnreadableValue`, which names the field and the rule.

Example::

    >>> reader = GenderReader({"1": "male", "2": "female", "9": "unknown"})
    >>> reader.read(" Female ", "label"), reader.read(1, "label"), reader.read(None, "label")
    ('f', 'm', 'u')
    >>> reader.read("robot", "label")
    Traceback (most recent call last):
    ...
    UnreadableValue: label 'robot' is not a gender: use m/f/u, male/female/unknown or add it to label_map
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Letter = Literal["m", "f", "u"]

COMMON_SPELLINGS: Mapping[str, Letter] = {
    **dict.fromkeys(("m", "male", "man", "masculine"), "m"),
    **dict.fromkeys(("f", "female", "woman", "w", "feminine"), "f"),
    **dict.fromkeys(("u", "unknown", "", "?", "n/a", "na", "none", "null"), "u"),
}
"""Spellings read without a mapping, lower-cased; ``None`` is ``u`` too. Other genders (``x``,
``non-binary``) are not guessed: map them to ``unknown`` with ``label_map`` to leave them out."""


class UnreadableValue(ValueError):
    """A value of a row that the evaluation cannot read; the message names the field and the rule."""

    def __init__(self, field: str, value: Any, rule: str) -> None:
        super().__init__(f"{field} {value!r} {rule}")
        self.field = field
        self.value = value
        self.rule = rule


class GenderReader:
    """Reads a gender value as ``m``, ``f`` or ``u``.

    :param mapping: extra spellings (keys compared as stripped, lower-cased text) to any common
        spelling, e.g. ``{"1": "m", "2": "f", "0": "u"}``; they take precedence over the common ones.
    """

    def __init__(self, mapping: Mapping[Any, str] | None = None) -> None:
        self.spellings: dict[str, Letter] = dict(COMMON_SPELLINGS)
        for key, target in (mapping or {}).items():
            letter = COMMON_SPELLINGS.get(_key(target)) if isinstance(target, str) else None
            if letter is None:
                raise ValueError(f"label_map maps {key!r} to {target!r}, which is not m/f/u or "
                                 "male/female/unknown")
            self.spellings[_key(key)] = letter

    def read(self, value: Any, field: str) -> Letter:
        """``m``, ``f`` or ``u``; raises :class:`UnreadableValue` naming ``field``."""
        if value is None:
            return "u"
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise UnreadableValue(field, value, "is not a gender: give text (m/f/u, male/female/unknown) "
                                                "or a code in label_map")
        letter = self.spellings.get(_key(value))
        if letter is None:
            raise UnreadableValue(field, value, "is not a gender: use m/f/u, male/female/unknown or add it "
                                                "to label_map")
        return letter


def _key(value: Any) -> str:
    return str(value).strip().lower()
