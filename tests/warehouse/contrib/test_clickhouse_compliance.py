"""ClickHouse through the compliance suite, as a contributor runs it on a new warehouse: the
``compliance_warehouse`` of this folder's conftest (the real ``ClickHouseHook`` DB-API over chdb) and
the dialect written from the docs' page."""

from __future__ import annotations

from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests and fixtures)
