"""H2 (2.1, embedded in the test process through JPype's DB-API over its JDBC driver): a warehouse
dialect written from the docs' page "Adding a warehouse" alone, and proved by the compliance
suite (``tests/contrib/test_h2_compliance.py``). Not a supported warehouse of the provider: H2
has no Airflow provider, and it is here to show what adding one takes.

What differs from the base: no ``UPDATE ... FROM`` (an update from a join is ``MERGE ...
WHEN MATCHED THEN UPDATE``), temporary tables are ``LOCAL TEMPORARY``, a key column made by
``CREATE TABLE ... AS`` is nullable until told otherwise, while ``CASE WHEN 1 = 0 THEN x END``
is folded to a column of no type (a nullable copy of a column is spelled without a constant
condition), naive UTC timestamps, and its
driver's errors worded its own way.

Credits: a claim is the standard ``MERGE`` into the answers table; of two runs inserting one
query, the second waits on the first's row lock and then fails on the primary key, which the
engine runs again (it then finds the query claimed). Fix-ups of one query's price lock its
answers row (``SELECT ... FOR UPDATE``).

Example::

    house = DbApiWarehouse(lambda: connect(tmp_path / "db"), H2Dialect)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import DriverErrors, EngineTraits, WarehouseDialect

H2_JAR = Path("/usr/share/java/h2.jar")
"""Debian's libh2-java (``make h2`` installs it)."""


# sqlglot_name: sqlglot has no H2; a where is written back in its nearest standard SQL
class H2Dialect(WarehouseDialect, name="h2", sqlglot_name="postgres",
                credit_promise=("claims are MERGE inserts on the answers table's primary key: of two "
                                "runs, the second waits on the first's row lock, fails on the key, "
                                "and is run again, finding the query held")):
    """The spellings of H2: what differs from the base is in this module's docstring."""

    engine = EngineTraits(naive_timestamps=True)
    errors = DriverErrors(lock_conflict_words=("unique index or primary key violation", "deadlock",
                                               "timeout trying to lock", "concurrent update"))

    def nullable_like(self, expression: str) -> str:
        return f"CASE WHEN {expression} IS NULL THEN {expression} END"  # H2 folds CASE WHEN 1 = 0 to an untyped NULL

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE LOCAL TEMPORARY TABLE {table} AS {select}"

    def add_primary_key(self, table: str, key: str) -> list[str]:
        return [f"ALTER TABLE {table} ALTER COLUMN {key} SET NOT NULL", f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"]

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        sets = ", ".join(f"{column} = {expression}" for column, expression in assignments)
        return f"MERGE INTO {table} AS {alias} USING {source} c ON {condition} WHEN MATCHED THEN UPDATE SET {sets}"

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        return f"SELECT a.query_hash FROM {answers} a WHERE a.query_hash IN ({chosen}) ORDER BY a.query_hash FOR UPDATE"


def connect(path: Path) -> Any:
    """A DB-API connection to the H2 database at ``path`` (the JVM started on first use), in a transaction."""
    import jpype
    import jpype.dbapi2

    if not jpype.isJVMStarted():
        jpype.startJVM(classpath=[str(H2_JAR)])
    conn = jpype.dbapi2.connect(f"jdbc:h2:{path};DATABASE_TO_LOWER=TRUE;LOCK_TIMEOUT=10000", driver="org.h2.Driver")
    conn.autocommit = False
    return conn
