"""PostgreSQL databases of a scale test: created with a unique name, filled, checked and dropped.

The warehouse holds ``customers(customer_id, first_name, country)`` filled from
:func:`~namelookup_emulator.sample.customer_rows` (real name
frequencies, about 1% invalid rows) with ``COPY``; :meth:`Warehouse.add_new_queries`
appends rows whose queries the table did not hold yet (names of the emulator's data
that no row asks about); :meth:`Warehouse.check` reads what the enrichment left in
``customers_gender``, by SQL alone.

Example::

    server = PostgresServer()
    server.create("nl_scale_wh_1a2b3c4d")
    house = Warehouse(server, "nl_scale_wh_1a2b3c4d")
    facts = house.fill(200_000, seed=2026)          # QueryFacts: what a correct run pays
    house.add_new_queries(300)                      # 300 more rows, each a query not asked before
    house.check()                                   # TargetCheck: rows missing, statuses, credits
    server.drop("nl_scale_wh_1a2b3c4d")
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass
from typing import Any

import psycopg2
from psycopg2 import sql

from namelookup_emulator.names import load_names
from namelookup_emulator.sample import customer_rows
from scale_test.facts import QueryFacts, count_queries, query_key

SOURCE_TABLE = "customers"
TARGET_TABLE = "customers_gender"


@dataclass(frozen=True)
class PostgresServer:
    """The machine's PostgreSQL, reached as a superuser through an existing database (for CREATE/DROP)."""

    host: str = "127.0.0.1"
    port: int = 5432
    user: str = "postgres"
    admin_database: str = "test"

    def connect(self, database: str | None = None) -> Any:
        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user,
                                dbname=database or self.admin_database, connect_timeout=5)
        conn.autocommit = True
        return conn

    def create(self, database: str) -> None:
        conn = self.connect()  # not `with conn`: psycopg2 opens a transaction there, even in autocommit
        try:
            with conn.cursor() as cur:
                cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        finally:
            conn.close()

    def drop(self, database: str) -> None:
        """Drop ``database`` even when a killed task left a connection open (``WITH (FORCE)``)."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
        finally:
            conn.close()

    def sqlalchemy_url(self, database: str, driver: str = "postgresql+psycopg2") -> str:
        return f"{driver}://{self.user}@{self.host}:{self.port}/{database}"

    def airflow_connection(self, database: str) -> str:
        """An ``AIRFLOW_CONN_*`` value (JSON) for ``database``."""
        return json.dumps({"conn_type": "postgres", "host": self.host, "port": self.port, "login": self.user,
                           "schema": database})


@dataclass(frozen=True)
class TargetCheck:
    """What the enrichment left in the target, compared with the source.

    :param source_rows: rows of the source.
    :param target_rows: rows of the target.
    :param missing_rows: source rows without a target row.
    :param stray_rows: target rows whose key is not in the source.
    :param rows_by_status: target rows per ``status``.
    :param credits_recorded: ``SUM(credits_used)``: what the rows say the table cost.
    :param distinct_hashes_paid: distinct ``query_hash`` values of rows with credits (an answer paid
        for twice and recorded twice shows as ``credits_recorded`` above this).
    """

    source_rows: int
    target_rows: int
    missing_rows: int
    stray_rows: int
    rows_by_status: dict[str, int]
    credits_recorded: int
    distinct_hashes_paid: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Warehouse:
    """The customers table of one scale-test database."""

    def __init__(self, server: PostgresServer, database: str) -> None:
        self.server = server
        self.database = database

    def fill(self, rows: int, *, seed: int) -> QueryFacts:
        """Create ``customers`` with ``rows`` rows; return what a correct run must pay for."""
        generated = list(customer_rows(rows, seed=seed))
        buffer = io.StringIO()
        for key, name, country in generated:
            buffer.write(f"{key}\t{_copy_text(name)}\t{_copy_text(country)}\n")
        buffer.seek(0)
        conn = self.server.connect(self.database)
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE TABLE {SOURCE_TABLE} (customer_id INTEGER PRIMARY KEY, "
                            "first_name VARCHAR(200), country VARCHAR(20))")
                cur.copy_expert(f"COPY {SOURCE_TABLE} FROM STDIN", buffer)
                cur.execute(f"ANALYZE {SOURCE_TABLE}")
        finally:
            conn.close()
        return count_queries((name, country) for _, name, country in generated)

    def add_new_queries(self, count: int) -> QueryFacts:
        """Append ``count`` rows after the last ``customer_id``, each asking about a name of the emulator's
        data (without a country) that no row of the table asks about yet; what they add to the bill."""
        conn = self.server.connect(self.database)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT first_name, country FROM {SOURCE_TABLE}")
                known = {query_key(name, country) for name, country in cur.fetchall()}
                added: list[tuple[str, None]] = []
                for entry in load_names().entries():
                    if len(added) == count:
                        break
                    key = query_key(entry.name, None)
                    if key is not None and key not in known:
                        known.add(key)
                        added.append((entry.name, None))
                if len(added) < count:
                    raise ValueError(f"the emulator's data has only {len(added)} names no row asks about")
                cur.execute(f"SELECT COALESCE(MAX(customer_id), 0) FROM {SOURCE_TABLE}")
                first = int(cur.fetchone()[0]) + 1
                cur.executemany(f"INSERT INTO {SOURCE_TABLE} (customer_id, first_name, country) VALUES (%s, %s, %s)",
                                [(first + offset, name, country) for offset, (name, country) in enumerate(added)])
        finally:
            conn.close()
        return count_queries(added)

    def check(self) -> TargetCheck:
        """Compare ``customers_gender`` with ``customers`` (an absent target counts as empty)."""
        conn = self.server.connect(self.database)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT COUNT(*) FROM {SOURCE_TABLE}")
                source_rows = cur.fetchone()[0]
                cur.execute("SELECT to_regclass(%s) IS NOT NULL", [TARGET_TABLE])
                if not cur.fetchone()[0]:
                    return TargetCheck(source_rows, 0, source_rows, 0, {}, 0, 0)
                cur.execute(f"SELECT COUNT(*) FROM {TARGET_TABLE}")
                target_rows = cur.fetchone()[0]
                cur.execute(f"SELECT COUNT(*) FROM {SOURCE_TABLE} s LEFT JOIN {TARGET_TABLE} t "
                            "USING (customer_id) WHERE t.customer_id IS NULL")
                missing = cur.fetchone()[0]
                cur.execute(f"SELECT COUNT(*) FROM {TARGET_TABLE} t LEFT JOIN {SOURCE_TABLE} s "
                            "USING (customer_id) WHERE s.customer_id IS NULL")
                stray = cur.fetchone()[0]
                cur.execute(f"SELECT status, COUNT(*) FROM {TARGET_TABLE} GROUP BY status ORDER BY status")
                statuses = {str(status): count for status, count in cur.fetchall()}
                cur.execute(f"SELECT COALESCE(SUM(credits_used), 0), "
                            f"COUNT(DISTINCT CASE WHEN credits_used > 0 THEN query_hash END) FROM {TARGET_TABLE}")
                credits, hashes = cur.fetchone()
        finally:
            conn.close()
        return TargetCheck(source_rows, target_rows, missing, stray, statuses, int(credits), int(hashes))


def _copy_text(value: str | None) -> str:
    """A value in COPY's text format (NULL as ``\\N``; the sample's names hold no tab or backslash)."""
    if value is None:
        return "\\N"
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
