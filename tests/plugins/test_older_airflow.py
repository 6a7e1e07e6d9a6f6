"""The credits view on Airflow 2.11 and 3.0, which cannot show it: the plugin registers nothing,
says why in the log, and the web UI starts and answers as without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS

pytestmark = [pytest.mark.compat, pytest.mark.floor,
              pytest.mark.skipif(AIRFLOW_V_3_1_PLUS, reason="the view is registered from 3.1 on")]

# The web UI of this release built in-process, as its server builds it, and its health check asked.
WEB_UI_HEALTH = {
    False: "from airflow.www.app import create_app\n"
           "client = create_app(testing=True).test_client()\n"
           "response = client.get('/health')\n"
           "print('HEALTH', response.status_code)\n",
    True: "from fastapi.testclient import TestClient\n"
          "from airflow.api_fastapi.app import create_app\n"
          "client = TestClient(create_app())\n"
          "response = client.get('/api/v2/monitor/health')\n"
          "print('HEALTH', response.status_code)\n",
}


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"})


@pytest.mark.usefixtures("airflow_db")
def test_the_plugin_loads_registers_nothing_and_says_which_airflow_it_needs() -> None:
    out = _run("import json\n"
               "from airflow import plugins_manager\n"
               "plugins_manager.ensure_plugins_loaded()\n"
               "(plugin,) = [p for p in plugins_manager.plugins if p.name == 'namelookup']\n"
               "print('PLUGIN ' + json.dumps({'errors': plugins_manager.import_errors,\n"
               "    'fastapi_apps': len(getattr(plugin, 'fastapi_apps', [])),\n"
               "    'external_views': len(getattr(plugin, 'external_views', [])),\n"
               "    'appbuilder_views': len(plugin.appbuilder_views)}))\n")
    assert out.returncode == 0, out.stderr[-4000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("PLUGIN "))
    assert json.loads(line.removeprefix("PLUGIN ")) == {"errors": {}, "fastapi_apps": 0, "external_views": 0,
                                                       "appbuilder_views": 0}
    assert "The Name Lookup credits view needs Apache Airflow 3.1 or later (this is " in out.stdout + out.stderr


@pytest.mark.usefixtures("airflow_db")
def test_the_web_ui_starts_and_answers_with_the_plugin_installed() -> None:
    out = _run(WEB_UI_HEALTH[AIRFLOW_V_3_0_PLUS])
    assert out.returncode == 0, out.stderr[-4000:]
    assert "HEALTH 200" in out.stdout.splitlines(), out.stdout[-2000:]
