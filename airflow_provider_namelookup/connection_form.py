"""The ``namelookup`` connection form, defined once for every Airflow release.

Airflow 3.2 and later read the form from the provider info (``conn-fields`` and
``ui-field-behaviour``, see :func:`conn_fields` and :func:`ui_field_behaviour`) without
importing the hook. Airflow 2.11 to 3.1 ask the hook instead (``get_connection_form_widgets``
and ``get_ui_field_behaviour``), which build wtforms fields from the same definitions
(:func:`form_widgets`, :func:`hook_field_behaviour`); wtforms and Flask-AppBuilder are
imported only then, so a bare Airflow without them never needs them.

Example::

    >>> from airflow_provider_namelookup.connection_form import EXTRA_FIELDS, conn_fields
    >>> [f.name for f in EXTRA_FIELDS]
    ['timeout', 'connect_timeout', 'batch_size', 'max_retries', 'max_concurrency']
    >>> conn_fields()["max_concurrency"]["label"]
    'Max requests in flight'
"""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.contract import CLIENT_SETTINGS, DEFAULT_BASE_URL, ClientSetting

CONN_TYPE = "namelookup"
HIDDEN_FIELDS = ("schema", "port", "login", "extra")
RELABELING = {"host": "Base URL", "password": "API Token"}
PLACEHOLDERS = {
    "host": DEFAULT_BASE_URL,
    "password": "Bearer token from sign-up or the account dashboard",
}


def json_schema(setting: ClientSetting) -> dict[str, Any]:
    """The JSON schema of one extra as the form checks it."""
    schema: dict[str, Any] = {"type": [setting.kind, "null"], "minimum": setting.minimum}
    if setting.maximum is not None:
        schema["maximum"] = setting.maximum
    schema["default"] = int(setting.default) if setting.kind == "integer" else setting.default
    return schema


EXTRA_FIELDS: tuple[ClientSetting, ...] = tuple(s for s in CLIENT_SETTINGS if s.on_form)
"""The extras the form shows (the others are set in the connection's extra JSON)."""


def conn_fields() -> dict[str, Any]:
    """The ``conn-fields`` entry of the provider info (read by Airflow 3.2 and later)."""
    return {f.name: {"label": f.label, "description": f.description, "schema": json_schema(f)}
            for f in EXTRA_FIELDS}


def ui_field_behaviour() -> dict[str, Any]:
    """The ``ui-field-behaviour`` entry of the provider info (read by Airflow 3.2 and later)."""
    return {"hidden-fields": list(HIDDEN_FIELDS), "relabeling": dict(RELABELING),
            "placeholders": dict(PLACEHOLDERS)}


def hook_field_behaviour() -> dict[str, Any]:
    """What ``get_ui_field_behaviour`` returns (Airflow 3.1)."""
    return {"hidden_fields": list(HIDDEN_FIELDS), "relabeling": dict(RELABELING),
            "placeholders": dict(PLACEHOLDERS)}


def form_widgets() -> dict[str, Any]:
    """What ``get_connection_form_widgets`` returns (Airflow 3.1): wtforms fields.

    Airflow accepts only ``StringField``, ``IntegerField``, ``PasswordField`` and
    ``BooleanField``, so a number with a fraction is a ``StringField`` checked by a regexp.
    """
    from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
    from flask_babel import lazy_gettext
    from wtforms import IntegerField, StringField
    from wtforms.validators import NumberRange, Optional, Regexp

    widgets: dict[str, Any] = {}
    for f in EXTRA_FIELDS:
        if f.kind == "integer":
            widgets[f.name] = IntegerField(
                lazy_gettext(f.label), widget=BS3TextFieldWidget(), description=f.description,
                default=f.default, validators=[Optional(), NumberRange(min=f.minimum, max=f.maximum)])
        else:
            widgets[f.name] = StringField(
                lazy_gettext(f.label), widget=BS3TextFieldWidget(), description=f.description,
                default=None if f.default is None else str(f.default),
                validators=[Optional(), Regexp(r"^\d+(\.\d+)?$", message=f"{f.label}: a positive number")])
    return widgets
