"""Apache Airflow provider for the Name Lookup Service API v2.

Gender, country of origin and ethnicity for names, as hooks, operators and a
credit sensor, plus a faithful local emulator of the service.

Example::

    >>> from airflow_provider_namelookup import get_provider_info
    >>> get_provider_info()["package-name"]
    'airflow-provider-namelookup'
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("airflow-provider-namelookup")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

MIN_AIRFLOW_RELEASE = "2.11"
"""The oldest Airflow minor release supported (pyproject.toml's floor, the README and the
installation page say the same)."""


def get_provider_info() -> dict[str, Any]:
    """The provider's registration for Airflow's ProvidersManager (entry point target).

    The connection form is declared here for Airflow 3.2 and later; Airflow 2.11 to 3.1 ask the
    hook for the same form (see :mod:`airflow_provider_namelookup.connection_form`).
    """
    from airflow_provider_namelookup.connection_form import CONN_TYPE, conn_fields, ui_field_behaviour

    integration = "Name Lookup"
    return {
        "package-name": "airflow-provider-namelookup",
        "name": "Name Lookup",
        "description": "Gender, country of origin and ethnicity of names with the Name Lookup Service API v2. "
                       f"Requires Apache Airflow {MIN_AIRFLOW_RELEASE} or later.",
        "versions": [__version__],
        "connection-types": [
            {
                "connection-type": CONN_TYPE,
                "hook-class-name": "airflow_provider_namelookup.hooks.namelookup.NameLookupHook",
                "hook-name": "Name Lookup",
                "ui-field-behaviour": ui_field_behaviour(),
                "conn-fields": conn_fields(),
            }
        ],
        "hooks": [{"integration-name": integration,
                   "python-modules": ["airflow_provider_namelookup.hooks.namelookup"]}],
        "operators": [{"integration-name": integration,
                       "python-modules": ["airflow_provider_namelookup.operators.xcom",
                                          "airflow_provider_namelookup.operators.warehouse",
                                          "airflow_provider_namelookup.operators.evaluation",
                                          "airflow_provider_namelookup.operators.erasure"]}],
        "sensors": [{"integration-name": integration,
                     "python-modules": ["airflow_provider_namelookup.sensors.credits"]}],
        "triggers": [{"integration-name": integration,
                      "python-modules": ["airflow_provider_namelookup.triggers.credits"]}],
        "integrations": [
            {
                "integration-name": integration,
                "external-doc-url": "https://gender-api.com/en/api-docs/v2",
                # One how-to page of the docs site per operator family and the sensor, as Apache's providers
                # name theirs (paths from the repository's root; make docs builds them).
                "how-to-guide": [
                    "/docs/operators/warehouse.md",
                    "/docs/operators/xcom.md",
                    "/docs/operators/evaluation.md",
                    "/docs/sensors/credits.md",
                    "/docs/personal-data.md",
                ],
                "tags": ["service"],
            }
        ],
    }
