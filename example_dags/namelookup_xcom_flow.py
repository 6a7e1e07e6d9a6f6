"""
### XCom flow with dynamic task mapping

Extract new sign-ups, look their names up in chunks (one mapped task instance per
chunk, each a single array request), and reduce the answers to a small report.
Results travel by XCom, so keep the lists modest (thousands, not millions); for big
tables use the ``Sql*`` operators, which write to a table instead.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import dag, task

from airflow_provider_namelookup.operators import GenderLookupOperator

CHUNK_SIZE = 100  # the service's batch size: one request per mapped task instance


@dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
     tags=["namelookup", "example"], doc_md=__doc__)
def namelookup_xcom_flow() -> None:
    @task
    def extract_signups() -> list[dict[str, Any]]:
        """Today's sign-ups; in real life a query or an API call."""
        return [
            {"id": 1, "name": "Theresa Miller", "country": "US"},
            {"id": 2, "name": "Andrea Rossi", "country": "IT"},
            {"id": 3, "name": "Andrea Schmidt", "country": "DE"},
            {"id": 4, "name": "Jan Kowalski", "country": "PL"},
            {"id": 5, "name": "Ingrid Johansson", "country": "SE"},
            {"id": 6, "name": "Mehmet Yilmaz", "country": "TR"},
            {"id": 7, "name": "Sofia Garcia", "country": "ES"},
            {"id": 8, "name": "", "country": "FR"},              # invalid: recorded, never paid for
            {"id": 9, "name": "theresa miller", "country": "US"},  # same question as id 1: paid once
        ]

    @task
    def chunk(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        return [rows[i:i + CHUNK_SIZE] for i in range(0, len(rows), CHUNK_SIZE)]

    genders = GenderLookupOperator.partial(
        task_id="lookup_genders",
        query_field="name",       # rows pass through unchanged; the name is in row["name"]
        name_kind="full_name",    # ... and it is a full name; row["country"] is the hint
        # full names are pseudonymised by default: the results' echoes are keyed hashes, the key in
        # the namelookup_pseudonymisation connection (docs: Personal data: pseudonyms and keys)
        max_credits=500,
    ).expand(queries=chunk(extract_signups()))

    @task
    def report(chunks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        results = [r for chunk in chunks for r in chunk]
        genders = Counter(r.get("gender", "error") if "error" not in r else "error" for r in results)
        found = [r["probability"] for r in results if r.get("result_found")]
        return {"rows": len(results), "by_gender": dict(genders),
                "mean_probability": round(sum(found) / len(found), 3) if found else None}

    report(genders.output)


namelookup_xcom_flow()
