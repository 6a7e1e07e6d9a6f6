"""The demo's closing report on a warehouse built by hand: it says why rows were kept with an
error (each rule with its count, and why the gender table has more of them) and why the service
saw fewer requests than lookups (issue 36, item 6). The whole demo runs in tests/test_demo.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from demo.report import print_report
from demo.warehouses import DemoWarehouse

TOO_LONG = "parameter-first-name-invalid [first_name]: first_name must be 1 to 50 characters, got 60"
NO_NAME = "mandatory-parameter-missing [first_name]: first_name is missing"
BAD_HINT = "invalid-country-code [country]: country must be a two-letter code from the country table, got 'XX'"


def _warehouse(tmp_path: Path) -> DemoWarehouse:
    """Ten customers: 5 answered, 2 names too long, 1 without a name, 2 with the hint ``XX``
    (errors in the gender table only: country of origin reads no hint)."""
    warehouse = DemoWarehouse("sqlite", tmp_path / "warehouse.db", "SQLite")
    rows = [(i, f"Name{i}", "DE", "ok", None) for i in range(1, 6)]
    rows += [(6, "x" * 60, "DE", "error", TOO_LONG), (7, "y" * 60, None, "error", TOO_LONG),
             (8, None, "FR", "error", NO_NAME), (9, "Anna", "XX", "error", BAD_HINT),
             (10, "Ute", "XX", "error", BAD_HINT)]
    db = sqlite3.connect(warehouse.path)
    db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)")
    db.execute("CREATE TABLE customers_gender (customer_id INTEGER, gender TEXT, probability REAL, status TEXT, "
               "error TEXT, credits_used INTEGER, query_hash TEXT)")
    db.execute("CREATE TABLE customers_origin (customer_id INTEGER, top_country TEXT, ethnicity TEXT, status TEXT, "
               "error TEXT, credits_used INTEGER, query_hash TEXT)")
    for key, name, country, status, error in rows:
        db.execute("INSERT INTO customers VALUES (?, ?, ?)", (key, name, country))
        db.execute("INSERT INTO customers_gender VALUES (?, 'female', 0.9, ?, ?, ?, ?)",
                   (key, status, error, 1 if status == "ok" else 0, f"g{key}" if status == "ok" else None))
        hint_only = error == BAD_HINT
        db.execute("INSERT INTO customers_origin VALUES (?, 'DE', 'GERMANIC', ?, ?, ?, ?)",
                   (key, "ok" if hint_only else status, None if hint_only else error,
                    2 if status == "ok" or hint_only else 0, f"o{key}" if status == "ok" or hint_only else None))
    db.commit()
    db.close()
    return warehouse


@pytest.fixture
def report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    # 7 origin requests (one name each), 1 gender request (5 queries), 2 credit checks
    print_report(_warehouse(tmp_path), [{"label": "first run", "seconds": 1.0, "remaining": 986}],
                 seed_credits=1_000, emulator_stats={"requests": 10, "queries_processed": 12})
    return capsys.readouterr().out


def test_each_rule_is_counted_per_table_and_said_why(report: str) -> None:
    assert "customers_gender: 5 rows enriched, 5 rows with errors" in report
    assert "customers_origin: 7 rows enriched, 3 rows with errors" in report
    lines = report.splitlines()
    counted = {line.strip().split(":")[0]: line.strip() for line in lines if line.startswith("  ") and "[" in line}
    assert counted["parameter-first-name-invalid [first_name]"].endswith("customers_gender 2, customers_origin 2")
    assert counted["mandatory-parameter-missing [first_name]"].endswith("customers_gender 1, customers_origin 1")
    assert counted["invalid-country-code [country]"].endswith("customers_gender 2, customers_origin 0"), report
    hint = lines[lines.index("  invalid-country-code [country]: customers_gender 2, customers_origin 0") + 1]
    assert "only the gender lookup reads the hint" in hint, report
    assert "in all: customers_gender 5, customers_origin 3; they differ by the rows of invalid-country-code" in report


def test_the_explanations_examples_hold() -> None:
    import doctest

    import demo.explain

    assert doctest.testmod(demo.explain, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE).failed == 0


def test_the_requests_are_explained_by_batching(report: str) -> None:
    assert "Service requests in all: 10, answering 12 lookups (5 gender, 7 country of origin):" in report
    assert "country of origin: one name a request (the service has no batch form for it): 7 requests" in report
    assert "gender: up to 100 queries a request: 5 lookups in 1 request at the least" in report
    assert "the other 2: credit checks" in report
