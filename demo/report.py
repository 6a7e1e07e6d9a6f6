"""The demo's closing report, read from the warehouse the DAG enriched.

Example::

    print_report(demo_warehouse("sqlite", Path(".demo")), runs, seed_credits=20_000, emulator_stats={...})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from demo.explain import error_lines, request_lines, rule_of

if TYPE_CHECKING:
    from demo.warehouses import DemoWarehouse


def _table(rows: list[tuple[Any, ...]], headers: tuple[str, ...]) -> str:
    cells = [headers, *[tuple("" if v is None else str(v) for v in row) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(f"    {line}" for line in lines)


COUNTED = {
    "customers_gender": ("first name and country hint", 1),
    "customers_origin": ("first name alone: no hint is read", 2),
}
"""What one query of each target is, and its price in credits: what the credits count."""


def _count(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def _errors_by_rule(q: Any) -> dict[str, dict[str, int]]:
    """Rows kept with an error in each target, counted by the rule they break."""
    counts: dict[str, dict[str, int]] = {}
    for table in COUNTED:
        for (error,) in q(f"SELECT error FROM {table} WHERE status = 'error'"):
            by_table = counts.setdefault(rule_of(str(error)), {})
            by_table[table] = by_table.get(table, 0) + 1
    return counts


def print_report(warehouse: DemoWarehouse, runs: list[dict[str, Any]], *, seed_credits: int,
                 emulator_stats: dict[str, Any]) -> None:
    db = warehouse.connect()
    try:
        q = lambda sql: db.execute(sql).fetchall()  # noqa: E731
        customers = q("SELECT COUNT(*) FROM customers")[0][0]
        distinct = q("SELECT COUNT(DISTINCT lower(trim(first_name))) FROM customers")[0][0]
        print("\n================ Name Lookup demo: summary ================")
        print(f"Warehouse: {warehouse.label}, {warehouse.path}")
        print(f"Customers: {_count(customers, 'row', 'rows')}, {distinct:,} distinct first names")
        print("  (the service is paid per distinct query; a gender query is a first name with its row's country")
        print("   hint, so one name with two countries is two queries: the credits count queries, not names)")
        queries_of: dict[str, int] = {}
        for table, (query, price) in COUNTED.items():
            by_status = dict(q(f"SELECT status, COUNT(*) FROM {table} GROUP BY status"))
            credits = q(f"SELECT COALESCE(SUM(credits_used), 0) FROM {table}")[0][0]
            queries = queries_of[table] = q(f"SELECT COUNT(DISTINCT query_hash) FROM {table} WHERE status = 'ok'")[0][0]
            print(f"{table}: {_count(by_status.get('ok', 0), 'row', 'rows')} enriched, "
                  f"{_count(by_status.get('error', 0), 'row with an error', 'rows with errors')} (free)")
            print(f"    {credits:,} credits for {_count(queries, 'distinct query', 'distinct queries')} ({query}), "
                  f"{_count(price, 'credit', 'credits')} each")
        previous = seed_credits
        for run in runs:
            print(f"  {run['label']}: {previous - run['remaining']:,} credits spent in {run['seconds']:.1f} s")
            previous = run["remaining"]
        for line in request_lines(requests=emulator_stats.get("requests", 0),
                                  lookups=emulator_stats.get("queries_processed", 0),
                                  gender=queries_of["customers_gender"], origin=queries_of["customers_origin"]):
            print(line)

        print("\nSample of the enriched table:")
        print(_table(q("""SELECT c.customer_id, c.first_name, c.country, g.gender, round(g.probability, 2),
                                 o.top_country, o.ethnicity
                          FROM customers c JOIN customers_gender g USING (customer_id)
                          LEFT JOIN customers_origin o USING (customer_id)
                          WHERE g.status = 'ok' ORDER BY c.customer_id LIMIT 10"""),
                     ("id", "first_name", "country", "gender", "p", "origin", "ethnicity")))

        print("\nGender split by country (rows with a country):")
        print(_table(q("""SELECT c.country, COUNT(*),
                                 SUM(CASE WHEN g.gender = 'female' THEN 1 ELSE 0 END),
                                 SUM(CASE WHEN g.gender = 'male' THEN 1 ELSE 0 END),
                                 SUM(CASE WHEN g.gender = 'unknown' THEN 1 ELSE 0 END)
                          FROM customers c JOIN customers_gender g USING (customer_id)
                          WHERE g.status = 'ok' AND c.country IS NOT NULL
                          GROUP BY c.country ORDER BY COUNT(*) DESC"""),
                     ("country", "rows", "female", "male", "unknown")))

        print("\nRows kept with an error, by the rule they break (they cost nothing):")
        for line in error_lines(_errors_by_rule(q), tuple(COUNTED)):
            print(line)
        print("  the first of them in customers_gender:")
        print(_table(q("""SELECT customer_id, error FROM customers_gender
                          WHERE status = 'error' ORDER BY customer_id LIMIT 5"""), ("id", "error")))
        print()
    finally:
        db.close()
