"""DuckDB: one writing process per file (a second process's run is refused, naming the rule,
before it spends anything). (The table operators' own tests run on DuckDB files too: the
``warehouse`` fixture; its statements are parsed in test_recorded_runs.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

HOLDER = textwrap.dedent("""
    import sys, duckdb
    conn = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    sys.stdin.read()
""")


def test_a_run_on_a_file_another_process_holds_is_refused_before_it_spends(duckdb_warehouse: Any,
                                                                          namelookup: Any) -> None:
    warehouse = duckdb_warehouse
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator
    from airflow_provider_namelookup.warehouse.dialects.duckdb import DuckDBFileInUse

    table = warehouse.create_customers([(1, "Anna", None), (2, "Ben", None)])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, warehouse.conn["host"]], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        operator = SqlGenderLookupOperator(task_id="enrich", conn_id=warehouse.conn_id, source_table=table,
                                           key_column="customer_id", name_column="name")
        with pytest.raises(DuckDBFileInUse) as refused:
            operator.execute({})
    finally:
        holder.communicate("", timeout=30)
    message = str(refused.value)
    assert "one writing process per database file" in message and f"(PID {holder.pid})" in message
    assert warehouse.conn["host"] in message and "has spent nothing" in message
    assert namelookup.remaining() == 100

    summary = operator.execute({})  # the file is free again: the run goes ahead
    assert summary["credits_used"] == 2 and namelookup.remaining() == 98
