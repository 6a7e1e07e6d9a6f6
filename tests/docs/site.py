"""The documentation site as the tests read it: built once per session by Sphinx, as ``make docs``
builds it (warnings are errors), into a temporary folder; its pages' code blocks read from the
doctrees Sphinx wrote, each Python snippet found by the ``:name:`` of its ``code-block``.

Sphinx is imported only here and only when a test asks for the site, so that the version
matrix's venvs (which hold no Sphinx) still collect the suite.
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "example_dags"
CONTRIB = ROOT / "tests" / "contrib"
README = ROOT / "README.md"


@dataclass(frozen=True)
class CodeBlock:
    """One literal block of a page: its language, its ``:name:`` (if any), its text, and the file it
    was included from (``exampleinclude``), if any."""

    page: str
    language: str
    name: str | None
    text: str
    included_from: Path | None


@dataclass
class Site:
    """A built site: ``html`` (the pages) and ``doctrees`` (what Sphinx parsed)."""

    html: Path
    doctrees: Path
    seconds: float

    @cached_property
    def pages(self) -> list[str]:
        """The document names of the pages, e.g. ``operators/warehouse``, ``api/hooks``."""
        return sorted(str(p.relative_to(self.doctrees).with_suffix("")) for p in self.doctrees.rglob("*.doctree"))

    def doctree(self, page: str) -> Any:
        import sphinx.addnodes  # noqa: F401  (the node classes the pickle names)

        with (self.doctrees / f"{page}.doctree").open("rb") as f:
            return pickle.load(f)  # Sphinx's own output of this session

    @cached_property
    def code_blocks(self) -> list[CodeBlock]:
        from docutils import nodes

        found = []
        for page in self.pages:
            for node in self.doctree(page).findall(nodes.literal_block):
                source = node.get("source")
                found.append(CodeBlock(page=page, language=str(node.get("language") or ""),
                                       name=(node.get("names") or [None])[0], text=node.astext(),
                                       included_from=Path(source).resolve() if source else None))
        return found

    def snippet(self, name: str) -> CodeBlock:
        """The code block named ``name`` (the ``:name:`` of its ``code-block``)."""
        (block,) = [b for b in self.code_blocks if b.name == name] or [None]
        assert block is not None, f"no code block named {name!r} on any page"
        return block


def build(out: Path) -> Site:
    """Build the site into ``out`` as ``make docs`` does, failing on any warning."""
    import time

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
                           "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, f"the site does not build without warnings:\n{done.stderr[-6000:]}"
    return Site(html=out / "html", doctrees=out / "doctrees", seconds=time.monotonic() - started)


def readme_snippet(name: str) -> str:
    """The README's Python block that follows its ``<!-- snippet: NAME ... -->`` marker."""
    text = README.read_text()
    match = re.search(rf"<!-- snippet: {re.escape(name)}\b[^>]*-->\n```python\n(.*?)```", text, flags=re.S)
    assert match, f"the README has no snippet marked {name!r}"
    return match.group(1)
