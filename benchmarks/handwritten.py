"""The stronger baseline: the DAG a competent engineer writes by hand, without the provider.

It does what the service's documentation suggests and nothing more:

1. ``SELECT DISTINCT first_name, country`` from the customers table;
2. the distinct names checked against the spec's plain rules (a name of 1 to 50
   characters, a country from the spec's table or none: a batch holding one bad value is
   refused whole) and sent as arrays of 100 queries with ids over one
   ``httpx.AsyncClient``, ``in_flight`` requests at a time; a batch the service still
   refuses is sent again one name at a time, so that one bad name does not cost the
   batch's answers;
3. the target written in one of two ways (``upsert``):

   - ``"rows"``: every source row upserted with one ``executemany`` of
     ``INSERT ... ON CONFLICT DO UPDATE``, its answer joined in Python (the issue-16
     baseline, 8 in flight);
   - ``"join"``: the answers copied into a temporary table (``COPY`` on PostgreSQL) and one
     ``INSERT ... SELECT ... JOIN ... ON CONFLICT DO UPDATE`` (the issue-23 baseline, 16 in
     flight).

It keeps no memory between runs: a rerun over an unchanged table pays for every
distinct name again. A :mod:`benchmarks.child` job, on SQLite, PostgreSQL or DuckDB. Example::

    run_in_child("benchmarks.handwritten:handwritten_dag",
                 {"warehouse": "postgres", "table": "customers_1m", "in_flight": 16, "upsert": "join",
                  "url": service.url, "token": service.token}, log_path=log)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_namelookup.countries import COUNTRIES  # the spec's country table, as one would copy it

BATCH = 100
TARGET_COLUMNS = "customer_id BIGINT PRIMARY KEY, gender TEXT, probability DOUBLE PRECISION"
ANSWER_COLUMNS = "first_name TEXT, country TEXT, gender TEXT, probability DOUBLE PRECISION"
POSTGRES = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "test"}

Question = tuple[str, Any]


async def _answers(url: str, token: str, questions: list[Question],
                   in_flight: int) -> tuple[dict[Question, tuple[Any, Any]], dict[str, int]]:
    import httpx

    answers: dict[Question, tuple[Any, Any]] = {}
    counts = {"requests": 0, "refused": 0}
    gate = asyncio.Semaphore(in_flight)

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60,
                                 limits=httpx.Limits(max_connections=in_flight)) as client:
        async def send(batch: list[Question]) -> None:
            body = [{"id": i, "first_name": name, **({"country": country} if country else {})}
                    for i, (name, country) in enumerate(batch)]
            async with gate:
                response = await client.post("/v2/gender", json=body)
            counts["requests"] += 1
            if response.status_code == 200:
                for answer in response.json():
                    question = batch[int(answer["input"]["id"])]
                    answers[question] = (answer.get("gender"), answer.get("probability"))
            elif len(batch) > 1:
                counts["refused"] += 1
                await asyncio.gather(*(send([question]) for question in batch))

        await asyncio.gather(*(send(questions[i:i + BATCH]) for i in range(0, len(questions), BATCH)))
    return answers, counts


class _Warehouse:
    """What differs between the three warehouses, written as a DAG author would."""

    marker = "?"
    same = "IS NOT DISTINCT FROM"

    def __init__(self, params: dict[str, Any]) -> None:
        self.source = params.get("table", "customers")
        self.target = f"{self.source}_handwritten"
        self.db = self.connect(params)

    def connect(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.db.cursor()
        cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description else []
        cursor.close()
        return [tuple(r) for r in rows]

    def write(self, sql: str) -> int:
        """Run one statement that writes; the rows it wrote."""
        cursor = self.db.cursor()
        cursor.execute(sql)
        written = cursor.rowcount
        cursor.close()
        return int(written)

    def load_answers(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.cursor().executemany(f"INSERT INTO {table} VALUES ({', '.join([self.marker] * 4)})", rows)

    def upsert_rows(self, rows: list[tuple[Any, ...]]) -> None:
        m = self.marker
        self.db.cursor().executemany(
            f"INSERT INTO {self.target} VALUES ({m}, {m}, {m}) ON CONFLICT (customer_id) DO UPDATE SET "
            f"gender = excluded.gender, probability = excluded.probability", rows)

    def close(self) -> None:
        self.db.close()


class _Sqlite(_Warehouse):
    same = "IS"

    def connect(self, params: dict[str, Any]) -> Any:
        import sqlite3

        return sqlite3.connect(params["db"])


class _Postgres(_Warehouse):
    marker = "%s"

    def connect(self, params: dict[str, Any]) -> Any:
        import psycopg

        return psycopg.connect(**POSTGRES)  # type: ignore[arg-type]

    def load_answers(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        with self.db.cursor().copy(f"COPY {table} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


class _DuckDB(_Warehouse):
    def connect(self, params: dict[str, Any]) -> Any:
        import duckdb

        return duckdb.connect(params["db"])

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        result = self.db.execute(sql, params)  # a DuckDB cursor is another connection, without our temp tables
        return [tuple(r) for r in result.fetchall()] if result.description else []

    def write(self, sql: str) -> int:
        return int(self.db.execute(sql).fetchone()[0])

    def load_answers(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.execute(f"INSERT INTO {table} SELECT UNNEST(?), UNNEST(?), UNNEST(?), UNNEST(?)",
                        [[r[i] for r in rows] for i in range(4)])


WAREHOUSES: dict[str, type[_Warehouse]] = {"sqlite": _Sqlite, "postgres": _Postgres, "duckdb": _DuckDB}


def handwritten_dag(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Open the warehouse; return the DAG's three steps as the work.

    :param params: ``warehouse`` (``sqlite``, default; ``postgres``; ``duckdb``), ``db`` (the
        file of SQLite and DuckDB) or ``table`` (PostgreSQL's source table), ``in_flight``
        (default 8), ``upsert`` (``rows``, default, or ``join``), ``url`` and ``token`` of the service.
    """
    house = WAREHOUSES[params.get("warehouse", "sqlite")](params)
    in_flight, upsert = int(params.get("in_flight", 8)), params.get("upsert", "rows")
    house.execute(f"CREATE TABLE IF NOT EXISTS {house.target} ({TARGET_COLUMNS})")
    house.db.commit()

    def work() -> dict[str, Any]:
        distinct = house.execute(f"SELECT DISTINCT first_name, country FROM {house.source}")
        questions = [(n, c) for n, c in distinct
                     if isinstance(n, str) and 1 <= len(n.strip()) <= 50 and (not c or c.upper() in COUNTRIES)]
        answers, counts = asyncio.run(_answers(params["url"], params["token"], questions, in_flight))
        if upsert == "join":
            house.execute(f"CREATE TEMPORARY TABLE answers_handwritten ({ANSWER_COLUMNS})")
            house.load_answers("answers_handwritten", [(*question, *answer) for question, answer in answers.items()])
            rows = house.write(
                f"INSERT INTO {house.target} SELECT c.customer_id, a.gender, a.probability FROM {house.source} c "
                f"JOIN answers_handwritten a ON a.first_name = c.first_name AND a.country {house.same} c.country "
                f"WHERE true ON CONFLICT (customer_id) DO UPDATE SET gender = excluded.gender, "
                f"probability = excluded.probability")
        else:
            rows_read = house.execute(f"SELECT customer_id, first_name, country FROM {house.source}")
            house.upsert_rows([(key, *answers.get((name, country), (None, None)))
                               for key, name, country in rows_read])
            rows = len(rows_read)
        house.db.commit()
        house.close()
        return {"distinct": len(distinct), "asked": len(questions), "answered": len(answers), "rows": rows,
                **counts}

    return work
