"""What a benchmark measured, and the Markdown report it ends up in.

A benchmark returns one :class:`Section`: tables of figures, the targets it checked
and short notes; :func:`render` puts the sections of a run into one Markdown document.

Example::

    section = Section("hook", "Hook throughput")
    runs = section.table(["client", "names/s", "vs sync"])
    runs.add("sync", rate(4100), ratio(1.0))
    section.check("async faster than sync", "> 1x", ratio(2.1), met=True)
    print(render([section], preamble=["Measured on ..."]))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Check:
    """One target and whether the run met it (None: not applicable at these sizes)."""

    target: str
    expected: str
    measured: str
    met: bool | None


@dataclass
class Table:
    """One Markdown table of a section, with an optional caption above it."""

    columns: list[str]
    caption: str = ""
    rows: list[list[str]] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))


@dataclass
class Section:
    """The figures of one benchmark: its tables, the targets it checked, notes.

    :param key: the benchmark's name on the command line (``table``, ``hook``, ``emulator``).
    :param data: the raw numbers, for ``results.json``.
    :param seconds: how long the benchmark took, set by the runner.
    """

    key: str
    title: str
    tables: list[Table] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def table(self, columns: list[str], caption: str = "") -> Table:
        """A new table at the end of the section."""
        self.tables.append(Table(columns, caption))
        return self.tables[-1]

    def check(self, target: str, expected: str, measured: str, *, met: bool | None) -> None:
        self.checks.append(Check(target, expected, measured, met))


def count(value: float) -> str:
    """``19,094``"""
    return f"{round(value):,}"


def seconds(value: float) -> str:
    """``9.42 s``, ``1.5 min`` for long runs"""
    if value >= 600:
        return f"{value / 60:,.1f} min"
    return f"{value:,.2f} s" if value < 100 else f"{value:,.0f} s"


def rate(value: float) -> str:
    """``12,345``: a per-second rate, whole numbers."""
    return f"{value:,.0f}"


def ratio(value: float) -> str:
    """``1.16x``, ``17.5x``, ``250x``: two decimals where a target such as 1.2x is judged."""
    if value < 10:
        return f"{value:.2f}x"
    return f"{value:,.1f}x" if value < 100 else f"{value:,.0f}x"


def megabytes(value: float) -> str:
    return f"{value:,.0f} MB"


def millis(value: float) -> str:
    return f"{value * 1000:,.1f} ms"


def cores(value: float) -> str:
    """``0.9 cores``"""
    return f"{value:.1f} cores"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def markdown_table(columns: list[str], rows: list[list[str]]) -> str:
    """A GitHub Markdown table; columns of numbers (but the first) are right-aligned."""
    def numeric(cell: str) -> bool:
        return bool(cell) and (cell[0].isdigit() or cell[0] in "+-~") and cell != "-"

    aligned = [i > 0 and all(numeric(row[i]) or row[i] in ("", "-") for row in rows)
               and any(numeric(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if right else "---" for right in aligned) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _mark(met: bool | None) -> str:
    return {True: "met", False: "**NOT met**", None: "n/a"}[met]


def render_section(section: Section) -> str:
    parts = [f"## {section.title}"]
    for table in section.tables:
        parts += ["", *([table.caption, ""] if table.caption else []), markdown_table(table.columns, table.rows)]
    if section.checks:
        parts += ["", "Targets:", "", markdown_table(["target", "expected", "measured", "result"],
                                     [[c.target, c.expected, c.measured, _mark(c.met)] for c in section.checks])]
    if section.notes:
        parts += ["", *[f"- {note}" for note in section.notes]]
    parts += ["", f"_This benchmark took {seconds(section.seconds)}._"]
    return "\n".join(parts)


def render(sections: list[Section], *, title: str = "Benchmark results", preamble: list[str] | None = None) -> str:
    """The whole report: a title, the preamble lines, then each section."""
    parts = [f"# {title}", ""]
    if preamble:
        parts += [*preamble, ""]
    parts += [render_section(s) + "\n" for s in sections]
    return "\n".join(parts).rstrip() + "\n"
