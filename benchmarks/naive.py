"""The naive baseline: what a user would write in a ``PythonOperator`` without the provider.

For each row of ``customers`` (in key order, optionally only the first ``limit`` rows):
skip it if its name is empty or None, else send one ``POST /v2/gender`` with
``{"first_name": name, "country": country}`` and write the answer (or the error) back
into ``customers_naive`` at once, one ``INSERT OR REPLACE`` and commit per row. With
``"lookup": "origin"`` it sends ``POST /v2/country-of-origin`` with ``{"first_name": name}``
instead and keeps the top country in ``customers_naive_origin``.

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
ORIGIN_TARGET = ("CREATE TABLE customers_naive_origin (customer_id INTEGER PRIMARY KEY, top_country TEXT, "
                 "probability REAL, status TEXT, error TEXT)")


def _gender(name: str, country: Any) -> tuple[str, dict[str, Any], Callable[[dict[str, Any]], tuple[Any, Any]]]:
    return "/v2/gender", {"first_name": name, "country": country}, lambda a: (a["gender"], a["probability"])


def _origin(name: str, country: Any) -> tuple[str, dict[str, Any], Callable[[dict[str, Any]], tuple[Any, Any]]]:
    def top(answer: dict[str, Any]) -> tuple[Any, Any]:
        countries = answer.get("country_of_origin") or [{}]
        return countries[0].get("country"), countries[0].get("probability")

    return "/v2/country-of-origin", {"first_name": name}, top


def naive_loop(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Set up the target table; return the per-row loop as the work.

    :param params: ``db`` (SQLite path), ``url`` and ``token`` of the service, ``limit``
        (rows to go through; None for all), ``lookup`` (``gender``, the default, or ``origin``).
    """
    import httpx

    origin = params.get("lookup", "gender") == "origin"
    request_for = _origin if origin else _gender
    target = "customers_naive_origin" if origin else "customers_naive"
    db = sqlite3.connect(params["db"])
    db.execute(f"DROP TABLE IF EXISTS {target}")
    db.execute(ORIGIN_TARGET if origin else TARGET)
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
                path, body, read = request_for(name, country)
                started = time.perf_counter()
                response = client.post(path, json=body)
                http_seconds += time.perf_counter() - started
                sent += 1
                values: tuple[Any, ...]
                if response.status_code == 200:
                    answer = response.json()
                    ok += 1
                    values = (customer_id, *read(answer), "ok", None)
                else:
                    errors += 1
                    values = (customer_id, None, None, "error", response.text[:200])
                db.execute(f"INSERT OR REPLACE INTO {target} VALUES (?, ?, ?, ?, ?)", values)
                db.commit()
        db.close()
        return {"rows": len(rows), "sent": sent, "ok": ok, "errors": errors, "skipped": skipped,
                "http_seconds": http_seconds}

    return work
