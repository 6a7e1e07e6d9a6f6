"""Rows as an Arrow table (DuckDB's bulk load): exactly the values given, or None."""

from __future__ import annotations

import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.arrow_rows import arrow_table

pa = pytest.importorskip("pyarrow", reason="the duckdb extra (in the test extra) installs it")


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
