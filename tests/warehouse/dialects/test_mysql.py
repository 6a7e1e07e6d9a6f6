"""MySQL/MariaDB's spellings on the real server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.dialects.mysql import MySqlDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, check_unchanged_forms, roundtrip_timestamp, truth


@pytest.mark.database
def test_mysql_compares_bytes_not_its_collation_and_keeps_naive_utc_times(mariadb_warehouse: Any) -> None:
    session = WarehouseSession(mariadb_warehouse.hook)
    d = session.dialect
    assert isinstance(d, MySqlDialect)
    assert truth(session, "'José' = 'Jose'")  # what the default collation does
    check_equalities(session)
    assert not d._percent_escaped  # mysql-connector-python sends %% as is
    moment = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)
    assert roundtrip_timestamp(session, mariadb_warehouse.table_name("times"), moment) == moment.replace(tzinfo=None)
    assert session.fetchall("SELECT @@session.tx_isolation")[0][0] == "READ-COMMITTED"
    session.close()


@pytest.mark.database
def test_a_reruns_outer_join_reads_exactly_the_rows_not_exists_would(mariadb_warehouse: Any) -> None:
    """MariaDB runs a correlated ``NOT EXISTS`` as a dependent subquery, so the distinct pass leaves
    unchanged rows out by a ``LEFT JOIN`` instead (500,000 unchanged rows: 0.6 s instead of 0.75 s)."""
    session = WarehouseSession(mariadb_warehouse.hook)
    assert session.dialect.engine.unchanged_by_outer_join
    check_unchanged_forms(session, mariadb_warehouse.table_name("src"), mariadb_warehouse.table_name("tgt"))
    session.close()


@pytest.mark.database
def test_a_name_column_that_is_not_text_is_filled_and_its_rerun_is_free(mariadb_warehouse: Any, emulator: Any,
                                                                        namelookup: Any) -> None:
    """The fill's index on the joined names is a 191-character prefix where the column is text; a
    number (or a column narrower than the prefix: the compliance suite's ``VARCHAR(20)``) takes no
    prefix, and was refused (error 1089) after the run had paid, on every rerun alike."""
    from airflow_provider_namelookup.testing.compliance import ComplianceAccount, enrich

    house = mariadb_warehouse
    table = house.create_customers([(1, 42, "DE"), (2, 42, None), (3, None, "DE"), (4, 7, "DE")],
                                   name_type="integer", country_type="char(2)")
    account = ComplianceAccount(emulator, namelookup.token)
    namelookup.set_credits(100)
    summary = enrich(house, account, table)
    target = dict(house.rows(f"SELECT customer_id, status FROM {table}_gender"))
    assert sorted(target) == [1, 2, 3, 4] and target[3] == "error"
    assert summary["credits_used"] == 100 - namelookup.remaining()
    again = enrich(house, account, table)
    assert (again["rows_unchanged"], again["requests"]) == (4, 0)
