"""The provider's own warehouses through the compliance suite (:mod:`airflow_provider_namelookup.testing.compliance`),
as a contributor runs it on a new one: SQLite, PostgreSQL, MariaDB, DuckDB, Snowflake (fakesnow) and
BigQuery (bqemulator), each behind its Airflow connection."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests and fixtures)

pytestmark = pytest.mark.database


@pytest.fixture
def compliance_warehouse(warehouse: Any) -> Any:
    return warehouse
