"""An evaluation's result for people: a self-contained HTML page and a few log lines.

The page holds the tables (ratios, confusion matrix, by group, tuning) and the plot
(:mod:`.plot`) inline: no script, no stylesheet or font from a CDN, so it opens offline
and can be mailed or kept in an object store.

Example::

    >>> from airflow_provider_namelookup.evaluation import evaluate
    >>> result = evaluate([{"label": "m", "gender": "male", "probability": 0.9},
    ...                    {"label": "f", "gender": "male", "probability": 0.6}])
    >>> print("\\n".join(summary_lines(result)))
    Evaluated 2 of 2 rows (left out, true gender unknown: 0; not answered: 0; unreadable: 0)
    Confusion (true→inferred): mm=1 mf=0 mu=0 fm=1 ff=0 fu=0
    As answered: errorCoded=50.0% errorCodedWithoutNA=50.0% naCoded=0.0% errorGenderBias=-50.0% kept=100.0%
    Best: min_probability=0.61 keeps 50.0%: errorCoded=50.0% errorCodedWithoutNA=0.0% naCoded=50.0% errorGenderBias=0.0%
    >>> "<svg" in render_html(result, title="Gender accuracy")
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from airflow_provider_namelookup.evaluation.plot import ratios_svg
from airflow_provider_namelookup.evaluation.ratios import RATIO_NAMES

MEANINGS = (
    ("errorCoded", "rows not given their true gender; unknowns count as errors"),
    ("errorCodedWithoutNA", "wrong genders among the rows given one"),
    ("naCoded", "rows the service left unknown"),
    ("errorGenderBias", "men taken for women minus women taken for men, among the rows given a gender"),
)


def percent(value: float | None) -> str:
    """``0.0512`` → ``5.1%``; None (a ratio over no rows) → ``—``."""
    return "—" if value is None else f"{value:.1%}"


def _ratios_line(ratios: Mapping[str, float | None], kept: float | None = None) -> str:
    text = " ".join(f"{name}={percent(ratios[name])}" for name in RATIO_NAMES)
    return text if kept is None else f"{text} kept={percent(kept)}"


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """Four lines for a task log: counts, confusion, ratios as answered, the chosen threshold."""
    unreadable = result["unreadable"]["rows"]
    lines = [
        f"Evaluated {result['evaluated']} of {result['rows']} rows (left out, true gender unknown: "
        f"{result['left_out']}; not answered: {result['not_answered']}; unreadable: {unreadable})",
        "Confusion (true→inferred): " + " ".join(f"{cell}={count}" for cell, count in result["confusion"].items()),
        "As answered: " + _ratios_line(result["ratios"], result["kept"]),
    ]
    best = result.get("best")
    if best is None:
        bound = percent(result["settings"]["max_error_without_na"])
        lines.append(f"Best: no threshold keeps errorCodedWithoutNA at or under {bound}")
    else:
        samples = f" min_samples={best['min_samples']}" if best["min_samples"] else ""
        lines.append(f"Best: min_probability={best['min_probability']}{samples} keeps {percent(best['kept'])}: "
                     + _ratios_line(best["ratios"]))
    if unreadable:
        first = result["unreadable"]["examples"][0]
        lines.append(f"First unreadable row: row {first['row']}: {first['field']} {first['value']!r} {first['rule']}")
    return lines


@cache
def _template() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    environment = Environment(loader=PackageLoader("airflow_provider_namelookup.evaluation", "templates"),
                              autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    environment.filters["pct"] = percent
    return environment.get_template("report.html")


def plot_or_why_not(result: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The report's plot (inline SVG), or None and why there is none: without matplotlib (the
    plot library, an optional dependency) the report is written all the same, saying so."""
    try:
        return ratios_svg(result), None
    except ImportError as err:
        return None, str(err)


def render_html(result: Mapping[str, Any], *, title: str = "Gender lookup accuracy", source: str | None = None,
                generated_at: datetime | None = None,
                plotted: tuple[str | None, str | None] | None = None) -> str:
    """The whole report as one HTML document (UTF-8 text); without matplotlib, without its plot
    and with a note that says so.

    :param plotted: :func:`plot_or_why_not` of ``result`` when the caller made it already."""
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    plot, missing = plotted or plot_or_why_not(result)
    return str(_template().render(r=result, title=title, source=source, generated_at=when,
                                  meanings=MEANINGS, plot=plot, plot_missing=missing))
