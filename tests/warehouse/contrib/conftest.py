"""ClickHouse for the compliance suite and its writer-lease tests: the real ``ClickHouseHook`` DB-API
(clickhouse-connect's cursor) over chdb in process (``tests/warehouse/chdb_client.py``), a database of
the test's own, and the dialect written from the docs' page."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_namelookup.testing.compliance import compliance_account, compliance_emulator  # noqa: F401
from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse
from tests.support import require


@pytest.fixture
def compliance_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbApiWarehouse]:
    require("chdb", "chdb is installed by the test extra")
    require("airflow.providers.clickhousedb", "the clickhouse extra installs apache-airflow-providers-clickhousedb")
    from airflow.providers.clickhousedb.hooks.clickhouse import ClickHouseConnection

    from airflow_provider_namelookup.warehouse.contrib.clickhouse import UPDATABLE, ClickHouseDialect
    from tests.warehouse.chdb_client import ChdbClient

    path = tmp_path_factory.getbasetemp() / "chdb"
    database = f"compliance_{uuid.uuid4().hex[:8]}"
    yield DbApiWarehouse(lambda: ClickHouseConnection(ChdbClient(Path(path), database)), ClickHouseDialect,
                         placeholder="%s", text_type="Nullable(String)",
                         types={"integer": "Int32", "bigint": "Int64", "uuid": "UUID",
                                "varchar(20)": "Nullable(String)", "char(2)": "Nullable(FixedString(2))"},
                         table_options=f"ENGINE = MergeTree ORDER BY customer_id {UPDATABLE}")
