"""`make browser` installs only what the browser test needs, and says so first (issue 25, item 12):
the Makefile's own recipe, run by make, with ``apt-get`` replaced on ``PATH`` by a script that
records how it was called (a test cannot install packages as root)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _command(folder: Path, name: str, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _make_browser(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    return subprocess.run([make, "--no-print-directory", "-C", str(ROOT), "browser"], capture_output=True,
                          text=True, env={"PATH": str(bin_dir)}, timeout=60, check=True)


def test_it_installs_chromium_and_its_driver_without_recommends_and_says_so_first(tmp_path: Path) -> None:
    calls = tmp_path / "apt-get.calls"
    _command(tmp_path, "apt-get", f'echo "$*" >> {calls}\necho "apt-get $1 ran"')
    done = _make_browser(tmp_path)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("make browser: installing chromium chromium-driver for the credits view's browser "
                               "test, and only them")
    assert "--no-install-recommends" in lines[0] and lines[1:] == ["apt-get update ran", "apt-get install ran"]
    assert calls.read_text().splitlines() == ["update -q", "install -y -q --no-install-recommends chromium "
                                                           "chromium-driver"]


def test_it_does_nothing_when_both_are_there(tmp_path: Path) -> None:
    calls = tmp_path / "apt-get.calls"
    _command(tmp_path, "apt-get", f'echo "$*" >> {calls}')
    _command(tmp_path, "chromium")
    _command(tmp_path, "chromedriver")
    assert _make_browser(tmp_path).stdout == "" and not calls.exists()
