"""The provider reaches into another library's private attributes only in ``third_party.py``, each named there."""

from __future__ import annotations

import ast
from pathlib import Path

from airflow_provider_namelookup.third_party import PRIVATE_REACHES

PACKAGE = Path(__file__).resolve().parents[1] / "airflow_provider_namelookup"


def _own_names() -> set[str]:
    """Every name the package defines (its own private methods and attributes may be reached from its own code)."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def test_private_attributes_of_other_libraries_are_reached_only_in_third_party() -> None:
    own = _own_names() - {attribute.rsplit(".", 1)[1] for attribute in PRIVATE_REACHES}
    reaches = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "third_party.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                    and node.attr not in own):
                reaches.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert reaches == []


def test_every_reach_says_why() -> None:
    third_party = (PACKAGE / "third_party.py").read_text()
    for attribute, why in PRIVATE_REACHES.items():
        assert attribute.rsplit(".", 1)[1].startswith("_") and len(why) > 40
        assert attribute.rsplit(".", 1)[1] in third_party
