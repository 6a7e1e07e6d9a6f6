"""Smoke test of the *built* wheels, run by ``make wheel-smoke`` from venvs that have them
installed (never the editable tree) and from a directory outside the repository.

``provider``: the venv holds the provider's wheel and the emulator's (the ``[emulator]``
extra). It fails when a module of the provider's source tree is missing from its wheel,
when the provider's wheel still carries the emulator (a module or the
``namelookup-emulator`` script), when Airflow does not discover the provider, or when a
lookup against the packaged emulator fails.

``emulator``: the venv holds the emulator's wheel alone. It fails when Airflow or the
provider can be imported there, when a module of the emulator's source tree is missing
from its wheel, or when its ``namelookup-emulator`` script does not serve a lookup with the
token it prints.

Example::

    cd /tmp && /path/to/smoke-venv/bin/python /repo/packaging/wheel_smoke.py provider /repo
    cd /tmp && /path/to/emulator-smoke-venv/bin/python /repo/packaging/wheel_smoke.py emulator /repo
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from importlib.metadata import distribution
from pathlib import Path

PROVIDER = "airflow_provider_namelookup"
EMULATOR = "namelookup_emulator"
EMULATOR_DIR = "namelookup-emulator"


def source_modules(root: Path, package: str) -> list[str]:
    """Dotted names of every module of ``package`` in the source tree under ``root``."""
    names = []
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def check_installed_from_wheel(repo: Path, package: str) -> None:
    location = Path(importlib.import_module(package).__file__ or "").resolve().parent
    if repo in location.parents or "site-packages" not in location.parts:
        raise SystemExit(f"{package} was imported from the source tree ({location}), not from the installed wheel")


def check_every_module_imports(root: Path, package: str) -> int:
    missing = []
    modules = source_modules(root, package)
    for name in modules:
        try:
            if name.endswith(".__main__"):  # importing it would run it: only check it is there
                if importlib.util.find_spec(name) is None:
                    raise ImportError("not in the wheel")
            else:
                importlib.import_module(name)
        except ImportError as err:
            missing.append(f"{name}: {err}")
    if missing:
        raise SystemExit(f"modules of the source tree that the wheel of {package} lacks or cannot import:\n  "
                         + "\n  ".join(missing))
    return len(modules)


def check_facts_are_packaged(dist_name: str, package: str) -> None:
    """The shared ``service_facts.json`` is a real file in the wheel (the emulator's copy is a link in the tree)."""
    files = {str(f) for f in distribution(dist_name).files or ()}
    if f"{package}/service_facts.json" not in files:
        raise SystemExit(f"the wheel of {dist_name} lacks {package}/service_facts.json")
    if not (Path(importlib.import_module(package).__file__ or "").parent / "service_facts.json").is_file():
        raise SystemExit(f"{package}/service_facts.json is not a readable file where the wheel installed it")


def check_provider_carries_no_emulator() -> None:
    files = [str(f) for f in distribution("airflow-provider-namelookup").files or ()]
    carried = [f for f in files if f.startswith(f"{PROVIDER}/emulator")]
    scripts = [e.name for e in distribution("airflow-provider-namelookup").entry_points if e.group == "console_scripts"]
    if carried or scripts or importlib.util.find_spec(f"{PROVIDER}.emulator") is not None:
        raise SystemExit(f"the provider's wheel still carries the emulator: {carried[:3]} scripts {scripts}")
    emulator_scripts = {e.name: e.value for e in distribution("namelookup-emulator").entry_points
                        if e.group == "console_scripts"}
    if emulator_scripts != {"namelookup-emulator": f"{EMULATOR}.cli:main"}:
        raise SystemExit(f"the emulator's wheel does not provide the namelookup-emulator script: {emulator_scripts}")


def check_provider_discovery() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    if "airflow-provider-namelookup" not in manager.providers:
        raise SystemExit("Airflow's ProvidersManager does not list airflow-provider-namelookup")
    if "namelookup" not in manager.field_behaviours:
        raise SystemExit("the namelookup connection type is not registered")


def check_credits_view_is_packaged(repo: Path) -> int:
    """The credits view's page, script, styles, icon and Chart.js are in the wheel, and its plugin is an
    ``airflow.plugins`` entry point."""
    from importlib.metadata import entry_points

    from airflow_provider_namelookup.plugins.app import STATIC

    static = repo / PROVIDER / "plugins" / "static"
    wanted = sorted(p.relative_to(static) for p in static.rglob("*") if p.is_file())
    missing = [str(name) for name in wanted if not (STATIC / name).is_file()]
    if missing:
        raise SystemExit(f"the wheel lacks the credits view's files: {', '.join(missing)}")
    plugins = {e.name: e.value for e in entry_points(group="airflow.plugins")}
    if plugins.get("namelookup") != "airflow_provider_namelookup.plugins.credits_view:NameLookupCreditsPlugin":
        raise SystemExit(f"the wheel does not register the credits view's plugin (airflow.plugins: {plugins})")
    return len(wanted)


def check_lookup_against_the_emulator() -> str:
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
    from namelookup_emulator import EmulatorServer

    with EmulatorServer() as server:
        token = server.create_account(credits=10)
        with NameLookupHook.for_url(server.url, token) as hook:
            result = hook.gender(first_name="Theresa", country="DE")
            remaining = hook.get_statistic()["remaining_credits"]
    if result.get("gender") != "female" or remaining != 9:
        raise SystemExit(f"unexpected lookup answer: {result!r}, {remaining} credits left")
    return str(result["gender"])


def check_emulator_alone() -> None:
    found = [name for name in ("airflow", PROVIDER) if importlib.util.find_spec(name) is not None]
    if found:
        raise SystemExit(f"the emulator's smoke venv is not the emulator alone: it can import {', '.join(found)}")


def check_console_script_serves() -> str:
    """``namelookup-emulator --port 0`` as a user runs it: the URL and token it prints answer a lookup."""
    import httpx

    script = Path(sys.executable).with_name("namelookup-emulator")
    process = subprocess.Popen([str(script), "--port", "0", "--log-level", "warning"],  # noqa: S603
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split(" on ", 1)[-1].strip()
        token = process.stdout.readline().split()[2]
        answer = httpx.post(f"{url}/v2/gender", json={"first_name": "Andrea", "country": "IT"},
                            headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
    finally:
        process.terminate()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
    if answer.get("gender") != "male":
        raise SystemExit(f"namelookup-emulator answered {answer!r}")
    return str(answer["gender"])


def provider(repo: Path) -> None:
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="wheel-smoke-airflow-"))
    check_installed_from_wheel(repo, PROVIDER)
    check_installed_from_wheel(repo, EMULATOR)
    count = check_every_module_imports(repo, PROVIDER)
    check_provider_carries_no_emulator()
    check_facts_are_packaged("airflow-provider-namelookup", PROVIDER)
    check_provider_discovery()
    files = check_credits_view_is_packaged(repo)
    gender = check_lookup_against_the_emulator()
    print(f"provider wheel smoke test passed: {count} modules import, no emulator inside, provider discovered, "
          f"{files} files of the credits view and its plugin packaged, Theresa looked up as {gender} on the "
          "emulator's wheel")


def emulator(repo: Path) -> None:
    check_emulator_alone()
    check_installed_from_wheel(repo, EMULATOR)
    count = check_every_module_imports(repo / EMULATOR_DIR, EMULATOR)
    check_facts_are_packaged("namelookup-emulator", EMULATOR)
    gender = check_console_script_serves()
    print(f"emulator wheel smoke test passed without Airflow or the provider: {count} modules import, "
          f"namelookup-emulator looked Andrea (IT) up as {gender} with the token it printed")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "provider"
    root = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else Path(__file__).resolve().parents[1]
    {"provider": provider, "emulator": emulator}[which](root)
