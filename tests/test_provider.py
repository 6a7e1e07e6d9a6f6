"""The package registers as an Airflow provider with a declarative connection form."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from airflow_provider_namelookup import get_provider_info


def test_provider_info_is_valid_against_airflows_schema() -> None:
    schema = json.loads(resources.files("airflow").joinpath("provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
    assert get_provider_info()["package-name"] == "airflow-provider-namelookup"


def test_providers_manager_sees_the_connection_type() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    assert "airflow-provider-namelookup" in manager.providers
    behaviour = manager.field_behaviours["namelookup"]
    assert behaviour["relabeling"]["password"] == "API Token"
    assert behaviour["relabeling"]["host"] == "Base URL"
    assert {"login", "schema", "port"} <= set(behaviour["hidden_fields"])
    widgets = {k.rsplit("__", 1)[-1] for k in manager.connection_form_widgets if k.startswith("extra__namelookup__")}
    assert widgets == {"timeout", "connect_timeout", "batch_size", "max_retries"}


@pytest.mark.parametrize(("command", "expected"), [
    (["providers", "list"], "airflow-provider-namelookup"),
    (["providers", "hooks"], "airflow_provider_namelookup.hooks.namelookup.NameLookupHook"),
])
def test_airflow_cli_lists_the_provider(command: list[str], expected: str) -> None:
    out = subprocess.run([sys.executable, "-m", "airflow", *command], capture_output=True, text=True,
                         check=True, timeout=120)
    assert expected in out.stdout
