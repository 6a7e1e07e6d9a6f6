"""The demo's own script, in its short mode: what ``make demo`` does, smaller."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_short_demo_runs_end_to_end_and_leaves_nothing_running(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "demo", "--short", "--workdir", str(tmp_path / "demo")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"customers_gender: [\d,]+ rows enriched, [1-9]\d* rows with errors", out)
    assert re.search(r"first run: [1-9][\d,]* credits spent", out)
    assert "Gender split by country" in out and "parameter-first-name-invalid" in out
    url = re.search(r"Emulator listening on (http://\S+)", out).group(1)  # type: ignore[union-attr]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/emulator/health", timeout=2)
