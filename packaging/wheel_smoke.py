"""Smoke test of the *built* wheel, run by ``make wheel-smoke`` from a venv that has the
wheel installed (never the editable tree) and from a directory outside the repository.

It fails when a module of the source tree is missing from the wheel, when Airflow does
not discover the provider, or when a lookup against the packaged emulator fails.

Example::

    cd /tmp && /path/to/smoke-venv/bin/python /repo/packaging/wheel_smoke.py /repo
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path


def source_modules(repo: Path) -> list[str]:
    """Dotted names of every module of the package in the source tree."""
    package = repo / "airflow_provider_namelookup"
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(repo).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def check_installed_from_wheel(repo: Path) -> None:
    import airflow_provider_namelookup

    location = Path(airflow_provider_namelookup.__file__).resolve().parent
    if location == (repo / "airflow_provider_namelookup").resolve() or "site-packages" not in location.parts:
        raise SystemExit(f"airflow_provider_namelookup was imported from the source tree ({location}), "
                         "not from the installed wheel")


def check_every_module_imports(repo: Path) -> int:
    missing = []
    modules = source_modules(repo)
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
        raise SystemExit("modules of the source tree that the wheel lacks or cannot import:\n  "
                         + "\n  ".join(missing))
    return len(modules)


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

    wanted = sorted(p.relative_to(repo / "airflow_provider_namelookup" / "plugins" / "static")
                    for p in (repo / "airflow_provider_namelookup" / "plugins" / "static").rglob("*") if p.is_file())
    missing = [str(name) for name in wanted if not (STATIC / name).is_file()]
    if missing:
        raise SystemExit(f"the wheel lacks the credits view's files: {', '.join(missing)}")
    plugins = {e.name: e.value for e in entry_points(group="airflow.plugins")}
    if plugins.get("namelookup") != "airflow_provider_namelookup.plugins.credits_view:NameLookupCreditsPlugin":
        raise SystemExit(f"the wheel does not register the credits view's plugin (airflow.plugins: {plugins})")
    return len(wanted)


def check_lookup_against_the_emulator() -> str:
    from airflow_provider_namelookup.emulator import EmulatorServer
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with EmulatorServer() as server:
        token = server.create_account(credits=10)
        with NameLookupHook.for_url(server.url, token) as hook:
            result = hook.gender(first_name="Theresa", country="DE")
            remaining = hook.get_statistic()["remaining_credits"]
    if result.get("gender") != "female" or remaining != 9:
        raise SystemExit(f"unexpected lookup answer: {result!r}, {remaining} credits left")
    return str(result["gender"])


def main(repo: Path) -> None:
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="wheel-smoke-airflow-"))
    check_installed_from_wheel(repo)
    count = check_every_module_imports(repo)
    check_provider_discovery()
    files = check_credits_view_is_packaged(repo)
    gender = check_lookup_against_the_emulator()
    print(f"wheel smoke test passed: {count} modules import, provider discovered, {files} files of the "
          f"credits view and its plugin packaged, Theresa looked up as {gender} on the packaged emulator")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
