"""No import circle between the package's modules: each can be read, and imported, before the ones
that use it.

The graph is every import a module makes at its top level (those under ``if TYPE_CHECKING:`` and
``try:`` included: a circle mypy must untangle is a circle too), read from the source with
``ast``; imports inside a function run when it is called and are left out (the plugin's view and
its app import each other that way, on purpose: the app is built when the view is first served).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import airflow_provider_namelookup

PACKAGE = Path(airflow_provider_namelookup.__file__).parent


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package``."""
    files = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _top_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported (blocks entered, functions and classes' methods not)."""
    for statement in statements:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield statement
        if isinstance(statement, ast.ClassDef):
            yield from _top_level(statement.body)
        for block in ("body", "orelse", "finalbody"):
            if isinstance(statement, ast.If | ast.Try | ast.With) and block in statement._fields:
                yield from _top_level(getattr(statement, block))
        if isinstance(statement, ast.Try):
            for handler in statement.handlers:
                yield from _top_level(handler.body)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at its top level."""
    files = module_files(package)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        imported: set[str] = set()
        for statement in _top_level(ast.parse(path.read_text()).body):
            if isinstance(statement, ast.Import):
                imported |= {alias.name for alias in statement.names if alias.name in files}
            elif isinstance(statement, ast.ImportFrom) and statement.module and statement.level == 0:
                for alias in statement.names:
                    submodule = f"{statement.module}.{alias.name}"
                    imported |= {submodule} if submodule in files else {statement.module} & set(files)
        graph[module] = imported - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, round (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                found.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_of_the_package_imports_one_that_imports_it_back() -> None:
    graph = import_graph(PACKAGE)
    assert {"airflow_provider_namelookup.engine.run", "airflow_provider_namelookup.engine.spending"} <= set(graph)
    assert "airflow_provider_namelookup.engine.options" in graph["airflow_provider_namelookup.engine.spending"]
    assert circles(graph) == []


def test_a_circle_is_found_through_type_checking_imports_and_packages(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "engine").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine" / "__init__.py").write_text("from pkg.engine.run import Run\n")
    (package / "engine" / "run.py").write_text("from pkg.engine.spending import Spending\nclass Run: ...\n")
    (package / "engine" / "spending.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.engine import run\n"
        "def later():\n    import pkg.engine.options\n")
    (package / "engine" / "options.py").write_text("import pkg.engine.spending\n")
    assert circles(import_graph(package)) == [["pkg.engine.run", "pkg.engine.spending"]]
