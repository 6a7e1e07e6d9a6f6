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

DEFAULT_BASE_URL = "https://gender-api.com"
"""The public service; a connection's host overrides it (the emulator, a proxy)."""


def get_provider_info() -> dict[str, Any]:
    """The provider's registration for Airflow's ProvidersManager (entry point target)."""
    return {
        "package-name": "airflow-provider-namelookup",
        "name": "Name Lookup",
        "description": "Gender, country of origin and ethnicity of names with the Name Lookup Service API v2.",
        "versions": [__version__],
        "connection-types": [
            {
                "connection-type": "namelookup",
                "hook-class-name": "airflow_provider_namelookup.hooks.namelookup.NameLookupHook",
                "hook-name": "Name Lookup",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "port", "login", "extra"],
                    "relabeling": {"host": "Base URL", "password": "API Token"},
                    "placeholders": {
                        "host": DEFAULT_BASE_URL,
                        "password": "Bearer token from sign-up or the account dashboard",
                    },
                },
                "conn-fields": {
                    "timeout": {
                        "label": "Read timeout (seconds)",
                        "schema": {"type": ["number", "null"], "minimum": 0.1, "default": 30},
                    },
                    "connect_timeout": {
                        "label": "Connect timeout (seconds)",
                        "schema": {"type": ["number", "null"], "minimum": 0.1, "default": 5},
                    },
                    "batch_size": {
                        "label": "Queries per request",
                        "schema": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000, "default": 100},
                    },
                    "max_retries": {
                        "label": "Retries on network errors, 5xx and 429",
                        "schema": {"type": ["integer", "null"], "minimum": 0, "maximum": 20, "default": 5},
                    },
                },
            }
        ],
        "hooks": [
            {
                "integration-name": "Name Lookup",
                "python-modules": ["airflow_provider_namelookup.hooks.namelookup"],
            }
        ],
        "integrations": [
            {
                "integration-name": "Name Lookup",
                "external-doc-url": "https://gender-api.com/en/api-docs/v2",
                "tags": ["service"],
            }
        ],
    }
