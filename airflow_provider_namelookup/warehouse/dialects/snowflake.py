"""Snowflake (``apache-airflow-providers-snowflake``, snowflake-connector-python).

What differs from the base: no indexes (micro-partitions are pruned, not indexed), naive
UTC ``TIMESTAMP_NTZ``, and keys that are declared but not enforced, so every fill is a
``MERGE`` (a table the run has just created included). Claims and upserts are the base's
``MERGE``; the map and the answers waiting to be stored live in session-private temporary
tables (``CREATE TEMPORARY TABLE ... AS``), loaded by one statement binding one JSON
document (``FLATTEN(INPUT => PARSE_JSON(...))``: a multi-row ``INSERT`` takes at most 16,384
rows). Each statement costs a round trip to the cloud service and warehouse time, so
answers are stored at most every 30 s.

Credits: Snowflake serialises DML on a table: a ``MERGE`` or ``UPDATE`` takes the table's
lock, and a second one waits for the first to commit, then sees its rows. A claim is one
``MERGE`` into the answers table, so of two runs claiming one query, the second finds the
first's claim and waits for its answer instead of paying. A deadlock Snowflake breaks by
aborting a statement is run again.

Example::

    dialect = SnowflakeDialect(SnowflakeHook("warehouse"))
    dialect.claim("namelookup_answers", "SELECT ...", reclaimable="...")   # 'MERGE INTO namelookup_answers a ...'
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    DriverErrors,
    EngineTraits,
    WarehouseDialect,
    cloud_tuning,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types

_CASTS = {"bool": "BOOLEAN", "int": "BIGINT", "float": "FLOAT", "decimal": "NUMBER(38, 10)",
          "datetime": "TIMESTAMP_TZ", "date": "DATE"}


class SnowflakeDialect(WarehouseDialect, name="snowflake", proof="emulator",
                       credit_promise=("DML on a table is serialised by its lock: a claim is one "
                                       "MERGE into the answers table, so a second run's claim of a "
                                       "query waits for the first's and finds it held")):
    """The spellings of Snowflake: what differs from the base is in this module's docstring."""

    engine = EngineTraits(naive_timestamps=True, enforces_keys=False, bulk_load=BulkLoad.JSON)
    types = column_types(text="VARCHAR({n})", longtext="VARCHAR", float="FLOAT",
                         int="INTEGER", bigint="BIGINT", timestamp="TIMESTAMP_NTZ")
    tuning = cloud_tuning(conflict_attempts=8, conflict_backoff_seconds=0.5)
    errors = DriverErrors(lock_conflict_words=("deadlock", "lock wait", "was aborted"))

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        return []

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        values = ", ".join(f"f.value[{i}]::VARCHAR" + (f"::{_CASTS[k]}" if k in _CASTS else "")
                           for i, k in enumerate(kinds))
        return f"SELECT {values} FROM TABLE(FLATTEN(INPUT => PARSE_JSON({self.placeholder}))) AS f"


DIALECT = SnowflakeDialect
