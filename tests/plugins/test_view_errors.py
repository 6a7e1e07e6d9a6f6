"""The credits view's error text quotes no token pasted into the wrong field (issue 32, F8):
``connection extra 'timeout' must be a number, got '<token>'``, and a base URL ending in the
token shown in ``endpoint GET /<token>/v2...``. Read as the api-server reads a connection
(``fetch_statistic``), against the emulator over loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_namelookup.plugins.accounts import fetch_statistic
from tests.support import set_connection

TOKEN = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"


@pytest.fixture
def conn_id() -> Iterator[str]:
    import os

    yield "namelookup_pasted"
    os.environ.pop("AIRFLOW_CONN_NAMELOOKUP_PASTED", None)


def test_a_token_pasted_into_an_extra_is_not_quoted(conn_id: str, emulator: Any) -> None:
    set_connection(conn_id, {"conn_type": "namelookup", "host": emulator.url, "password": TOKEN,
                             "extra": {"timeout": TOKEN}})
    error = fetch_statistic(conn_id).error
    assert error == "connection extra 'timeout' must be a number, got a text of 32 characters"


def test_a_token_pasted_into_an_extra_without_a_password_is_not_quoted(conn_id: str, emulator: Any) -> None:
    set_connection(conn_id, {"conn_type": "namelookup", "host": emulator.url, "extra": {"max_retries": TOKEN}})
    error = fetch_statistic(conn_id).error or ""
    assert TOKEN not in error and "must be" in error


def test_a_base_url_ending_in_the_token_is_masked(conn_id: str, emulator: Any) -> None:
    set_connection(conn_id, {"conn_type": "namelookup", "host": f"{emulator.url}/{TOKEN}", "password": TOKEN})
    error = fetch_statistic(conn_id).error or ""
    assert error and TOKEN not in error and TOKEN[:16] not in error and "***" in error
