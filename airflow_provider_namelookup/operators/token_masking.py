"""The service token is a known secret before an operator's templates render.

Airflow's secrets masker learns a connection's password when a task fetches the connection,
which the lookup operators do in ``execute``: after the templates were rendered and stored
for the *Rendered Template* tab. A token typed (or sent through a run's conf) into a
templated field would be shown there as written. :class:`MasksTokenBeforeRendering` fetches
the service connection first, so the stored rendering shows ``***`` where the token was.

Example::

    class MyOperator(MasksTokenBeforeRendering, BaseOperator):
        template_fields = ("queries",)

        def __init__(self, *, queries, namelookup_conn_id="namelookup_default", **kwargs):
            super().__init__(**kwargs)
            self.queries, self.namelookup_conn_id = queries, namelookup_conn_id
"""

from __future__ import annotations

import contextlib
from typing import Any


def register_token(conn_id: str | None) -> None:
    """Fetch the connection ``conn_id`` so that Airflow's secrets masker knows its password (and
    its extras); a connection that cannot be read is left for ``execute`` to report."""
    if not conn_id:
        return
    from airflow.sdk import BaseHook

    with contextlib.suppress(Exception):
        BaseHook.get_connection(conn_id)


class MasksTokenBeforeRendering:
    """Mixed in before the operator's base class: the service connection (``namelookup_conn_id``)
    is fetched before the templates render."""

    namelookup_conn_id: str

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        register_token(getattr(self, "namelookup_conn_id", None))
        super().render_template_fields(context, jinja_env)  # type: ignore[misc]
