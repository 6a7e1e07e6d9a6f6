"""The service's published tables and numbers, read from ``service_facts.json``.

That file is the repository's one copy of the spec's country and ethnic-group tables and
of the numbers the service publishes (name lengths, credits per query, the free monthly
allowance, queries per request). The provider reads it here; the emulator
(``namelookup_emulator``, a distribution of its own) ships the same file and reads it
with its own code, so the two share data and nothing else.

Example::

    >>> PUBLISHED["numbers"]["credits_per_query"]["country_of_origin"]
    2
    >>> PUBLISHED["ethnic_groups"]["GERMANIC"]
    'Germanic (German, Austrian, Swiss)'
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

PUBLISHED: dict[str, Any] = json.loads(
    (files("airflow_provider_namelookup") / "service_facts.json").read_text(encoding="utf-8"))
"""The parsed file: ``numbers``, ``gender_paths`` (the gender endpoint and its aliases → the name field
each reads), ``countries`` (grouped by region, in the spec's order), ``ethnic_groups``."""
NUMBERS: dict[str, Any] = PUBLISHED["numbers"]
