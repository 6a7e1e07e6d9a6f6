"""Rows as an Arrow table (DuckDB's bulk load): exactly the values given, or None."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse import arrow_rows
from airflow_provider_namelookup.warehouse.arrow_rows import arrow_table

pa = pytest.importorskip("pyarrow", reason="the duckdb extra (in the test extra) installs it")
HAS_PANDAS = importlib.util.find_spec("pandas") is not None


@pytest.fixture(autouse=True)
def _pandas_imported() -> None:
    """As in a worker whose DAG files import pandas: converting then imports nothing."""
    if HAS_PANDAS:
        importlib.import_module("pandas")


def test_each_column_keeps_its_values_and_their_type() -> None:
    rows = [("Anna", 1, 0.5, True, date(2026, 1, 2), Decimal("1.50"), b"\x00x", None),
            (None, 2**63 - 1, None, False, None, None, None, None)]
    table = arrow_table(rows, 8)
    assert table is not None and table.num_rows == 2
    assert [tuple(row.values()) for row in table.to_pylist()] == rows
    assert [str(t) for t in table.schema.types] == ["string", "int64", "double", "bool", "date32[day]",
                                                    "decimal128(3, 2)", "binary", "null"]


@pytest.mark.parametrize("column", [
    ["Anna", 7],                       # a text and a number
    [1, 2.5],                          # Arrow would make the integer a float
    [b"x", "y"],                       # Arrow would make the text bytes
    [True, 1],                         # a bool is not an integer here
    [2**64],                           # past 64 bits
    ["\ud800"],                        # a lone surrogate: no UTF-8
    [datetime(2026, 1, 1), "2026-01-01"],
])
def test_a_column_arrow_cannot_hold_exactly_gives_none(column: list[Any]) -> None:
    assert arrow_table([(value,) for value in column], 1) is None


def test_without_pyarrow_there_is_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert arrow_table([("Anna",)], 1) is None



@pytest.mark.skipif(not HAS_PANDAS, reason="pandas is not installed: pyarrow converts without it")
def test_a_fresh_process_binds_lists_rather_than_import_pandas() -> None:
    """pyarrow's first conversion of a list imports pandas when installed (0.2 s inside a task's
    run): a process that has not imported it gets lists, and still has not; once it has, Arrow."""
    program = (
        "import sys\n"
        "from airflow_provider_namelookup.warehouse.arrow_rows import arrow_table\n"
        "print(arrow_table([('Anna', 1)], 2) is None, 'pandas' in sys.modules)\n"
        "import pandas\n"
        "print(arrow_table([('Anna', 1)], 2).to_pylist())\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == ["True False", "[{'c0': 'Anna', 'c1': 1}]"]


def test_without_pandas_installed_arrow_converts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_rows, "_pandas_installed", lambda: False)
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert arrow_rows.converts_without_pandas()
    table = arrow_table([("Anna", 1)], 2)
    assert table is not None and table.to_pylist() == [{"c0": "Anna", "c1": 1}]
    monkeypatch.setattr(arrow_rows, "_pandas_installed", lambda: True)  # installed, not imported: lists
    assert not arrow_rows.converts_without_pandas() and arrow_table([("Anna", 1)], 2) is None
