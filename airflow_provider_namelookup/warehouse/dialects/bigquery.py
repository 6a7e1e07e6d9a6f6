"""Google BigQuery (``apache-airflow-providers-google``: ``BigQueryHook``'s client, google-cloud-bigquery's DB-API).

What differs from the base: the connection is google-cloud-bigquery's DB-API over the
hook's client (``BigQueryHook.get_conn()`` is a DB-API that takes only named parameters
and counts no rows); backtick quoting; temporary tables exist only inside a
script or a session, and every DB-API statement is a job of its own, so the map and the
answers waiting to be stored are **staging tables** in the answers table's dataset,
named for the run, expiring after a day (if the task dies) and dropped at its end;
no keys declared (BigQuery enforces none, and the engine needs none), so every fill is a
``MERGE``; no indexes; a dataset's tables listed from its own ``INFORMATION_SCHEMA``; backslash
escapes in string literals; bulk loads as one statement binding one JSON document
(``UNNEST(JSON_QUERY_ARRAY(...))``), since ``executemany`` runs a job per row and
``insert_rows`` streams rows that DML cannot change for a while; answers stored at most
every 30 s (a job costs a second or more, and a table takes few DML jobs at a time).

Credits: BigQuery runs DML under snapshot isolation and aborts a mutating statement
that conflicts with one committed meanwhile ("Could not serialize access to table ...
due to concurrent update"); every claim is a ``MERGE``, so of two runs' claims of one
query one is aborted, and the engine runs it again (up to 10 times, waiting from 1 s
and doubling); it then finds the query claimed. A run whose claim is aborted more
often than that fails before paying for it.

Example::

    dialect = BigQueryDialect(BigQueryHook("warehouse"))
    dialect.quote("analytics.customers")        # '`analytics`.`customers`'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import DriverErrors, cloud_tuning
from airflow_provider_namelookup.warehouse.dialects.cloud import CloudTableDialect
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types

_CASTS = {"bool": "BOOL", "int": "INT64", "float": "FLOAT64", "decimal": "BIGNUMERIC", "datetime": "TIMESTAMP",
          "date": "DATE"}
_EXPIRY = "OPTIONS (expiration_timestamp = TIMESTAMP_ADD(CURRENT_TIMESTAMP(), INTERVAL 1 DAY))"


class BigQueryDialect(CloudTableDialect, name="bigquery", proof="emulator",
                      credit_promise=("snapshot isolation: of two runs' MERGE claims of one query "
                                      "BigQuery aborts one, which is run again and finds the query "
                                      "held")):
    """The spellings of Google BigQuery: what differs from the base is in this module's docstring."""

    types = column_types(text="STRING", longtext="STRING", float="FLOAT64",
                         int="INT64", bigint="INT64", timestamp="TIMESTAMP")
    tuning = cloud_tuning(conflict_attempts=10, conflict_backoff_seconds=1.0)
    errors = DriverErrors(lock_conflict_words=("could not serialize access", "concurrent update",
                                               "too many dml statements", "too many table update operations"))

    @staticmethod
    def connect(hook: Any) -> Any:
        from google.cloud.bigquery import dbapi

        return dbapi.connect(hook.get_client(project_id=hook.project_id, location=hook.location))

    def table_names(self, schema: str | None) -> str | None:
        """A dataset's own ``INFORMATION_SCHEMA`` (BigQuery has no unqualified one); none without a
        dataset (a connection has no default one)."""
        return f"SELECT table_name FROM {self.quote(schema)}.INFORMATION_SCHEMA.TABLES" if schema else None

    def literal(self, value: Any) -> str:
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        return super().literal(value)

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE TABLE {table} {_EXPIRY} AS {select}"

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        def value(i: int, kind: str) -> str:
            text = f"JSON_VALUE(r, '$[{i}]')"
            return f"CAST({text} AS {_CASTS[kind]})" if kind in _CASTS else text
        values = ", ".join(value(i, k) for i, k in enumerate(kinds))
        return f"SELECT {values} FROM UNNEST(JSON_QUERY_ARRAY({self.placeholder})) AS r"


DIALECT = BigQueryDialect
