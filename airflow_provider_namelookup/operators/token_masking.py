"""The service token is a known secret before an operator's templates render, in every case it is written in.

Airflow's secrets masker learns a connection's password when a task fetches the connection,
which the lookup operators do in ``execute``: after the templates were rendered and stored
for the *Rendered Template* tab. A token typed (or sent through a run's conf) into a
templated field would be shown there as written. :class:`MasksTokenBeforeRendering` fetches
the service connection first, so the stored rendering shows ``***`` where the token was; and
since the masker matches a secret as written, while a long token is the same token in any
case to the service (:mod:`~airflow_provider_namelookup.token_guard`), each case variant of it
found in the rendered fields (``TOKEN``, ``token``) is handed to the masker too, before the
rendering is stored.

Example::

    class MyOperator(MasksTokenBeforeRendering, BaseOperator):
        template_fields = ("queries",)

        def __init__(self, *, queries, namelookup_conn_id="namelookup_default", **kwargs):
            super().__init__(**kwargs)
            self.queries, self.namelookup_conn_id = queries, namelookup_conn_id
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from airflow_provider_namelookup.token_guard import SECRET_MIN_LENGTH

_NESTING_SEARCHED = 32
"""Levels of nested values searched for a token's case variants."""


def service_token(conn_id: str | None) -> frozenset[str]:
    """The token of the service connection ``conn_id`` (fetching it makes Airflow's secrets masker
    know it, and its extras); empty when there is none or it cannot be read (left for ``execute``
    to report)."""
    if not conn_id:
        return frozenset()
    from airflow.providers.common.compat.sdk import BaseHook

    with contextlib.suppress(Exception):
        password = BaseHook.get_connection(conn_id).password
        return frozenset({password}) if password else frozenset()
    return frozenset()


def register_token(conn_id: str | None) -> None:
    """Fetch the connection ``conn_id`` so that Airflow's secrets masker knows its password (and
    its extras); a connection that cannot be read is left for ``execute`` to report."""
    service_token(conn_id)


def case_variants(value: Any, tokens: Collection[str]) -> set[str]:
    """The spellings of each long token (:data:`~airflow_provider_namelookup.token_guard.SECRET_MIN_LENGTH`
    characters or more) in another case found in ``value``'s strings (inside lists and dicts too).

    >>> sorted(case_variants({"where": "name = 'ABCDEFGHIJKLMNOPQ1' OR x IN ('abcdefghijklmnopq1')"},
    ...                      {"AbcdefghijklmnoPQ1"}))
    ['ABCDEFGHIJKLMNOPQ1', 'abcdefghijklmnopq1']
    """
    patterns = [re.compile(re.escape(token), re.IGNORECASE) for token in tokens if len(token) >= SECRET_MIN_LENGTH]
    if not patterns:
        return set()
    return {found.group(0) for text in _strings(value, 0) for pattern in patterns
            for found in pattern.finditer(text)} - set(tokens)


def _strings(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < _NESTING_SEARCHED and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif depth < _NESTING_SEARCHED and isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)


class MasksTokenBeforeRendering:
    """Mixed in before the operator's base class: the service connection (``namelookup_conn_id``)
    is fetched before the templates render, and the token's case variants in what they rendered
    are masked before the rendering is stored."""

    namelookup_conn_id: str
    template_fields: Any

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        tokens = service_token(getattr(self, "namelookup_conn_id", None))
        super().render_template_fields(context, jinja_env)  # type: ignore[misc]
        rendered = [getattr(self, field, None) for field in self.template_fields]
        variants = case_variants(rendered, tokens)
        if variants:
            from airflow_provider_namelookup.secret_masking import mask_secret

            for variant in variants:
                mask_secret(variant)
