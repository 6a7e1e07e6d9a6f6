"""How accurate are the genders of a lookup: an evaluation against labelled rows, for notebooks and DAGs.

:func:`evaluate` is a plain function (no Airflow import); :mod:`.report` turns its result
into a self-contained HTML page and a few log lines. The operators over tables and XCom
lists are in :mod:`airflow_provider_namelookup.operators.evaluation`.

Example::

    >>> from airflow_provider_namelookup.evaluation import evaluate
    >>> result = evaluate([{"label": "f", "gender": "female", "probability": 0.98, "samples": 120}])
    >>> result["ratios"]["errorCoded"], result["best"]["min_probability"]
    (0.0, 0.5)
"""

from airflow_provider_namelookup.evaluation.evaluate import DEFAULT_THRESHOLDS, UnreadableRow, abstains, evaluate
from airflow_provider_namelookup.evaluation.labels import COMMON_SPELLINGS, GenderReader, UnreadableValue
from airflow_provider_namelookup.evaluation.ratios import RATIO_NAMES, Confusion

__all__ = [
    "COMMON_SPELLINGS",
    "DEFAULT_THRESHOLDS",
    "RATIO_NAMES",
    "Confusion",
    "GenderReader",
    "UnreadableRow",
    "UnreadableValue",
    "abstains",
    "evaluate",
]
