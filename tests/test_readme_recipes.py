"""The README's recipes as a new user follows them (issue 25, items 9 and 10): its emulator
connection (the JSON form, with which Airflow does not warn on every use) and its three lines
that run a DAG snippet with ``dag.test()`` on a fresh ``AIRFLOW_HOME``, in a shell of their own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
EMULATOR_ADDRESS = "127.0.0.1:8765"


def _emulator_connections() -> list[tuple[str, str]]:
    """The README's ``export AIRFLOW_CONN_...='...'`` lines that reach the emulator: (variable, value)."""
    lines = re.findall(r"^export (AIRFLOW_CONN_\w+)='([^']+)'", README, flags=re.M)
    return [(name, value) for name, value in lines if EMULATOR_ADDRESS in value]


def _recipe() -> str:
    """The shell lines of the README's recipe for running a snippet."""
    start = README.index("**To run a snippet**")
    return re.search(r"```bash\n(.*?)```", README[start:], flags=re.S).group(1)  # type: ignore[union-attr]


def _first_snippet(section: str) -> str:
    start = README.index(f"## {section}\n")
    return re.search(r"```python\n(.*?)```", README[start:], flags=re.S).group(1)  # type: ignore[union-attr]


def test_every_emulator_connection_of_the_readme_is_json_with_the_scheme_in_the_host() -> None:
    """``?scheme=http`` in a URI made Airflow warn on every use: ``Skipping masking for a secret as
    it's too short (<5 chars)``, the ``http`` of that extra."""
    connections = _emulator_connections()
    assert connections, "the README shows no emulator connection"
    for name, value in connections:
        conn = json.loads(value)
        assert conn["conn_type"] == "namelookup" and conn["host"] == f"http://{EMULATOR_ADDRESS}", name
        assert "scheme" not in value, name


def test_the_snippet_recipe_runs_on_a_fresh_airflow_home(emulator: Any, make_account: Any, tmp_path: Path) -> None:
    """The README's three lines, a snippet of *Operators over XCom* wrapped as it says, and its emulator
    connection: the run succeeds, pays the emulator, and Airflow warns about no secret."""
    token = make_account(credits=100)
    dag_file = ("from airflow.sdk import DAG\n\nwith DAG(\"try_namelookup\", schedule=None) as dag:\n"
                + textwrap.indent(_first_snippet("Operators over XCom"), "    ")
                + '\nif __name__ == "__main__":\n    dag.test()\n')
    (tmp_path / "my_dag.py").write_text(dag_file)
    # the README's emulator connection, at this emulator's address, with this account's token
    local = json.loads(next(v for name, v in _emulator_connections() if name == "AIRFLOW_CONN_NAMELOOKUP_LOCAL"))
    local.update(host=local["host"].replace(EMULATOR_ADDRESS, emulator.url.removeprefix("http://")), password=token)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    env.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                **{f"AIRFLOW_CONN_NAMELOOKUP_{name}": json.dumps(local) for name in ("DEFAULT", "LOCAL")}})
    done = subprocess.run(["bash", "-e", "-c", _recipe()], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "DagRun Finished: dag_id=try_namelookup" in output and "state=success" in output, output[-3000:]
    assert emulator.state.remaining_credits(token) < 100  # it really asked the emulator
    assert "Skipping masking" not in output
