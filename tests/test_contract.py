"""The client's defaults and limits are stated once: the form, the settings and the connection page agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_namelookup.api import RetryPolicy
from airflow_provider_namelookup.connection_form import conn_fields
from airflow_provider_namelookup.contract import CLIENT_DEFAULTS, CLIENT_SETTINGS
from airflow_provider_namelookup.hooks.settings import ClientSettings

CONNECTION_PAGE = (Path(__file__).resolve().parents[1] / "docs" / "connections" / "namelookup.md").read_text()


def test_the_settings_default_to_the_contract() -> None:
    settings = ClientSettings.from_parts(host=None, port=None, password=None, extra={})
    assert (settings.timeout, settings.connect_timeout, settings.batch_size, settings.max_concurrency) == (
        CLIENT_DEFAULTS["timeout"], CLIENT_DEFAULTS["connect_timeout"], CLIENT_DEFAULTS["batch_size"],
        CLIENT_DEFAULTS["max_concurrency"])
    assert (settings.retry.max_retries, settings.retry.backoff_base) == (
        CLIENT_DEFAULTS["max_retries"], CLIENT_DEFAULTS["backoff_base"]) == (
        RetryPolicy().max_retries, RetryPolicy().backoff_base)


@pytest.mark.parametrize("setting", CLIENT_SETTINGS, ids=lambda s: s.name)
def test_the_form_and_the_settings_share_each_limit(setting: object) -> None:
    from airflow_provider_namelookup.contract import ClientSetting

    assert isinstance(setting, ClientSetting)
    below = setting.minimum - (1 if setting.kind == "integer" else 0.01)
    with pytest.raises(ValueError, match=f"connection extra '{setting.name}' must be"):
        ClientSettings.from_parts(host=None, port=None, password=None, extra={setting.name: below})
    ClientSettings.from_parts(host=None, port=None, password=None, extra={setting.name: setting.minimum})
    if setting.on_form:
        schema = conn_fields()[setting.name]["schema"]
        assert schema["minimum"] == setting.minimum and schema["default"] == setting.default
        assert schema.get("maximum") == setting.maximum


def test_the_connection_page_states_every_extra_with_its_default() -> None:
    extras = re.search(r"\| extras \| (.+) \|", CONNECTION_PAGE)
    assert extras, "the connection page's table of fields lists the extras"
    for setting in CLIENT_SETTINGS:
        default = f"{setting.default:g}" if setting.kind == "number" else str(int(setting.default))
        assert re.search(rf"`{setting.name}` \([^)]*default \**{re.escape(default)}\**", extras.group(1)), setting.name
