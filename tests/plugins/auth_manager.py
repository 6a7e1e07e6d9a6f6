"""An auth manager for the credits view's tests: Airflow's simple auth manager, except that the
users named in ``NAMELOOKUP_TEST_LIMITED_USERS`` may read only the DAGs named in
``NAMELOOKUP_TEST_READABLE_DAGS`` (comma-separated), as a deployment's auth manager may decide
per DAG, and those named in ``NAMELOOKUP_TEST_NO_VIEW_USERS`` may not open a plugin's view
(``is_authorized_custom_view``), as a deployment may decide per view. Configured by
``[core] auth_manager`` in the api-server the tests start."""

from __future__ import annotations

import os
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager


def _names(variable: str) -> set[str]:
    return {n for n in os.environ.get(variable, "").split(",") if n}


class DagRestrictedAuthManager(SimpleAuthManager):
    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        limited = getattr(user, "username", None) in _names("NAMELOOKUP_TEST_LIMITED_USERS")
        if limited and details is not None and details.id not in _names("NAMELOOKUP_TEST_READABLE_DAGS"):
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)

    def is_authorized_custom_view(self, *, method: Any, resource_name: str, user: Any) -> bool:
        outsider = getattr(user, "username", None) in _names("NAMELOOKUP_TEST_NO_VIEW_USERS")
        if outsider and resource_name == "Name Lookup credits":
            return False
        return bool(super().is_authorized_custom_view(method=method, resource_name=resource_name, user=user))
