"""The package registers as an Airflow provider, and its connection form reaches the UI on every release.

Airflow 3.2 and later read the form from the provider info; 3.1 asks the hook, with
wtforms and Flask-AppBuilder mocked by the api-server when they are missing. The UI
gets the form from ``HookMetaService.hook_meta_data()`` on every release, so the tests
read it there, in a fresh interpreter as the api-server would.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from airflow_provider_namelookup import MIN_AIRFLOW_RELEASE, get_provider_info
from airflow_provider_namelookup.connection_form import EXTRA_FIELDS
from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS, AIRFLOW_V_3_2_PLUS

PACKAGE = "airflow-provider-namelookup"
EXTRA_NAMES = {"timeout", "connect_timeout", "batch_size", "max_retries", "max_concurrency"}

pytestmark = pytest.mark.compat


def test_provider_info_is_valid_against_airflows_schema() -> None:
    schema = json.loads(resources.files("airflow").joinpath("provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
    assert get_provider_info()["package-name"] == PACKAGE


def test_the_floor_is_the_same_in_pyproject_provider_info_readme_and_installation_page() -> None:
    from importlib.metadata import requires
    from pathlib import Path

    airflow_req = next(r for r in requires(PACKAGE) or [] if r.startswith("apache-airflow") and "extra" not in r
                       and r.split(">")[0].strip() == "apache-airflow")
    assert airflow_req.replace(" ", "") == f"apache-airflow>={MIN_AIRFLOW_RELEASE}"
    assert f"Apache Airflow {MIN_AIRFLOW_RELEASE} or later" in get_provider_info()["description"]
    root = Path(__file__).resolve().parent.parent
    for page in ("README.md", "docs/installation.md"):
        assert f"apache-airflow>={MIN_AIRFLOW_RELEASE}" in (root / page).read_text(), page


def test_each_operator_family_and_the_sensor_has_a_how_to_guide_in_the_docs() -> None:
    """The provider info names the docs' how-to pages as Apache's providers do, and they exist."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (integration,) = get_provider_info()["integrations"]
    guides = integration["how-to-guide"]
    assert all(guide.startswith("/docs/") and (root / guide.lstrip("/")).is_file() for guide in guides), guides
    modules = [m for kind in ("operators", "sensors") for entry in get_provider_info()[kind]
               for m in entry["python-modules"]]
    pages = {guide: (root / guide.lstrip("/")).read_text() for guide in guides}
    for module in modules:  # each module's classes are the subject of a how-to page
        classes = [name for name, obj in vars(importlib.import_module(module)).items()
                   if inspect.isclass(obj) and obj.__module__ == module and not name.startswith("_")]
        assert any(all(f"operators.{c}" in text or f"sensors.{c}" in text for c in classes)
                   for text in pages.values()), module


def _hook_meta() -> dict:
    """The namelookup entry of the UI's connection-form metadata, computed in a fresh interpreter."""
    script = (
        "import json\n"
        "from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService\n"
        "meta = [m.model_dump() for m in HookMetaService.hook_meta_data() if m.connection_type == 'namelookup']\n"
        "print('HOOK-META ' + json.dumps(meta, default=str))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, f"the UI's connection-form metadata failed ({out.returncode}):\n{out.stderr[-4000:]}"
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("HOOK-META "))
    (meta,) = json.loads(line.removeprefix("HOOK-META "))
    return meta


@pytest.mark.skipif(not AIRFLOW_V_3_0_PLUS, reason="Airflow 2's UI is Flask AppBuilder's: the test below")
@pytest.mark.skipif(AIRFLOW_V_3_0_PLUS and not AIRFLOW_V_3_1_PLUS,
                    reason="Airflow 3.0 builds any hook's form fields only with Flask AppBuilder installed "
                           "(apache-airflow-providers-fab), which the af3.0 lock leaves out")
def test_the_ui_gets_the_connection_form() -> None:
    meta = _hook_meta()
    assert meta["hook_name"] == "Name Lookup"
    assert meta["hook_class_name"] == "airflow_provider_namelookup.hooks.namelookup.NameLookupHook"
    standard = meta["standard_fields"]
    assert standard["host"]["title"] == "Base URL" and standard["password"]["title"] == "API Token"
    assert standard["host"]["placeholder"] == "https://gender-api.com"
    assert all(standard[name]["hidden"] for name in ("login", "port", "url_schema"))
    extras = meta["extra_fields"]
    assert set(extras) == EXTRA_NAMES
    for field in EXTRA_FIELDS:
        schema = extras[field.name]["schema"]
        assert schema["title"] == field.label
        assert extras[field.name]["description"] == field.description
        # Airflow 3.1 builds the schema from wtforms fields, which have no float field.
        assert field.kind in schema["type"] or (field.kind == "number" and "string" in schema["type"])
    assert extras["max_concurrency"]["schema"]["title"] == "Max requests in flight"


@pytest.mark.floor
@pytest.mark.skipif(AIRFLOW_V_3_0_PLUS, reason="Airflow 3's UI reads the form through its API: the test above")
def test_the_flask_appbuilder_ui_gets_the_connection_form() -> None:
    """Airflow 2.11's webserver builds the form from what ProvidersManager collected of the hook."""
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    widgets = {name.removeprefix("extra__namelookup__"): info for name, info in manager.connection_form_widgets.items()
               if name.startswith("extra__namelookup__")}
    assert set(widgets) == EXTRA_NAMES
    assert {info.hook_class_name for info in widgets.values()} == {"NameLookupHook"}
    for field in EXTRA_FIELDS:
        assert widgets[field.name].field.args[0] == field.label
    behaviour = manager.field_behaviours["namelookup"]
    assert behaviour["relabeling"] == {"host": "Base URL", "password": "API Token"}
    assert behaviour["placeholders"]["host"] == "https://gender-api.com"
    assert {"login", "port"} <= set(behaviour["hidden_fields"])


def test_every_extra_field_has_a_one_line_description() -> None:
    for field in EXTRA_FIELDS:
        assert field.description and "\n" not in field.description and len(field.description) <= 120


def test_the_hook_offers_the_same_form_where_airflow_asks_it() -> None:
    """Airflow 3.1 calls these (its api-server mocks wtforms when missing, as the UI test above
    proves on 3.1); 3.2 and later read the provider info and skip them."""
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    assert {"get_connection_form_widgets", "get_ui_field_behaviour"} <= set(NameLookupHook.__dict__)
    behaviour = NameLookupHook.get_ui_field_behaviour()
    info = get_provider_info()["connection-types"][0]["ui-field-behaviour"]
    assert behaviour == {"hidden_fields": info["hidden-fields"], "relabeling": info["relabeling"],
                         "placeholders": info["placeholders"]}


def test_providers_manager_discovers_hook_operators_sensor_and_trigger() -> None:
    from airflow.providers.common.compat.sdk import BaseOperator
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    data = manager.providers[PACKAGE].data
    classes = set()
    for kind in ("operators", "sensors"):
        for module_name in data[kind][0]["python-modules"]:
            module = importlib.import_module(module_name)
            classes |= {name for name, obj in vars(module).items() if inspect.isclass(obj)
                        and issubclass(obj, BaseOperator) and obj.__module__ == module_name
                        and not name.startswith("_")}
    assert {"GenderLookupOperator", "CountryOfOriginOperator", "SqlGenderLookupOperator",
            "SqlCountryOfOriginOperator", "NameLookupCreditsSensor", "GenderEvaluationOperator",
            "SqlGenderEvaluationOperator"} <= classes
    triggers = {t.trigger_class_name for t in manager.trigger if t.package_name == PACKAGE}
    assert triggers == {"airflow_provider_namelookup.triggers.credits"}
    if AIRFLOW_V_3_2_PLUS:  # read from the provider info, without importing the hook
        assert manager.field_behaviours["namelookup"]["relabeling"]["password"] == "API Token"
        widgets = {k.rsplit("__", 1)[-1] for k in manager.connection_form_widgets
                   if k.startswith("extra__namelookup__")}
        assert widgets == EXTRA_NAMES


@pytest.mark.parametrize(("command", "expected"), [
    (["providers", "list"], PACKAGE),
    (["providers", "hooks"], "airflow_provider_namelookup.hooks.namelookup.NameLookupHook"),
    (["providers", "triggers"], "airflow_provider_namelookup.triggers.credits"),
])
def test_airflow_cli_lists_the_provider(command: list[str], expected: str) -> None:
    out = subprocess.run([sys.executable, "-m", "airflow", *command], capture_output=True, text=True,
                         check=True, timeout=120)
    assert expected in out.stdout
