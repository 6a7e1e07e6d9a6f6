"""Every statement the engine sends is spelled by the dialect: no engine module builds SQL itself.

The engine's modules (``warehouse/*.py`` and ``engine/``) are read as Python, and every string
they write (an f-string with its holes, or a plain string; docstrings aside) is searched for the
shape of a statement: ``SELECT ... FROM``, ``INSERT INTO``, ``UPDATE ... SET``, ``DELETE FROM``,
``CREATE``/``DROP``/``ALTER`` of a table or index, ``MERGE INTO``, ``TRUNCATE``. A statement found
there belongs in the dialect group of its job (``warehouse/dialects/``), where a dialect can spell
it its own way.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import airflow_provider_namelookup

PACKAGE = Path(airflow_provider_namelookup.__file__).parent
STATEMENT = re.compile(r"\bSELECT\b.*\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\S+\s+(AS\s+\S+\s+)?SET\b|\bDELETE\s+FROM\b"
                       r"|\b(CREATE|DROP|ALTER)\s+(TEMPORARY\s+)?(TABLE|INDEX|VIEW)\b|\bMERGE\s+INTO\b|\bTRUNCATE\b",
                       re.DOTALL)
ALLOWED = {
    ("warehouse/where_clause.py", "filtered"):
        "the one way a checked `where` enters a statement: a derived table around the relation, the same in "
        "every grammar; the evaluation module, which has no run and no session, filters its source by it too",
}
"""Functions that may build SQL outside the dialects, each with why (keep it short)."""


def engine_modules() -> list[Path]:
    """The modules whose statements the dialect must spell: the warehouse adapters and the engine."""
    return sorted([*(PACKAGE / "warehouse").glob("*.py"), *(PACKAGE / "engine").rglob("*.py")])


def statements_built(source: str) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, text)`` of each string in ``source`` that has a statement's shape
    (an f-string's holes read as ``{}``); docstrings are left out."""
    tree = ast.parse(source)
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    inside: dict[int, str] = {}
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                inside.setdefault(id(node), function.name)  # ast.walk reaches outer functions first
    in_fstring = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | in_fstring:
            text = node.value
        else:
            continue
        if STATEMENT.search(text):
            found.append((node.lineno, inside.get(id(node), "<module>"), text))
    return found


def test_no_engine_module_builds_a_statement() -> None:
    built = [f"{path.relative_to(PACKAGE)}:{line} ({function}): {text!r}"
             for path in engine_modules()
             for line, function, text in statements_built(path.read_text())
             if (str(path.relative_to(PACKAGE)), function) not in ALLOWED]
    assert not built, "statements built outside the dialects (move each into its job's dialect group):\n" + \
        "\n".join(built)


def test_every_allowed_function_still_builds_one() -> None:
    """An allowance nothing needs any more is dropped, so the list stays what is true."""
    for path, function in ALLOWED:
        assert function in {f for _, f, _ in statements_built((PACKAGE / path).read_text())}, (path, function)


def test_the_search_finds_the_statements_the_engine_once_built() -> None:
    old = '''
def _renew(self):
    p = self.session.dialect.placeholder
    self.session.execute(f"UPDATE {self.quoted} SET lease_expires = {p} WHERE claimed_by = {p} "
                         f"AND state = 'claimed'", [time.time() + self.lease_seconds, self.owner])

def _count(self):
    return self.session.fetchall("SELECT COUNT(*) FROM t")

def _create(self):
    self.session.execute(f"CREATE TABLE {self.quoted} AS {' UNION ALL '.join(selects)}")
'''
    assert [(function, line) for line, function, _ in statements_built(old)] == [
        ("_renew", 4), ("_count", 8), ("_create", 11)]


def test_words_of_messages_and_docstrings_are_not_statements() -> None:
    said = '''
def check(sql):
    """Refuse anything but a SELECT FROM a table: no INSERT INTO, no DROP TABLE."""
    raise ValueError(f"sql must be a query (SELECT, WITH), got {sql!r}")
'''
    assert statements_built(said) == []
