"""The install commands of the README and the docs are ones that work (issue 36, item 1).

Neither distribution is on PyPI yet, so every ``pip install`` that names one must say where pip
finds it: a folder of the checkout, or the ``dist/`` that ``make dist`` fills (``--find-links``).
``make dist`` is run for real into a temporary folder: both wheels are there, each documented
``--find-links ./dist`` requirement resolves to one of them, and both install into a fresh venv
without the index. ``make wheel-smoke`` (on top of ``make dist``) installs them with their
dependencies and runs them.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/installation.md", "docs/scaling-out.md")
OURS = ("airflow-provider-namelookup", "namelookup-emulator")
VALUED = {"--find-links", "-f", "--uploaded-prior-to", "-c", "--constraint", "--python", "--target", "-t"}
"""Options whose value is the next word, not a requirement."""


def install_commands(page: str) -> list[list[str]]:
    """The words of each ``pip install`` line in the page's shell blocks, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", (ROOT / page).read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("pip install"):
                commands.append(shlex.split(line, comments=True)[2:])
    return commands


def requirements(words: list[str]) -> list[str]:
    """The requirements among a ``pip install``'s words (options and their values left out)."""
    found, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in VALUED:
            skip = True
        elif not word.startswith("-"):
            found.append(word)
    return found


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]


def test_the_readme_and_the_installation_page_say_it_is_not_on_pypi_yet() -> None:
    for page in ("README.md", "docs/installation.md"):
        text = (ROOT / page).read_text()
        assert re.search(r"Not on PyPI yet|No release is published", text), page
        assert "make dist" in text, page


@pytest.mark.parametrize("page", PAGES)
def test_every_install_command_says_where_pip_finds_what_is_not_published(page: str) -> None:
    commands = install_commands(page)
    assert commands, f"{page} has no pip install"
    for words in commands:
        for requirement in requirements(words):
            if requirement.startswith("."):  # a folder of the checkout, with or without extras
                folder = ROOT / requirement.split("[", 1)[0]
                assert (folder / "pyproject.toml").is_file(), f"{page}: {shlex.join(words)}: no project in {folder}"
            elif _name(requirement) in OURS:
                assert "--find-links" in words, f"{page}: {shlex.join(words)}: {_name(requirement)} is not on PyPI"


def test_no_message_of_the_package_asks_pypi_for_itself() -> None:
    pattern = re.compile(r"pip install '?(airflow-provider-namelookup|namelookup-emulator)\b(?!.*find-links)")
    sources = [*ROOT.joinpath("airflow_provider_namelookup").rglob("*.py"),
               *ROOT.joinpath("namelookup-emulator", "namelookup_emulator").rglob("*.py")]
    offending = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in sources
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offending, "\n".join(offending)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make dist`` into a temporary folder, with this test's venv (its install stamp not remade)."""
    folder = tmp_path_factory.mktemp("make-dist") / "dist"
    venv = Path(sys.prefix)
    done = subprocess.run(["make", "--no-print-directory", "-o", str(venv / ".installed"), "dist",
                           f"DIST={folder}", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not list(ROOT.glob("**/*.egg-info")), "make dist left egg-info in the tree"
    return folder


def test_make_dist_builds_both_distributions(dist: Path) -> None:
    built = sorted(path.name for path in dist.iterdir())
    for stem in ("airflow_provider_namelookup", "namelookup_emulator"):
        assert [name for name in built if name.startswith(f"{stem}-") and name.endswith("-py3-none-any.whl")], built
        assert [name for name in built if name.startswith(f"{stem}-") and name.endswith(".tar.gz")], built


def test_each_documented_find_links_requirement_resolves_to_a_built_wheel(dist: Path) -> None:
    wanted = sorted({requirement for page in PAGES for words in install_commands(page) if "--find-links" in words
                     for requirement in requirements(words) if _name(requirement) in OURS})
    assert len(wanted) >= 5, wanted  # the provider, its extras, the emulator alone
    for requirement in wanted:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                               "--no-index", "--find-links", str(dist), "--quiet", "--report", "-", requirement],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{requirement}: {done.stderr[-2000:]}"
        assert "does not provide the extra" not in done.stderr, f"{requirement}: {done.stderr}"
        urls = [item["download_info"]["url"] for item in json.loads(done.stdout)["install"]]
        assert len(urls) == 1 and urls[0].startswith(dist.as_uri()) and urls[0].endswith(".whl"), urls


def test_both_wheels_install_into_a_fresh_venv_without_the_index(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", "--find-links", str(dist), *OURS], check=True, timeout=300)
    shown = subprocess.run([str(python), "-c", "import importlib.metadata as m, json; print(json.dumps({d: ["
                            "m.version(d), m.metadata(d).get_all('Provides-Extra') or [], "
                            "[str(f) for f in m.files(d)]] for d in " + repr(OURS) + "}))"],
                           capture_output=True, text=True, check=True, timeout=60, cwd=tmp_path)
    installed = json.loads(shown.stdout)
    _, extras, files = installed["airflow-provider-namelookup"]
    assert {"emulator", "examples", "evaluation", "snowflake", "scale"} <= set(extras), extras
    assert "airflow_provider_namelookup/evaluation/templates/report.html" in files
    assert not [f for f in files if f.startswith("namelookup_emulator/")]  # the emulator is its own distribution
    assert "namelookup_emulator/server.py" in installed["namelookup-emulator"][2]
