"""Who may open the credits view and which account figures each user gets (issue 25, item 3), on a
real api-server with the simple auth manager's roles: viewer, user, op, admin, a viewer limited to
one DAG, and a viewer the auth manager does not let open the view."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.plugins.conftest import MINE, THEIRS, UI_CONN, ApiServer

pytestmark = pytest.mark.usefixtures("airflow_db")

ROUTES = ["/namelookup/", "/namelookup/api/usage", "/namelookup/static/credits.js", "/namelookup/static/credits.css",
          "/namelookup/static/icon.svg", "/namelookup/static/chart.umd.min.js"]
MAY_READ_CONNECTIONS = {"admin": True, "op": True, "user": False, "viewer": False, "limited": False}
"""The simple auth manager's rule: reading connections takes the op role."""


def _figures(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every account figure anywhere in an answer, with where it sits (a null one is no figure)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("remaining_credits", "usage_last_month", "is_limit_reached", "days_left") and item is not None:
                yield f"{path}.{key}", item
            yield from _figures(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _figures(item, f"{path}[{i}]")


@pytest.mark.compat
@pytest.mark.parametrize("path", ROUTES)
def test_every_route_asks_the_auth_manager_for_the_view(api_server: ApiServer, spent: Any, path: str) -> None:
    """(``spent`` first: the view keeps each account's statistic for a minute, which the other tests read.)"""
    refused = api_server.get(path, user="outsider")
    assert refused.status_code == 403 and refused.json()["detail"] == "you may not open the Name Lookup credits view"
    for user in MAY_READ_CONNECTIONS:
        assert api_server.get(path, user=user).status_code == 200, user


@pytest.mark.compat
@pytest.mark.parametrize(("user", "may_read"), MAY_READ_CONNECTIONS.items())
def test_only_users_who_may_read_a_connection_get_its_account_figures(api_server: ApiServer, spent: dict[str, Any],
                                                                      user: str, may_read: bool) -> None:
    """Before, every try of ``tries`` carried the ``remaining_credits`` it read, for a viewer too."""
    usage = api_server.get("/namelookup/api/usage?days=30", user=user).json()
    ours = [t for t in usage["tries"] if t["conn_id"] == UI_CONN]
    assert ours, "the view's tries are shown to every user who may read their DAG"
    if may_read:
        assert {c["conn_id"] for c in usage["connections"]} >= {UI_CONN}
        assert all(isinstance(t["remaining_credits"], int) for t in ours)
        assert usage["forecast"]["remaining_credits"] is not None
    else:
        assert usage["connections"] == []
        assert list(_figures(usage)) == []
        assert all("remaining_credits" not in t for t in usage["tries"])
        assert usage["forecast"] == {"burn_per_day": 0.0, "days_left": None, "remaining_credits": None,
                                     "window_days": 0.0}
    dags = {t["dag_id"] for part in ("daily", "tasks", "tries") for t in usage[part]}
    assert dags >= ({MINE} if user == "limited" else {MINE, THEIRS})
    assert THEIRS not in dags or user != "limited"
    assert "ti_id" not in str(usage)
