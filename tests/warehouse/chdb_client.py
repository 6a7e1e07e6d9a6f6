"""A test-only ``clickhouse_connect`` client that runs ClickHouse statements on chdb, in process.

What is real: the hook, its DB-API and the engine. ``ClickHouseHook.get_conn()`` of
apache-airflow-providers-clickhousedb wraps a ``clickhouse_connect`` client in its own
``ClickHouseConnection``, whose cursor is clickhouse-connect's DB-API ``Cursor``: that cursor binds
the parameters (``%s``, client-side, by clickhouse-connect's own ``bind_query``) and calls
``client.query(text, parameters, ...)``. Only the client is replaced: :class:`ChdbClient` runs the
bound text on chdb (the ClickHouse 26.9 engine as a library, ``chdb.connect(path)``), where the
real client would POST it to a server's HTTP port. Each client is a chdb connection, which is a
ClickHouse session of its own (its temporary tables and ``SET`` settings are its own, as an HTTP
session's are), on one data directory per test process (chdb opens one per process).

What is adapted: the transport. chdb's errors arrive as clickhouse-connect's ``DatabaseError``
carrying the server's own message (``Code: 57. DB::Exception: ... (TABLE_ALREADY_EXISTS)``), as
the HTTP client raises them. Row counts of DML are not reported (the HTTP client's cursor reports
``len(result_set)``, 0 for an ``INSERT``: the same here). Every statement is written to the file
``$NAMELOOKUP_CHDB_TRACE`` names, when set.

Example::

    from unittest import mock
    with mock.patch("clickhouse_connect.get_client", chdb_client_factory(tmp_path / "chdb")):
        ClickHouseHook("warehouse_clickhouse").get_records("SELECT %s AS a", [1])   # [(1,)]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_DATA: dict[str, Path] = {}
_LOCK = threading.Lock()


def data_directory(path: Path) -> Path:
    """The process's one chdb data directory: ``path`` the first time, the first one after
    (chdb refuses a second directory in one process)."""
    with _LOCK:
        return _DATA.setdefault("path", path)


@dataclass(frozen=True)
class _ColumnType:
    name: str


@dataclass
class _QueryResult:
    """What clickhouse-connect's cursor reads of a ``QueryResult``."""

    result_set: Sequence[Sequence[Any]]
    column_names: tuple[str, ...]
    column_types: tuple[_ColumnType, ...]
    summary: dict[str, Any] = field(default_factory=dict)


class ChdbClient:
    """The part of ``clickhouse_connect.driver.Client`` that its DB-API cursor uses, over chdb.

    :param path: the chdb data directory (see :func:`data_directory`).
    :param database: the database its session uses (created when missing), as the hook's
        ``database`` (the connection's schema) names it.
    """

    def __init__(self, path: Path, database: str = "default") -> None:
        import chdb

        self._conn = chdb.connect(str(data_directory(path)))
        self._run(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        self._run(f"USE `{database}`")

    def _run(self, sql: str) -> _QueryResult:
        from chdb._exceptions import ChdbError
        from clickhouse_connect.driver.exceptions import DatabaseError

        if trace := os.environ.get("NAMELOOKUP_CHDB_TRACE"):
            with open(trace, "a") as out:
                out.write(f"{sql};\n")
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
        except ChdbError as err:
            raise DatabaseError(str(err)) from None
        description = cursor.description or []
        rows = [tuple(row) for row in cursor.fetchall()]
        cursor.close()
        return _QueryResult(rows, tuple(d[0] for d in description), tuple(_ColumnType(d[1]) for d in description))

    def query(self, query: str, parameters: Sequence[Any] | dict[str, Any] | None = None, *,
              settings: dict[str, Any] | None = None, query_formats: dict[str, str] | None = None,
              context: Any = None) -> _QueryResult:
        """Bind ``parameters`` as clickhouse-connect does, run the text on chdb."""
        from clickhouse_connect.driver.binding import bind_query

        text, server_binds = bind_query(query, parameters)
        assert not server_binds, "the engine binds %s markers, client-side"
        if settings:
            text = f"{text} SETTINGS {', '.join(f'{k} = {v!r}' for k, v in settings.items())}"
        return self._run(text if isinstance(text, str) else text.decode())

    def command(self, cmd: str, parameters: Sequence[Any] | dict[str, Any] | None = None, **kwargs: Any) -> Any:
        result = self.query(cmd, parameters)
        return result.result_set[0][0] if result.result_set else None

    def close(self) -> None:
        self._conn.close()


def chdb_client_factory(path: Path) -> Callable[..., ChdbClient]:
    """A stand-in for ``clickhouse_connect.get_client(**kwargs)``: a :class:`ChdbClient` on ``path``,
    in the ``database`` the hook asks for (host, port and credentials are the hook's, unused here)."""
    def get_client(**kwargs: Any) -> ChdbClient:
        return ChdbClient(path, kwargs.get("database") or "default")
    return get_client
