"""Labelled people drawn from gender-guesser's name dictionary (the emulator's name data).

A person is a first name borne in a country and a true gender drawn with the name's male
share in that country as gender-guesser classes it: ``male`` names are borne by men only,
``mostly_male`` by 4 men in 5, ``andy`` (unisex) by half of each, and so on. Half the people
bear an ambiguous name (``mostly_*`` or ``andy``), far more than in a real population, so that
a threshold has errors to remove. Every tenth person's gender is not recorded (label None),
as in real CRM data.

Example::

    >>> people = labelled_people(40, seed=1)
    >>> sorted(people[0]), sum(p["label"] is None for p in people)
    (['country', 'first_name', 'label'], 4)
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

COUNTRIES = {"IT": "italy", "DE": "germany", "US": "usa", "FR": "france"}
MALE_SHARE = {"male": 1.0, "mostly_male": 0.8, "andy": 0.5, "mostly_female": 0.2, "female": 0.0}
SURE = ("male", "female")


@cache
def _detector() -> Any:
    from gender_guesser.detector import Detector

    return Detector(case_sensitive=False)


@cache
def names_in(country: str) -> tuple[tuple[str, str], ...]:
    """``(Name, gender-guesser's class in that country)`` of the plain names borne there."""
    detector = _detector()
    column = detector.COUNTRIES.index(COUNTRIES[country])
    found = []
    for name in sorted(detector.names):
        if name.isalpha() and name.isascii() and any(
                len(values) > column and values[column] != " " for values in detector.names[name].values()):
            kind = detector.get_gender(name, COUNTRIES[country])
            if kind in MALE_SHARE:
                found.append((name.capitalize(), kind))
    return tuple(found)


def labelled_people(count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` people ``{"first_name", "country", "label"}`` with label ``m``, ``f`` or None."""
    rng = random.Random(seed)
    people = []
    for number in range(count):
        country = rng.choice(list(COUNTRIES))
        sure = rng.random() < 0.5
        name, kind = rng.choice([pair for pair in names_in(country) if (pair[1] in SURE) == sure])
        label = None if number % 10 == 9 else ("m" if rng.random() < MALE_SHARE[kind] else "f")
        people.append({"first_name": name, "country": country, "label": label, "class": kind})
    return [{k: v for k, v in person.items() if k != "class"} for person in people]


def classes(people: list[dict[str, Any]]) -> list[str]:
    """gender-guesser's class of each person's name in their country."""
    return [_detector().get_gender(p["first_name"].lower(), COUNTRIES[p["country"]]) for p in people]
