"""The emulator is a reading of the contract of its own: it imports no module of the
provider it checks (issue 28). Only data is shared, through ``service_facts.json``."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

EMULATOR = "namelookup_emulator"
CLIENT = "airflow_provider_namelookup"
FORBIDDEN = (CLIENT, "airflow")


def _allowed(name: str) -> bool:
    """The emulator's own modules (and, while it lives inside the provider, the bare parent package)."""
    return name == EMULATOR or name.startswith(EMULATOR + ".") or EMULATOR.startswith(name + ".")


def _forbidden(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in FORBIDDEN) and not _allowed(name)


def _package_dir() -> Path:
    return Path(importlib.import_module(EMULATOR).__file__).parent  # type: ignore[arg-type]


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an emulator file imports, anywhere in it (functions too), relative ones resolved."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = EMULATOR.rsplit(".", node.level - 1)[0] if node.level > 1 else EMULATOR
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            else:
                found.append((node.lineno, node.module or ""))
    return found


def test_no_emulator_file_imports_the_provider_or_airflow() -> None:
    files = sorted(_package_dir().rglob("*.py"))
    assert len(files) > 20
    offending = [f"{path.name}:{line} imports {name}" for path in files for line, name in _imports(path)
                 if _forbidden(name)]
    assert not offending, "\n".join(offending)


def test_the_scan_finds_an_import_of_the_provider(tmp_path: Path) -> None:
    """The scan itself can fail: a file that imports the client's validation is caught."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from airflow_provider_namelookup.validation import validate_query\n")
    assert [name for _, name in _imports(sample) if _forbidden(name)] == ["airflow_provider_namelookup.validation"]


BLOCKER = """
import importlib.abc, sys
FORBIDDEN, EMULATOR = {forbidden!r}, {emulator!r}
def allowed(name):
    return name == EMULATOR or name.startswith(EMULATOR + ".") or EMULATOR.startswith(name + ".")
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == root or name.startswith(root + ".") for root in FORBIDDEN) and not allowed(name):
            raise ModuleNotFoundError(f"blocked for this test: {{name}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
"""

RUN = """
import json, pkgutil, importlib, httpx
emulator = importlib.import_module(EMULATOR)
modules = [m.name for m in pkgutil.walk_packages(emulator.__path__, EMULATOR + ".") if not m.name.endswith("__main__")]
for name in modules:
    importlib.import_module(name)
with emulator.EmulatorServer() as server:
    token = server.create_account(credits=10)
    headers = {{"Authorization": f"Bearer {{token}}"}}
    answer = httpx.post(f"{{server.url}}/v2/gender", json={{"first_name": "Theresa", "country": "DE"}},
                        headers=headers).json()
    refused = httpx.post(f"{{server.url}}/v2/gender", json={{"first_name": "Anna", "country": "XX"}},
                         headers=headers).json()
print(json.dumps({{"modules": len(modules), "gender": answer["gender"], "refused": refused["title"],
                  "loaded": sorted(n for n in __import__("sys").modules if n.startswith({client!r}))}}))
"""


@pytest.mark.parametrize("blocked", [True, False], ids=["provider-and-airflow-blocked", "control"])
def test_the_emulator_runs_where_the_provider_cannot_be_imported(tmp_path: Path, blocked: bool) -> None:
    """Every emulator module imports, and it answers over HTTP, in a process where importing
    the provider or Airflow fails; the control run shows the blocker is what differs."""
    script = (BLOCKER.format(forbidden=FORBIDDEN, emulator=EMULATOR) if blocked else "") + \
        f"EMULATOR = {EMULATOR!r}\n" + RUN.format(client=CLIENT)
    probe = subprocess.run([sys.executable, "-c", script + "\nimport airflow_provider_namelookup.validation"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    if blocked:
        assert "blocked for this test: airflow_provider_namelookup" in probe.stderr, probe.stderr
    else:
        assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout.splitlines()[0])
    assert report["modules"] > 20
    assert (report["gender"], report["refused"]) == ("female", "invalid-country-code")
    assert all(_allowed(name) for name in report["loaded"]), report["loaded"]
