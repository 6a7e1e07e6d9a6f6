"""The naive baseline: what a user would write in a ``PythonOperator`` without the provider.

For each row of ``customers`` (in key order, optionally only the first ``limit`` rows):
skip it if its name is empty or None, else send one ``POST /v2/gender`` with
``{"first_name": name, "country": country}`` and write the answer (or the error) back
into ``customers_naive`` at once, one ``INSERT OR REPLACE`` and commit per row.

It is a generous baseline: one pooled ``httpx.Client`` (keep-alive) for all requests
(module-level ``httpx.post`` opens a new client per call and is far slower), and one
SQLite connection for all writes. The time spent waiting for HTTP answers is reported
apart from the rest.

A :mod:`benchmarks.child` job. Example::

    run_in_child("benchmarks.naive:naive_loop",
                 {"db": "/tmp/w.db", "url": service.url, "token": service.token, "limit": 20_000},
                 log_path=log)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

TARGET = ("CREATE TABLE customers_naive (customer_id INTEGER PRIMARY KEY, gender TEXT, probability REAL, "
          "status TEXT, error TEXT)")


def naive_loop(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Set up the target table; return the per-row loop as the work.

    :param params: ``db`` (SQLite path), ``url`` and ``token`` of the service, ``limit``
        (rows to go through; None for all).
    """
    import httpx

    db = sqlite3.connect(params["db"])
    db.execute("DROP TABLE IF EXISTS customers_naive")
    db.execute(TARGET)
    db.commit()
    limit = params.get("limit")

    def work() -> dict[str, Any]:
        sql = "SELECT customer_id, first_name, country FROM customers ORDER BY customer_id"
        rows = db.execute(sql + " LIMIT ?", (limit,)).fetchall() if limit else db.execute(sql).fetchall()
        sent = ok = errors = skipped = 0
        http_seconds = 0.0
        with httpx.Client(base_url=params["url"], headers={"Authorization": f"Bearer {params['token']}"},
                          timeout=30) as client:
            for customer_id, name, country in rows:
                if not name:
                    skipped += 1
                    continue
                started = time.perf_counter()
                response = client.post("/v2/gender", json={"first_name": name, "country": country})
                http_seconds += time.perf_counter() - started
                sent += 1
                values: tuple[Any, ...]
                if response.status_code == 200:
                    answer = response.json()
                    ok += 1
                    values = (customer_id, answer["gender"], answer["probability"], "ok", None)
                else:
                    errors += 1
                    values = (customer_id, None, None, "error", response.text[:200])
                db.execute("INSERT OR REPLACE INTO customers_naive VALUES (?, ?, ?, ?, ?)", values)
                db.commit()
        db.close()
        return {"rows": len(rows), "sent": sent, "ok": ok, "errors": errors, "skipped": skipped,
                "http_seconds": http_seconds}

    return work
