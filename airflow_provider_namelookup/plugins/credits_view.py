"""The "Name Lookup credits" plugin: a FastAPI app at ``/namelookup`` and its page in Airflow's menu.

Registered twice, as apache-airflow-providers-edge3 does: in the provider info (``plugins``)
and as an ``airflow.plugins`` entry point. Airflow 3.1 and later show the page in the UI
(an external view: under *Browse* on 3.1 and 3.2, its own button in the sidebar on 3.3,
which has ``nav_top_level``); the page and its API are served by the plugin's app (see
:mod:`.app`). Every Airflow process loads plugins (a task's too), so this module stays
cheap: the app is built on its first request.

On Airflow 2.11 and 3.0 the plugin registers nothing (their UIs have no external views, and
2.11's serves no FastAPI app) and says so once, in the log of the process that loads it: the
webserver, scheduler and tasks run as without it.

Example::

    >>> from airflow_provider_namelookup.plugins.credits_view import NameLookupCreditsPlugin
    >>> NameLookupCreditsPlugin.fastapi_apps[0]["url_prefix"]
    '/namelookup'
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from airflow.providers.common.compat.sdk import AirflowPlugin

from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_1_PLUS, AIRFLOW_V_3_3_PLUS

log = logging.getLogger(__name__)

URL_PREFIX = "/namelookup"
VIEW_NAME = "Name Lookup credits"
RESOURCE_NAME = "Name Lookup credits"
"""The view's name for the auth manager (``is_authorized_custom_view``); kept when the label changes."""
SIDEBAR_LABEL = "Credits"
"""The view's label as a sidebar button of its own (3.3): the UI writes it in one line under the
icon, in a 56-pixel box, and cuts longer ones ("Name Lo…"). A menu entry (3.1, 3.2) is ``VIEW_NAME``."""


class LazyApp:
    """An ASGI app that builds the real one (``factory()``) on its first request.

    :param factory: returns the ASGI app (here :func:`.app.create_app`).
    """

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self._app: Any = None
        self._lock = threading.Lock()

    @property
    def app(self) -> Any:
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = self.factory()
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.factory.__module__}.{self.factory.__qualname__})"


def _create_app() -> Any:
    from airflow_provider_namelookup.plugins.app import create_app

    return create_app()


def ui_base_path() -> str:
    """The path Airflow's UI is served under (``[api] base_url``), without a trailing slash."""
    from urllib.parse import urlparse

    from airflow.configuration import conf

    base_url = conf.get("api", "base_url", fallback="/") or "/"
    path = urlparse(base_url).path if "://" in base_url else base_url
    return path.rstrip("/")


def _external_view() -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": SIDEBAR_LABEL if AIRFLOW_V_3_3_PLUS else VIEW_NAME,
        "href": f"{ui_base_path()}{URL_PREFIX}/",
        "url_route": "namelookup-credits",
        "destination": "nav",
        "icon": f"{ui_base_path()}{URL_PREFIX}/static/icon.svg",
    }
    if AIRFLOW_V_3_3_PLUS:
        view["nav_top_level"] = True  # its own button in the sidebar (the UI ignores it for a categorised view)
    else:
        view["category"] = "browse"
    return view


class NameLookupCreditsPlugin(AirflowPlugin):
    """The credits view (see the module's docstring)."""

    name = "namelookup"
    # AirflowPlugin declares these as (mutable) attributes that every plugin sets on its class.
    fastapi_apps = ([{"app": LazyApp(_create_app), "url_prefix": URL_PREFIX, "name": VIEW_NAME}]
                    if AIRFLOW_V_3_1_PLUS else [])
    external_views = [_external_view()] if AIRFLOW_V_3_1_PLUS else []

    @classmethod
    def on_load(cls, *args: Any, **kwargs: Any) -> None:
        if not AIRFLOW_V_3_1_PLUS:
            from airflow import __version__

            log.info("The %s view needs Apache Airflow 3.1 or later (this is %s): it is not registered.",
                     VIEW_NAME, __version__)
