"""The version matrix: the smoke subset (``pytest -m compat``) on every other supported Airflow and Python.

``make test`` runs the whole suite on Airflow 3.3 with Python 3.11 (``.venv``); this
script covers the rest of the supported range. Each target has a lock file here
(``compat/<target>.txt``, the ``pip freeze`` of a venv that worked), so an older
Airflow gets the dependency set it was released with and not today's fastapi or cadwyn.

Venvs are cached outside the repository, one per target and lock file
(``${XDG_CACHE_HOME:-~/.cache}/airflow-provider-namelookup/compat/<target>-<hash of the lock file>``);
the provider and the emulator (its own distribution, ``namelookup-emulator/``) are installed
from the working tree on every run (editable, ``--no-deps``), so the code under test is always
current. A run holds a lock on the venv,
so two checkouts sharing the cache take turns instead of installing over each other;
venvs unused for a week are deleted. A cold cache costs one ``pip install`` per target.

Usage::

    python3 compat/matrix.py run                    # every target (make test-compat)
    python3 compat/matrix.py run af3.1-py3.11       # one target
    python3 compat/matrix.py run --jobs 1 --pytest-args "-x -k sensor"
    python3 compat/matrix.py lock af3.2-py3.11      # re-resolve a target and rewrite its lock file
    python3 compat/matrix.py list
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "compat"
EMULATOR = ROOT / "namelookup-emulator"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "airflow-provider-namelookup" / "compat"

# What a smoke venv holds besides Airflow: the provider's own requirements, the emulator's
# (namelookup-emulator/pyproject.toml: starlette, uvicorn, gender-guesser, httpx, pendulum),
# and what the smoke tests import. Only `lock` resolves these; `run` installs the lock file.
SMOKE_REQUIREMENTS = [
    "apache-airflow-providers-common-sql", "apache-airflow-providers-common-compat", "httpx", "pendulum", "sqlglot",
    "starlette", "uvicorn", "gender-guesser",
    "apache-airflow-providers-sqlite", "pytest", "pytest-asyncio", "hypothesis", "jsonschema", "statsd",
]


@dataclass(frozen=True)
class Target:
    """One cell of the matrix.

    :param uploaded_prior_to: resolve only what PyPI had then (an older Airflow does not
        work with today's fastapi/cadwyn/svcs); None to pin to ``pin_like`` instead.
    :param pin_like: a lock file whose versions ``lock`` keeps where they fit (all but Airflow's
        own distributions, so that another Airflow release can borrow a neighbour's dependency set).
    :param not_pinned: distributions of ``pin_like`` left to the resolver (lower case).
    :param marker: the tests run (``pytest -m``): the smoke subset, or on the oldest releases its
        ``floor`` part, to keep CI's time (one ``airflow dags test`` of every operator kind and the
        sensor, the connection form, the credits plugin staying away).
    """

    name: str
    python: str
    airflow: str
    uploaded_prior_to: str | None = None
    pin_like: str | None = None
    not_pinned: tuple[str, ...] = ()
    marker: str = "compat"

    @property
    def lock_file(self) -> Path:
        return HERE / f"{self.name}.txt"


TARGETS = [
    # Airflow 2 pins most of what it needs (Flask-AppBuilder 4.5, SQLAlchemy 1.4, connexion 2): today's index works.
    Target("af2.11-py3.11", "3.11", "2.11.2", uploaded_prior_to="2026-11-28T00:00:00Z", marker="floor"),
    # 3.0.6 caps neither fastapi nor cadwyn, and today's (cadwyn 9) are years newer than it; the set 3.1.8 runs
    # with is of its generation and has the common-compat the provider needs (get_async_connection(hook=)).
    # Its SQLAlchemy is 1.4 (3.1.8's 2.1, and the alembic that needs 2.x, are left to the resolver).
    Target("af3.0-py3.11", "3.11", "3.0.6", pin_like="af3.1-py3.11.txt",
           not_pinned=("sqlalchemy", "sqlalchemy-jsonfield", "sqlalchemy-utils", "alembic"), marker="floor"),
    # 3.1.8 works with the packages of the day this was written; the set of its release month
    # does not (SQLAlchemy-Utils 0.42 breaks on SQLAlchemy 2.1, and common-compat lacks get_async_connection(hook=)).
    Target("af3.1-py3.11", "3.11", "3.1.8", uploaded_prior_to="2026-11-23T00:00:00Z"),
    Target("af3.2-py3.11", "3.11", "3.2.2", uploaded_prior_to="2026-08-01T00:00:00Z"),
    Target("af3.3-py3.12", "3.12", "3.3.2", pin_like="af3.3-py3.11.txt"),
    Target("af3.3-py3.13", "3.13", "3.3.2", pin_like="af3.3-py3.11.txt"),
]


def find_python(version: str) -> str:
    """An interpreter of ``version`` (``3.12``): on PATH, else under pyenv's versions."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
        return found
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates = sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"))
    if candidates:
        return candidates[-1]
    raise SystemExit(f"compat: no Python {version} found (PATH or {pyenv_root}/versions); install it to run "
                     "this part of the matrix")


# Bump when ensure_venv builds venvs differently, so cached ones are rebuilt.
VENV_RECIPE = "1"


def venv_dir(target: Target) -> Path:
    """The cache entry of ``target``: one per lock file, Python and recipe.

    pyproject.toml is not part of the key: the venv holds only the lock file's packages,
    and ``pip check`` after installing the working tree reports a requirement the lock
    lacks (then run ``lock`` again, which changes the key).
    """
    digest = hashlib.sha256(f"{VENV_RECIPE}|{target.python}|".encode() + target.lock_file.read_bytes())
    return CACHE / f"{target.name}-{digest.hexdigest()[:12]}"


def sh(*args: str | Path, out: IO[str] | None = None) -> None:
    """Run a command, echoed first; its output goes to ``out`` (default: this process's)."""
    print("+", " ".join(str(a) for a in args), file=out or sys.stdout, flush=True)
    subprocess.run([str(a) for a in args], check=True, stdout=out, stderr=subprocess.STDOUT if out else None)


def pip(venv: Path, *args: str | Path, out: IO[str] | None = None) -> None:
    sh(venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check", "-q", *args, out=out)


def new_venv(target: Target, where: Path, out: IO[str] | None = None) -> None:
    shutil.rmtree(where, ignore_errors=True)
    sh(find_python(target.python), "-m", "venv", where, out=out)
    pip(where, "install", "--upgrade", "pip>=25.3", out=out)  # --uploaded-prior-to


def ensure_venv(target: Target, out: IO[str] | None = None) -> Path:
    """The cached venv of ``target`` built from its lock file (call with the venv's lock held)."""
    where = venv_dir(target)
    stamp = where / ".complete"
    _forget_unused(target)
    if stamp.exists():
        stamp.touch()  # last used: see _forget_unused
        return where
    started = time.monotonic()
    new_venv(target, where, out)
    pip(where, "install", "--no-deps", "-r", target.lock_file, out=out)
    pip(where, "check", out=out)
    stamp.write_text(f"built in {time.monotonic() - started:.0f} s\n")
    return where


def _forget_unused(target: Target, days: float = 7) -> None:
    """Delete venvs of this target (older lock files, other checkouts) unused for ``days``."""
    for other in CACHE.glob(f"{target.name}-*"):
        stamp = other / ".complete"
        last_used = stamp.stat().st_mtime if stamp.exists() else other.stat().st_mtime
        if other.is_dir() and time.time() - last_used > days * 86400:
            shutil.rmtree(other, ignore_errors=True)


# The distributions of Airflow's own release, which a target's `airflow` version decides and `pin_like` must not.
AIRFLOW_ITSELF = ("apache-airflow==", "apache-airflow-core==", "apache-airflow-task-sdk==")


def lock(target: Target) -> None:
    """Resolve ``target`` afresh and write its lock file (a developer's step, not CI's)."""
    with tempfile.TemporaryDirectory(prefix=f"compat-{target.name}-") as tmp:
        venv = Path(tmp) / "venv"
        new_venv(target, venv)
        pins: list[str] = []
        if target.uploaded_prior_to:
            pins += ["--uploaded-prior-to", target.uploaded_prior_to]
        if target.pin_like:
            borrowed = Path(tmp) / "constraints.txt"
            left_out = (*AIRFLOW_ITSELF, *(f"{name}==" for name in target.not_pinned))
            borrowed.write_text("".join(line for line in (HERE / target.pin_like).read_text().splitlines(True)
                                        if not line.lower().startswith(left_out)))
            pins += ["-c", str(borrowed)]
        pip(venv, "install", *pins, f"apache-airflow=={target.airflow}", *SMOKE_REQUIREMENTS)
        pip(venv, "check")
        frozen = subprocess.run([venv / "bin" / "python", "-m", "pip", "freeze", "--all", "--exclude-editable"],
                                check=True, capture_output=True, text=True).stdout
    kept = [line for line in frozen.splitlines()
            if line and not line.startswith(("pip==", "airflow-provider-namelookup"))]
    header = (f"# Lock file of the compat target {target.name}: Airflow {target.airflow} on Python {target.python}.\n"
              f"# Written by `python3 compat/matrix.py lock {target.name}`"
              + (f" (resolved with --uploaded-prior-to {target.uploaded_prior_to})" if target.uploaded_prior_to
                 else f" (pinned like {target.pin_like})") + "; do not edit by hand.\n")
    target.lock_file.write_text(header + "\n".join(sorted(kept, key=str.lower)) + "\n")
    print(f"wrote {target.lock_file.relative_to(ROOT)} ({len(kept)} packages)")


def build(target: Target) -> str:
    """Build the target's venv if it is missing (nothing of the tree is written); the output."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{target.name}.lock", "w") as guard, tempfile.TemporaryFile("w+") as out:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            ensure_venv(target, out)
        except subprocess.CalledProcessError as err:  # tried again, and reported, by install()
            out.write(f"\ncompat: {err}\n")
        out.seek(0)
        return out.read()


def install(target: Target) -> tuple[Path | None, float, str]:
    """Build the target's venv if it is missing and install the working tree into it (editable).

    :returns: the venv (None when a step failed), seconds, and the output.
    """
    started = time.monotonic()
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile("w+") as out:
        venv: Path | None = None
        try:
            with open(CACHE / f"{target.name}.lock", "w") as guard:
                fcntl.flock(guard, fcntl.LOCK_EX)
                venv = ensure_venv(target, out)
                pip(venv, "install", "--no-deps", "-e", EMULATOR, "-e", ROOT, out=out)
                # A second copy of the metadata while pytest runs in the tree: Airflow would load the plugin twice.
                shutil.rmtree(ROOT / "airflow_provider_namelookup.egg-info", ignore_errors=True)
                shutil.rmtree(EMULATOR / "namelookup_emulator.egg-info", ignore_errors=True)
                pip(venv, "check", out=out)  # a requirement the lock file lacks: run `lock` for this target again
        except subprocess.CalledProcessError as err:
            out.write(f"\ncompat: {err}\n")
            venv = None
        out.seek(0)
        return venv, time.monotonic() - started, out.read()


def run(target: Target, venv: Path, pytest_args: list[str]) -> tuple[bool, float, str]:
    """Run the smoke subset in the target's venv, the working tree installed (:func:`install`).

    :returns: passed, seconds, and pytest's output.
    """
    started = time.monotonic()
    with open(CACHE / f"{target.name}.lock", "w") as guard, tempfile.TemporaryFile("w+") as out:
        fcntl.flock(guard, fcntl.LOCK_EX)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("VIRTUAL_ENV", None)
        result = subprocess.run([venv / "bin" / "python", "-m", "pytest", "-m", target.marker, "-p",
                                 "no:cacheprovider", "-q", "-rfEx", "--durations=8", "tests", *pytest_args],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.seek(0)
        return result.returncode == 0, time.monotonic() - started, out.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "lock", "list"])
    parser.add_argument("targets", nargs="*", help="target names (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="targets run at the same time (default 2)")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, e.g. '-x -k sensor'")
    args = parser.parse_args()
    by_name = {t.name: t for t in TARGETS}
    unknown = [n for n in args.targets if n not in by_name]
    if unknown:
        raise SystemExit(f"compat: unknown target(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    chosen = [by_name[n] for n in args.targets] or TARGETS
    if args.command == "list":
        for t in chosen:
            print(f"{t.name}\tAirflow {t.airflow}\tPython {t.python}\t{venv_dir(t)}")
        return
    if args.command == "lock":
        for t in chosen:
            lock(t)
        return
    # Every install before any test: an editable install writes the tree's metadata into the tree for a
    # moment, and a test of another target running there then read a half-written copy (MetadataNotFound).
    # The venvs are built side by side (nothing of the tree is written), the installs one after another.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        built = dict(zip((t.name for t in chosen), pool.map(build, chosen), strict=True))
    installed = {t.name: install(t) for t in chosen}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {t.name: pool.submit(run, t, venv, args.pytest_args.split())
                   for t in chosen if (venv := installed[t.name][0]) is not None}
        outcomes = []
        for t in chosen:
            _, install_seconds, install_output = installed[t.name]
            ok, seconds, output = futures[t.name].result() if t.name in futures else (False, 0.0, "")
            print(f"\n===== {t.name}: Airflow {t.airflow}, Python {t.python} =====\n"
                  f"{built[t.name]}{install_output}{output}", flush=True)
            outcomes.append((t, ok, install_seconds + seconds))
    print("\ncompat matrix:")
    for t, ok, seconds in outcomes:
        print(f"  {t.name:<14} Airflow {t.airflow:<6} Python {t.python:<5} {'passed' if ok else 'FAILED'}"
              f"  {seconds:5.0f} s")
    if not all(ok for _, ok, _ in outcomes):
        sys.exit(1)


if __name__ == "__main__":
    main()
