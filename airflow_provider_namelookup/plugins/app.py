"""The credits view's FastAPI app, mounted by the api-server at ``/namelookup``.

Routes (all behind Airflow's own authentication: the ``Authorization: Bearer <JWT>`` header
of scripts, or the ``_token`` cookie of a browser logged in to the Airflow UI; without one,
401; with an invalid one, 403; and each behind the auth manager's permission on the view,
``is_authorized_custom_view(method="GET", resource_name="Name Lookup credits")``: 403 without
it; the simple auth manager gives it to every role):

* ``GET /namelookup/``: the page (HTML; its script and styles come from ``static/``);
* ``GET /namelookup/api/usage?days=N`` (1 ≤ N ≤ 366, default 30): the numbers, as JSON
  (:func:`airflow_provider_namelookup.usage.report.usage_report`), for scripts too;
* ``GET /namelookup/static/<file>``: the page's script, styles, icon and Chart.js.

What an answer holds is the auth manager's decision too: DAGs the user may read
(``get_authorized_dag_ids``) and connections the user may read (``is_authorized_connection``):
an account's figures (remaining credits, last month, burn rate, forecast, and the remaining
credits a try read) only for those. It counts only the usage records a try of the provider's
operators wrote (:mod:`airflow_provider_namelookup.usage.trust`), and lists the ``namelookup``
connections of the connection table, and those such records name that are ``namelookup``
connections (from the environment or a secrets backend). No route writes anything; no answer
holds a token.

Example::

    curl -H "Authorization: Bearer $JWT" "$AIRFLOW_URL/namelookup/api/usage?days=7"
"""

# No ``from __future__ import annotations`` here: FastAPI reads the routes' annotations at run
# time, and GetUserDep is imported inside create_app (the module must stay cheap to import).
import html
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from airflow_provider_namelookup.connection_form import CONN_TYPE
from airflow_provider_namelookup.plugins.accounts import NO_SUCH_CONNECTION, AccountStatistics
from airflow_provider_namelookup.plugins.credits_view import RESOURCE_NAME, ui_base_path
from airflow_provider_namelookup.usage import store
from airflow_provider_namelookup.usage.record import UsageRecord
from airflow_provider_namelookup.usage.report import FORECAST_DAYS, usage_report
from airflow_provider_namelookup.usage.trust import trusted

STATIC = Path(__file__).with_name("static")
STATIC_FILES = {
    "credits.js": "text/javascript",
    "credits.css": "text/css",
    "icon.svg": "image/svg+xml",
    "chart.umd.min.js": "text/javascript",
}
"""The files ``/static/`` serves (by name; nothing else under the package is reachable)."""
MAX_DAYS = 366


def task_instance_url(record: UsageRecord, base_path: str = "") -> str:
    """The Airflow UI page of the record's task instance try.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 11, 23, tzinfo=timezone.utc)
    >>> r = UsageRecord(dag_id="d", task_id="t", run_id="manual__2026-11-23T08:00:00+00:00", map_index=2,
    ...                 try_number=3, ti_id="u", conn_id="c", lookup="gender", state="success", credits_used=0,
    ...                 requests=0, retries=0, cache_hits=None, lookups=None, remaining_credits=None, start=t, end=t)
    >>> task_instance_url(r, "/airflow")
    '/airflow/dags/d/runs/manual__2026-11-23T08%3A00%3A00%2B00%3A00/tasks/t/mapped/2?try_number=3'
    """
    url = (f"{base_path}/dags/{quote(record.dag_id, safe='')}/runs/{quote(record.run_id, safe='')}"
           f"/tasks/{quote(record.task_id, safe='')}")
    if record.map_index >= 0:
        url += f"/mapped/{record.map_index}"
    return f"{url}?try_number={record.try_number}"


def _namelookup_conn_ids(session: Any) -> list[str]:
    from airflow.models.connection import Connection
    from sqlalchemy import select

    return list(session.scalars(select(Connection.conn_id).where(Connection.conn_type == CONN_TYPE)
                                .order_by(Connection.conn_id)))


def _readable_connections(conn_ids: Iterable[str], user: Any, auth_manager: Any) -> list[str]:
    from airflow.api_fastapi.auth.managers.models.resource_details import ConnectionDetails

    return [c for c in conn_ids
            if auth_manager.is_authorized_connection(method="GET", details=ConnectionDetails(conn_id=c), user=user)]


def build_usage(user: Any, days: int, statistics: AccountStatistics, now: datetime | None = None) -> dict[str, Any]:
    """The JSON of ``GET /api/usage`` for ``user``."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.utils.session import create_session

    now = now or datetime.now(UTC)
    auth_manager = get_auth_manager()
    readable_dags = auth_manager.get_authorized_dag_ids(user=user, method="GET")
    with create_session() as session:
        records = trusted(session, store.read(session, since=now - timedelta(days=max(days, FORECAST_DAYS))), now=now)
        listed = _namelookup_conn_ids(session)
    named = sorted({r.conn_id for r in records} - set(listed))  # kept only if they are namelookup connections
    readable = set(_readable_connections([*listed, *named], user, auth_manager))
    states = [state for state in statistics.get_many([c for c in [*listed, *named] if c in readable])
              if state.conn_id in listed or state.error != NO_SUCH_CONNECTION]
    base_path = ui_base_path()
    return usage_report(records, sorted(states, key=lambda s: s.conn_id), days=days, now=now,
                        readable_dags=readable_dags, readable_connections=readable,
                        link=lambda r: task_instance_url(r, base_path))


def _may_open_the_view(user: Any) -> None:
    """Refuse (403) a user the auth manager does not let open the view."""
    from airflow.api_fastapi.app import get_auth_manager
    from fastapi import HTTPException

    if not get_auth_manager().is_authorized_custom_view(method="GET", resource_name=RESOURCE_NAME, user=user):
        raise HTTPException(status_code=403, detail=f"you may not open the {RESOURCE_NAME} view")


def create_app() -> Any:
    """The FastAPI app of the view (built on the api-server's first request to ``/namelookup``)."""
    from airflow.api_fastapi.core_api.security import GetUserDep
    from fastapi import FastAPI, HTTPException, Query, Request
    from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

    statistics = AccountStatistics()
    app = FastAPI(title="Name Lookup credits", docs_url=None, redoc_url=None, openapi_url=None)
    no_store = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request, user: GetUserDep) -> HTMLResponse:
        _may_open_the_view(user)
        base = html.escape(request.scope.get("root_path", "").rstrip("/") + "/", quote=True)
        page = (STATIC / "index.html").read_text(encoding="utf-8").replace("__BASE__", base)
        return HTMLResponse(page, headers=no_store)

    @app.get("/api/usage")
    def usage(user: GetUserDep, days: int = Query(30, ge=1, le=MAX_DAYS, description="the period, in days")
              ) -> JSONResponse:
        _may_open_the_view(user)
        return JSONResponse(build_usage(user, days, statistics), headers=no_store)

    @app.get("/static/{name}")
    def static(name: str, user: GetUserDep) -> FileResponse:
        _may_open_the_view(user)
        if name not in STATIC_FILES:
            raise HTTPException(status_code=404, detail=f"no static file {name!r}")
        folder = STATIC / "vendor" if name == "chart.umd.min.js" else STATIC
        return FileResponse(folder / name, media_type=STATIC_FILES[name],
                            headers={"Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff"})

    return app
