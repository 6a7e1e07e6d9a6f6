"""A session's connection lost between two stores through the incoming table (the cloud
warehouses'), on an in-process DB-API fake: the edge case no real engine here can stage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.dialects.bigquery import BigQueryDialect
from airflow_provider_namelookup.warehouse.dialects.snowflake import SnowflakeDialect
from airflow_provider_namelookup.warehouse.incoming import IncomingAnswers
from airflow_provider_namelookup.warehouse.schema import Column
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.support import NoTransactions


class _Cursor:
    def __init__(self, conn: _Connection) -> None:
        self.conn, self.rowcount = conn, 0

    def execute(self, sql: str, params: Any = None) -> None:
        if self.conn.fail_next:
            self.conn.fail_next = False
            raise OSError("connection reset by peer")
        self.conn.log.append(sql)
        self.rowcount = self.conn.hook.rows if sql.startswith(("UPDATE", "MERGE")) else 0

    def executemany(self, sql: str, rows: Any) -> None:
        self.execute(sql)

    def fetchall(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class _Connection(NoTransactions):
    def __init__(self, hook: _Hook) -> None:
        self.hook, self.log, self.fail_next = hook, hook.log, False

    def cursor(self) -> _Cursor:
        return _Cursor(self)



class _Hook:
    placeholder = "%s"

    def __init__(self) -> None:
        self.log: list[str] = []
        self.connections: list[_Connection] = []
        self.rows = 2

    def get_conn(self) -> _Connection:
        self.connections.append(_Connection(self))
        return self.connections[-1]


@pytest.mark.parametrize("dialect_class", [SnowflakeDialect, BigQueryDialect])
def test_a_store_after_a_lost_connection_writes_its_answers_on_a_new_one(dialect_class: Any) -> None:
    hook = _Hook()
    dialect = dialect_class(hook)
    dialect.connect = lambda hook: hook.get_conn()  # this fake, not the driver BigQuery's opener asks for
    session = WarehouseSession(hook, dialect)
    incoming = IncomingAnswers(session, "answers", "namelookup_incoming_run1")
    rows = [("h1", "female"), ("h2", "male")]

    def store() -> set[str]:
        return incoming.write(rows, [Column("gender", "text")], owner="run1", stamp=1.0, credits=1, paid_for="t")

    async def two_stores() -> set[str]:
        assert await session.run_reconnecting(store) == {"h1", "h2"}
        hook.connections[-1].fail_next = True  # the server ends the connection before the next store
        return await session.run_reconnecting(store)

    try:
        assert asyncio.run(two_stores()) == {"h1", "h2"}
    finally:
        session.shutdown()
    creates = [sql for sql in hook.log if "namelookup_incoming_run1" in sql and sql.startswith("CREATE")]
    # a private temporary table died with its connection and is made again; a real staging table is not
    assert len(creates) == (2 if dialect.engine.temporary_tables_are_private else 1)
    assert len(hook.connections) == 2
