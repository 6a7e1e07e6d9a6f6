"""The stronger baseline: the DAG a competent engineer writes by hand, without the provider.

It does what the service's documentation suggests and nothing more:

1. ``SELECT DISTINCT first_name, country`` from ``customers``;
2. the distinct names checked against the spec's plain rules (a name of 1 to 50
   characters, a country from the spec's table or none: a batch holding one bad value is
   refused whole) and sent as arrays of 100 over one ``httpx.AsyncClient``, 8 requests in
   flight; a batch the service still refuses is sent again one name at a time, so that
   one bad name does not cost the batch's answers;
3. every row of ``customers`` upserted into ``customers_handwritten`` with one
   ``executemany`` (``INSERT ... ON CONFLICT DO UPDATE``), its answer joined in Python.

It keeps no memory between runs: a rerun over an unchanged table pays for every
distinct name again. A :mod:`benchmarks.child` job (SQLite warehouse). Example::

    run_in_child("benchmarks.handwritten:handwritten_dag",
                 {"db": "/tmp/w.db", "url": service.url, "token": service.token}, log_path=log)
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

from airflow_provider_namelookup.countries import COUNTRIES  # the spec's country table, as one would copy it

BATCH = 100
IN_FLIGHT = 8
TARGET = ("CREATE TABLE IF NOT EXISTS customers_handwritten (customer_id INTEGER PRIMARY KEY, gender TEXT, "
          "probability REAL)")
UPSERT = ("INSERT INTO customers_handwritten VALUES (?, ?, ?) ON CONFLICT (customer_id) DO UPDATE SET "
          "gender = excluded.gender, probability = excluded.probability")


async def _answers(url: str, token: str, questions: list[tuple[str, Any]]) -> tuple[dict[Any, Any], dict[str, int]]:
    import httpx

    answers: dict[tuple[str, Any], tuple[Any, Any]] = {}
    counts = {"requests": 0, "refused": 0}
    gate = asyncio.Semaphore(IN_FLIGHT)

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60,
                                 limits=httpx.Limits(max_connections=IN_FLIGHT)) as client:
        async def send(batch: list[tuple[str, Any]]) -> None:
            body = [{"first_name": name, **({"country": country} if country else {})} for name, country in batch]
            async with gate:
                response = await client.post("/v2/gender", json=body)
            counts["requests"] += 1
            if response.status_code == 200:
                for question, answer in zip(batch, response.json(), strict=True):
                    answers[question] = (answer.get("gender"), answer.get("probability"))
            elif len(batch) > 1:
                counts["refused"] += 1
                await asyncio.gather(*(send([question]) for question in batch))

        await asyncio.gather(*(send(questions[i:i + BATCH]) for i in range(0, len(questions), BATCH)))
    return answers, counts


def handwritten_dag(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Open the warehouse; return the DAG's three steps as the work.

    :param params: ``db`` (SQLite path), ``url`` and ``token`` of the service.
    """
    db = sqlite3.connect(params["db"])
    db.execute(TARGET)
    db.commit()

    def work() -> dict[str, Any]:
        distinct = db.execute("SELECT DISTINCT first_name, country FROM customers").fetchall()
        questions = [(n, c) for n, c in distinct
                     if isinstance(n, str) and 1 <= len(n.strip()) <= 50 and (not c or c.upper() in COUNTRIES)]
        answers, counts = asyncio.run(_answers(params["url"], params["token"], questions))
        rows = db.execute("SELECT customer_id, first_name, country FROM customers").fetchall()
        db.executemany(UPSERT, [(key, *answers.get((name, country), (None, None))) for key, name, country in rows])
        db.commit()
        db.close()
        return {"distinct": len(distinct), "asked": len(questions), "answered": len(answers), "rows": len(rows),
                **counts}

    return work
