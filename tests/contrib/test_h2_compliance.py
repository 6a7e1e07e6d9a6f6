"""H2 through the compliance suite, as a contributor runs it on a new warehouse: a bare DB-API
connection (JPype's, over H2's JDBC driver) and the dialect written from the docs' page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests and fixtures)
from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse
from tests.contrib.h2_dialect import H2_JAR, H2Dialect, connect
from tests.support import require


@pytest.fixture
def compliance_warehouse(tmp_path: Path) -> Iterator[DbApiWarehouse]:
    require("jpype", "JPype1 is installed by the dev extra")
    if not H2_JAR.exists():
        missing = f"{H2_JAR} is missing (make h2 installs Debian's libh2-java)"
        if os.environ.get("NAMELOOKUP_REQUIRE_DATABASES") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    yield DbApiWarehouse(lambda: connect(tmp_path / "warehouse"), H2Dialect)
