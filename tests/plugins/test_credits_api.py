"""The credits view's API on a real api-server: who may call it, what each user sees, and the
numbers against the usage records and the emulator's counters (the smoke subset on every release)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.conftest import DOWN_CONN, MINE, THEIRS, UI_CONN, ApiServer, records

pytestmark = pytest.mark.usefixtures("airflow_db")

ROUTES = ["/namelookup/", "/namelookup/api/usage", "/namelookup/api/usage?days=7", "/namelookup/static/credits.js",
          "/namelookup/static/credits.css", "/namelookup/static/icon.svg", "/namelookup/static/chart.umd.min.js"]


def test_the_app_has_no_route_the_tests_do_not_check() -> None:
    from airflow_provider_namelookup.plugins.app import create_app

    paths = {getattr(route, "path", None) for route in create_app().routes}
    assert paths == {"/", "/api/usage", "/static/{name}"}  # no /docs, no /openapi.json


@pytest.mark.compat
@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_an_anonymous_or_forged_caller(api_server: ApiServer, path: str) -> None:
    assert api_server.get(path).status_code == 401
    forged = api_server.get(path, headers={"Authorization": "Bearer not-a-jwt"})
    assert forged.status_code in (401, 403)
    cookie = api_server.get(path, cookies={"_token": "not-a-jwt"})
    assert cookie.status_code in (401, 403)


@pytest.mark.compat
def test_a_logged_in_user_gets_the_page_its_files_and_no_others(api_server: ApiServer) -> None:
    page = api_server.get("/namelookup/", user="viewer")
    assert page.status_code == 200 and "<title>Name Lookup credits</title>" in page.text
    assert '<base href="/namelookup/">' in page.text and page.headers["cache-control"] == "no-store"
    assert api_server.get("/namelookup/static/chart.umd.min.js", user="viewer").text.startswith("/*!\n * Chart.js")
    assert api_server.get("/namelookup/static/../app.py", user="viewer").status_code == 404
    assert api_server.get("/namelookup/static/index.html", user="viewer").status_code == 404
    for bad in ("0", "367", "many"):
        refused = api_server.get(f"/namelookup/api/usage?days={bad}", user="viewer")
        assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "days"]


@pytest.mark.compat
def test_the_plugin_is_registered_with_its_view_and_without_import_errors(api_server: ApiServer) -> None:
    from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_3_PLUS

    plugins = {p["name"]: p for p in api_server.get("/api/v2/plugins", user="admin").json()["plugins"]}
    plugin = plugins["namelookup"]
    assert [(a["url_prefix"], a["name"]) for a in plugin["fastapi_apps"]] == [("/namelookup", "Name Lookup credits")]
    [view] = plugin["external_views"]
    assert (view["href"], view["url_route"], view["destination"]) == ("/namelookup/", "namelookup-credits", "nav")
    assert view.get("nav_top_level") is (True if AIRFLOW_V_3_3_PLUS else None) or not AIRFLOW_V_3_3_PLUS
    errors = api_server.get("/api/v2/plugins/importErrors", user="admin").json()["import_errors"]
    assert not [e for e in errors if "namelookup" in e["source"] + e["error"]]


@pytest.mark.compat
def test_the_numbers_add_up_to_the_records_and_the_emulator(api_server: ApiServer, spent: dict[str, Any],
                                                             ui_account: str) -> None:
    usage = api_server.get("/namelookup/api/usage?days=30", user="admin").json()
    assert set(usage) >= {"connections", "daily", "tasks", "forecast"}
    connections = {c["conn_id"]: c for c in usage["connections"]}
    ui = connections[UI_CONN]
    assert set(ui) >= {"conn_id", "remaining_credits", "is_limit_reached", "usage_last_month", "error"}
    assert (ui["remaining_credits"], ui["is_limit_reached"], ui["error"]) == (spent["remaining"], False, None)
    assert ui["usage_last_month"]["credits_used"] == 0
    assert connections[DOWN_CONN]["remaining_credits"] is None
    assert connections[DOWN_CONN]["error"].startswith("unreachable: ")

    ours = [r for dag in (MINE, THEIRS) for r in records(dag)]
    assert sum(r.credits_used for r in ours) == 5000 - spent["remaining"] == (3 + 4) + (3 + 4)
    for dag in (MINE, THEIRS):
        daily = [d for d in usage["daily"] if d["dag_id"] == dag]
        assert sum(d["credits_used"] for d in daily) == sum(r.credits_used for r in records(dag))
        tasks = {t["task_id"]: t for t in usage["tasks"] if t["dag_id"] == dag}
        for record in records(dag):
            assert tasks[record.task_id]["credits_used"] >= record.credits_used
        assert sum(t["credits_used"] for t in tasks.values()) == sum(r.credits_used for r in records(dag))
        assert sum(t["requests"] for t in tasks.values()) == sum(r.requests for r in records(dag))
    burn = ui["burn_per_day"]
    assert burn >= 14 and ui["days_left"] == round(spent["remaining"] / burn, 1)
    tries = [t for t in usage["tries"] if t["dag_id"] == MINE and t["task_id"] == "genders"]
    assert tries and tries[0]["url"].startswith(f"/dags/{MINE}/runs/") and tries[0]["url"].endswith(
        "/tasks/genders?try_number=1")
    assert ui_account not in str(usage)


@pytest.mark.compat
def test_each_user_sees_only_the_dags_and_connections_they_may_read(api_server: ApiServer, spent: Any,
                                                                     ui_account: str) -> None:
    limited = api_server.get("/namelookup/api/usage", user="limited").json()
    seen = {d["dag_id"] for part in ("daily", "tasks", "tries") for d in limited[part]}
    assert seen == {MINE}
    assert limited["connections"] == [] and limited["forecast"]["remaining_credits"] is None  # no connection access
    viewer = api_server.get("/namelookup/api/usage", user="viewer").json()
    assert {MINE, THEIRS} <= {t["dag_id"] for t in viewer["tasks"]} and viewer["connections"] == []
    admin = api_server.get("/namelookup/api/usage", user="admin").json()
    assert {UI_CONN, DOWN_CONN} <= {c["conn_id"] for c in admin["connections"]}
    for answer in (limited, viewer, admin):
        assert ui_account not in str(answer)


@pytest.mark.compat
def test_one_statistic_call_per_connection_a_minute(api_server: ApiServer, spent: Any, ui_emulator: Any) -> None:
    api_server.get("/namelookup/api/usage", user="admin")
    before = ui_emulator.stats()["requests"]
    for _ in range(3):
        assert api_server.get("/namelookup/api/usage", user="admin").status_code == 200
    assert ui_emulator.stats()["requests"] == before
