"""The pages' recipes as a new user follows them (issue 25, items 9 and 10; on the site since issue 34):
every emulator connection they show (the JSON form, with which Airflow does not warn on every use),
and the three lines that run a DAG snippet with ``dag.test()`` on a fresh ``AIRFLOW_HOME``, in a
shell of their own. Blocks are found by their ``:name:``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.docs.site import Site

EMULATOR_ADDRESS = "127.0.0.1:8765"


def _emulator_connections(site: Site) -> list[tuple[str, str]]:
    """The pages' ``export AIRFLOW_CONN_...='...'`` lines that reach the emulator: (variable, value)."""
    lines = [line for block in site.code_blocks for line in block.text.splitlines()]
    found = [re.match(r"^export (AIRFLOW_CONN_\w+)='([^']+)'", line) for line in lines]
    return [(m.group(1), m.group(2)) for m in found if m and EMULATOR_ADDRESS in m.group(2)]


def test_every_emulator_connection_of_the_pages_is_json_with_the_scheme_in_the_host(site: Site) -> None:
    """``?scheme=http`` in a URI made Airflow warn on every use: ``Skipping masking for a secret as
    it's too short (<5 chars)``, the ``http`` of that extra."""
    connections = _emulator_connections(site)
    assert len(connections) >= 2, "the connection page and the emulator's start show emulator connections"
    for name, value in connections:
        conn = json.loads(value)
        assert conn["conn_type"] == "namelookup" and conn["host"] == f"http://{EMULATOR_ADDRESS}", name
        assert "scheme" not in value, name


def test_the_snippet_recipe_runs_on_a_fresh_airflow_home(site: Site, emulator: Any, make_account: Any,
                                                         tmp_path: Path) -> None:
    """The recipe's three lines, the XCom operators' snippet wrapped as it says, and the connection
    page's emulator connection: the run succeeds, pays the emulator, and Airflow warns about no secret."""
    token = make_account(credits=100)
    dag_file = ("from airflow.sdk import DAG\n\nwith DAG(\"try_namelookup\", schedule=None) as dag:\n"
                + textwrap.indent(site.snippet("xcom-operator-calls").text, "    ")
                + '\nif __name__ == "__main__":\n    dag.test()\n')
    (tmp_path / "my_dag.py").write_text(dag_file)
    # the page's emulator connection, at this emulator's address, with this account's token
    page = dict(_emulator_connections(site))["AIRFLOW_CONN_NAMELOOKUP_LOCAL"]
    local = json.loads(page)
    local.update(host=local["host"].replace(EMULATOR_ADDRESS, emulator.url.removeprefix("http://")), password=token)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    env.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                **{f"AIRFLOW_CONN_NAMELOOKUP_{name}": json.dumps(local) for name in ("DEFAULT", "LOCAL")}})
    done = subprocess.run(["bash", "-e", "-c", site.snippet("run-a-snippet").text], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "DagRun Finished: dag_id=try_namelookup" in output and "state=success" in output, output[-3000:]
    assert emulator.state.remaining_credits(token) < 100  # it really asked the emulator
    assert "Skipping masking" not in output


def test_the_warehouses_page_shows_a_connection_of_each_warehouse_and_a_file_s_path_is_its_host(
        site: Site, tmp_path: Path) -> None:
    """Issue 50, item 4: that a DuckDB connection's ``host`` is the file path was found in the demo's
    code. Each warehouse's block is a connection of its type; SQLite's and DuckDB's, with the path
    changed to a file of the test's, open that file."""
    from airflow.sdk import BaseHook

    from airflow_provider_namelookup.warehouse.dialects import WAREHOUSES, warehouse_of
    from tests.support import set_connection

    shown: dict[str, dict[str, Any]] = {}
    for block in site.code_blocks:
        if block.page == "warehouses" and (block.name or "").startswith("connection-"):
            (value,) = re.findall(r"^export AIRFLOW_CONN_WAREHOUSE='([^']+)'$", block.text, flags=re.M)
            shown[block.name.removeprefix("connection-")] = json.loads(value)
    assert set(shown) == {w.name for w in WAREHOUSES}
    for name, conn in shown.items():
        warehouse = warehouse_of(conn["conn_type"])
        assert warehouse is not None and warehouse.name == name, (name, conn["conn_type"])
    for name, file in (("sqlite", tmp_path / "shown.db"), ("duckdb", tmp_path / "shown.duckdb")):
        set_connection(f"shown_{name}", {**shown[name], "host": str(file)})
        hook = BaseHook.get_connection(f"shown_{name}").get_hook()
        hook.run("CREATE TABLE customers (customer_id INTEGER)")
        assert file.exists() and hook.get_records("SELECT COUNT(*) FROM customers") == [(0,)]
        os.environ.pop(f"AIRFLOW_CONN_SHOWN_{name.upper()}")
