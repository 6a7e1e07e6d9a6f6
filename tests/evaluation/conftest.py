"""The labelled people of ``labelled.py`` looked up once per session against the emulator; an
api-server for the approval DAG's tests; the credits view's headless browser for the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.models import result_view
from tests.evaluation.labelled import classes, labelled_people
from tests.plugins.conftest import ApiServer, running_api_server
from tests.plugins.test_credits_page import browser  # noqa: F401  (fixture: Debian's chromium, headless)


@pytest.fixture(scope="session")
def looked_up(emulator: Any) -> list[dict[str, Any]]:
    """400 labelled people with the emulator's answers beside them (the hook pays each query it sends)."""
    people = labelled_people(400, seed=3)
    token = emulator.create_account(credits=1_000)
    answers = NameLookupHook.for_url(emulator.url, token).gender_batch(
        [{"first_name": p["first_name"], "country": p["country"]} for p in people])
    assert 1_000 - emulator.state.remaining_credits(token) == len(people)
    return [{**person, **result_view(answer), "class": kind}
            for person, answer, kind in zip(people, answers, classes(people), strict=True)]


@pytest.fixture(scope="module")
def api_server(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A real ``airflow api-server`` on the session's metadata database (simple auth manager: users
    ``admin`` and ``viewer``), for this directory's module that needs it and stopped after it, so that
    it never runs beside the credits view's own (``tests/plugins/conftest.py``)."""
    with running_api_server(tmp_path_factory.mktemp("approval-api-server"), "admin:admin,viewer:viewer") as server:
        yield server
