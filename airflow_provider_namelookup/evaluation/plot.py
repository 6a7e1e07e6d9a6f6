"""The report's plot: the four ratios and the share kept against ``min_probability``, as inline SVG.

Drawn with matplotlib (the ``evaluation`` extra) on a figure of its own (no pyplot state),
text kept as SVG text, so the HTML page that holds it renders offline and stays small.

Example::

    >>> from airflow_provider_namelookup.evaluation import evaluate
    >>> result = evaluate([{"label": "m", "gender": "male", "probability": 0.9}])
    >>> ratios_svg(result).startswith("<svg")
    True
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from airflow_provider_namelookup.evaluation.ratios import RATIO_NAMES

SERIES = (*RATIO_NAMES, "kept")
COLOURS = {"errorCoded": "#c0392b", "errorCodedWithoutNA": "#e67e22", "naCoded": "#7f8c8d",
           "errorGenderBias": "#8e44ad", "kept": "#2471a3"}


def plotted_entries(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tuning entries the plot draws: those of the best ``min_samples`` (else the first one)."""
    tuning = result["tuning"]
    best = result.get("best")
    samples = best["min_samples"] if best else (tuning[0]["min_samples"] if tuning else None)
    return [entry for entry in tuning if entry["min_samples"] == samples]


def ratios_svg(result: Mapping[str, Any], *, width_inches: float = 8.0, height_inches: float = 4.2) -> str:
    """An ``<svg>`` element: each ratio and the share kept against the threshold, the bound and
    the chosen threshold marked."""
    try:
        from matplotlib import rc_context
        from matplotlib.figure import Figure
        from matplotlib.ticker import PercentFormatter
    except ImportError as err:  # pragma: no cover - the test extra installs it
        raise ImportError("the evaluation report draws its plot with matplotlib: pip install 'matplotlib>=3.7' "
                          "(what the evaluation extra of airflow-provider-namelookup installs)") from err

    entries = plotted_entries(result)
    xs = [entry["min_probability"] for entry in entries]
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "namelookup", "font.size": 10}):
        figure = Figure(figsize=(width_inches, height_inches))
        axes = figure.add_subplot()
        for name in SERIES:
            ys = [entry[name] for entry in entries]
            axes.plot(xs, [float("nan") if y is None else y for y in ys], label=name, color=COLOURS[name],
                      linewidth=2.2 if name in ("errorCoded", "kept") else 1.5,
                      linestyle="--" if name == "kept" else "-", marker="." if len(xs) < 30 else None)
        bound = result["settings"]["max_error_without_na"]
        axes.axhline(bound, color=COLOURS["errorCodedWithoutNA"], linestyle=":", linewidth=1,
                     label=f"bound on errorCodedWithoutNA ({bound:.0%})")
        if result.get("best"):
            axes.axvline(result["best"]["min_probability"], color="#17202a", linestyle="-.", linewidth=1,
                         label=f"chosen min_probability ({result['best']['min_probability']:g})")
        axes.set_xlabel("min_probability: answers below it count as unknown")
        axes.set_ylabel("share of labelled rows")
        axes.yaxis.set_major_formatter(PercentFormatter(1.0))
        axes.grid(True, alpha=0.3)
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
        figure.tight_layout()
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    return svg[svg.index("<svg"):]
