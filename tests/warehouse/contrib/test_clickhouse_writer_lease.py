"""The writer lease of ClickHouse's single-writer claims, on chdb: a lease its holder left behind holds
the next run back until it expires, then is retired (only that holder's), and a run leaves none."""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_namelookup.testing.compliance import CUSTOMERS, distinct_valid, enrich


def _tables(house: Any, like: str) -> list[str]:
    return sorted(r[0] for r in house.rows(f"SELECT name FROM system.tables WHERE database = currentDatabase() "
                                           f"AND name LIKE '{like}%'"))


def _leave_lease(house: Any, holder: str, expires: float) -> None:
    """A lease as a run that died holding it leaves it."""
    lease = house.dialect.writer_lease(f"{house.answers_table}_writer", owner=holder, expires=expires)
    house.hook.run(lease.take)


def test_a_run_leaves_no_lease_and_pays_each_query_once(compliance_warehouse: Any, compliance_account: Any) -> None:
    house = compliance_warehouse
    table = house.create_customers(CUSTOMERS)
    assert enrich(house, compliance_account, table)["credits_used"] == distinct_valid(CUSTOMERS)
    assert _tables(house, f"{house.answers_table}_writer") == []


def test_a_dead_holder_s_lease_holds_runs_back_until_it_expires_then_is_retired(
        compliance_warehouse: Any, compliance_account: Any) -> None:
    house = compliance_warehouse
    table = house.create_customers(CUSTOMERS)
    answers = house.answers_table  # created by the run, after the lease was left
    expires = time.time() + 2.0
    _leave_lease(house, "deadrun", expires)
    started = time.monotonic()
    summary = enrich(house, compliance_account, table)
    assert time.time() >= expires and time.monotonic() - started >= 1.5  # it waited for the lease
    assert summary["credits_used"] == distinct_valid(CUSTOMERS) == 100 - compliance_account.remaining()
    assert _tables(house, f"{answers}_writer") == [f"{answers}_writer_gone_deadrun_{int(expires * 1000)}"]


def test_retiring_names_the_holder_read_so_a_later_holder_s_lease_stays(compliance_warehouse: Any) -> None:
    house = compliance_warehouse
    name = f"{house.answers_table}_writer"
    _leave_lease(house, "first", time.time() - 1)
    retire_first = house.dialect.writer_lease(name, owner="me", expires=0.0, holder=("first", 1.0)).retire
    house.hook.run(retire_first)
    _leave_lease(house, "second", time.time() + 60)  # taken by another run meanwhile
    try:  # a run that read "first" before and retires now must not move "second"'s lease
        house.hook.run(retire_first)
    except Exception as err:
        assert "already exists" in str(err)
    else:
        raise AssertionError("a retire of an earlier holder's lease moved a later holder's")
    assert house.rows(house.dialect.writer_lease(name, owner="me", expires=0.0).read)[0][0] == "second"
