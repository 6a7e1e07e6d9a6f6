"""The SQLite warehouses the table benchmark enriches, and what is known about them up front.

Each warehouse holds one table ``customers(customer_id INTEGER PRIMARY KEY, first_name,
country)`` filled from :func:`~namelookup_emulator.sample.customer_rows`:
real name frequencies per country, so a few names repeat very often, and about 1% of
rows invalid on purpose. :class:`TableFacts` counts, independently of the table
operator, what a correct run must pay for: the distinct valid queries, by the spec's
own normalisation rules (:func:`~airflow_provider_namelookup.engine.plan.plan_name`
applied once per distinct ``(first_name, country)`` pair).

Example::

    facts = build_customers(Path("/tmp/w.db"), rows=100_000, seed=2026)
    facts.distinct_queries, facts.named_rows         # (19094, 99610)
    sqlite_connection_env("bench_warehouse", Path("/tmp/w.db"))
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules, plan_name
from namelookup_emulator.sample import customer_rows

SCHEMA = "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)"


@dataclass(frozen=True)
class TableFacts:
    """What is in a customers table.

    :param named_rows: rows whose name is neither None nor empty (what the naive loop sends).
    :param distinct_names: distinct ``first_name`` values, as stored.
    :param distinct_queries: distinct valid queries after normalisation (name and country
        hint): the credits a run without repeats must spend.
    :param invalid_rows: rows breaking a rule (empty or overlong name, unknown country).
    """

    path: str
    rows: int
    named_rows: int
    distinct_names: int
    distinct_queries: int
    invalid_rows: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_customers(path: Path, rows: int, *, seed: int) -> TableFacts:
    """Create ``path`` (replacing it) with ``rows`` customers; return its facts."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(SCHEMA)
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)", customer_rows(rows, seed=seed))
    db.close()
    return table_facts(path)


def table_facts(path: Path, lookup: LookupKind = LookupKind.GENDER) -> TableFacts:
    """Count the facts of an existing customers table.

    :param lookup: whose queries to count: gender queries carry the country hint;
        country-of-origin queries are the name alone (the operator reads no hint column).
    """
    spec = QueryRules(lookup)
    hinted = lookup.takes_hints
    db = sqlite3.connect(path)
    try:
        total, named, names = db.execute(
            "SELECT COUNT(*), COUNT(CASE WHEN first_name <> '' THEN 1 END), COUNT(DISTINCT first_name) "
            "FROM customers").fetchone()
        pairs = db.execute("SELECT first_name, country, COUNT(*) FROM customers GROUP BY first_name, country")
        valid: set[str] = set()
        invalid = 0
        for name, country, repeats in pairs:
            planned = plan_name(name, spec, country=country if hinted else None)
            if planned.query is None:
                invalid += repeats
            else:
                valid.add(planned.query_hash)
    finally:
        db.close()
    return TableFacts(path=str(path), rows=total, named_rows=named, distinct_names=names,
                      distinct_queries=len(valid), invalid_rows=invalid)


def sqlite_connection_env(conn_id: str, path: Path) -> dict[str, str]:
    """The ``AIRFLOW_CONN_*`` variable of an SQLite connection to ``path``."""
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps({"conn_type": "sqlite", "host": str(path)})}
