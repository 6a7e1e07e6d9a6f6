"""Databricks SQL (``apache-airflow-providers-databricks``: ``DatabricksSqlHook``, Delta tables).

What differs from the base: no session-private temporary tables on every workspace, so
the map and the answers waiting to be stored are **staging Delta tables** beside the
answers table, named for the run and dropped at its end; no ``UPDATE ... FROM``, so
updates from a join are ``MERGE ... WHEN MATCHED THEN UPDATE``; no primary keys outside
Unity Catalog (and none enforced), so every fill is a ``MERGE``; no indexes; a schema's tables
listed by ``SHOW TABLES`` (``information_schema`` is Unity Catalog's alone); backslash
escapes in string literals; bulk loads as one statement binding one JSON document
(``explode(from_json(...))``), since ``executemany`` sends a statement per row; answers
stored at most every 30 s; parameters at ``?`` (databricks-sql-connector's native binding, not
the hook's ``%s``); a new connection each time (``DatabricksSqlHook.get_conn`` hands back its
last one, lost or closed); ``DatabricksSqlHook`` on a ``databricks`` connection, whose registered
hook is the REST API's.

Credits: Delta commits optimistically: a ``MERGE`` reads the answers table, so of two
runs' claims of one query the second to commit fails with a concurrent-modification
error (``ConcurrentAppendException`` and its kin), and the engine runs it again; it then
finds the query claimed.

Example::

    dialect = DatabricksDialect(DatabricksSqlHook("warehouse"))
    dialect.update_from("t", "t0", [("credits_used", "c.price")], "(SELECT ...)", "t0.query_hash = c.query_hash")
    # 'MERGE INTO t t0 USING (SELECT ...) c ON t0.query_hash = c.query_hash WHEN MATCHED THEN UPDATE SET ...'
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks

from airflow_provider_namelookup.third_party import fresh_databricks_connection
from airflow_provider_namelookup.warehouse.dialects.base import DriverErrors, WhereSpelling, cloud_tuning
from airflow_provider_namelookup.warehouse.dialects.cloud import CloudTableDialect
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.where_literals import (
    UnwritableString,
    backslash_escapes,
    quotes_as,
)

_CASTS = {"bool": "BOOLEAN", "int": "BIGINT", "float": "DOUBLE", "decimal": "DECIMAL(38, 10)",
          "datetime": "TIMESTAMP", "date": "DATE"}


@lru_cache(maxsize=1024)
def _written_as_is(character: str) -> bool:
    """sqlglot writes ``character`` in a Databricks string as itself (not as an escape such as ``\\n``)."""
    return bool(exp.Literal.string(character).sql("databricks") == f"'{character}'")


# proof: Apache Spark 3.5.6 (the engine Databricks SQL grew from) ran every statement of whole runs on Iceberg
# tables (no Delta Lake here) through a test-only DB-API adapter (tests/warehouse/spark_dbapi.py)
class DatabricksDialect(CloudTableDialect, name="databricks", proof="emulator",
                        credit_promise=("Delta's optimistic commits: of two runs' MERGE claims of one"
                                        " query the second fails with a concurrent-modification error"
                                        " and is run again, finding the query held")):
    """The spellings of Databricks SQL: what differs from the base is in this module's docstring."""

    types = column_types(text="STRING", longtext="STRING", float="DOUBLE",
                         int="INT", bigint="BIGINT", timestamp="TIMESTAMP")
    engine = CloudTableDialect.engine.changed(
        naive_timestamps=True,
        listed_name_column=1,  # SHOW TABLES: database, tableName, isTemporary
        # a databricks connection's registered hook is the REST API's DatabricksHook
        sql_hook=("airflow.providers.databricks.hooks.databricks_sql", "DatabricksSqlHook", "databricks_conn_id"))
    tuning = cloud_tuning(conflict_attempts=10, conflict_backoff_seconds=0.5)
    errors = DriverErrors(lock_conflict_words=("concurrent", "conflicting commit"),
                          duplicate_key_words=("already exists", "table_or_view_already_exists"))
    where = WhereSpelling(
        readings=(backslash_escapes("spark.sql.parser.escapedStringLiterals = true", Databricks),
                  quotes_as("spark.sql.ansi.doubleQuotedIdentifiers = true", Databricks, strings=["'"],
                            identifiers=["`", '"'])),
        string_forms=(exp.Concat, exp.Chr))

    @classmethod
    def where_string(cls, value: str) -> str:
        r"""``'...'``, with each quote, backslash or control character written as ``CHR(n)`` in a
        ``CONCAT``: a quote can only be written escaped (``\'``) or in double quotes, and
        ``spark.sql.parser.escapedStringLiterals`` keeps escapes as written while
        ``spark.sql.ansi.doubleQuotedIdentifiers`` makes ``"..."`` a name.

        >>> DatabricksDialect.where_string("O'Neil")
        "CONCAT('O', CHR(39), 'Neil')"
        """
        if "'" not in value and "\\" not in value and value.isprintable():
            return super().where_string(value)
        parts: list[exp.Expression] = []
        for character in value:
            if _written_as_is(character):
                if parts and isinstance(parts[-1], exp.Literal):
                    parts[-1] = exp.Literal.string(parts[-1].this + character)
                else:
                    parts.append(exp.Literal.string(character))
            elif ord(character) < 128:
                parts.append(exp.Chr(expressions=[exp.Literal.number(ord(character))]))
            else:
                raise UnwritableString(f"on databricks a where's string holds no character U+{ord(character):04X}: "
                                       "it can only be written as an escape, which a setting reads otherwise")
        if not parts or (len(parts) == 1 and isinstance(parts[0], exp.Literal)):
            return super().where_string(value)
        return exp.Concat(expressions=parts, safe=True, coalesce=False).sql("databricks")


    def table_names(self, schema: str | None) -> str | None:
        """``SHOW TABLES``: Spark's, and every Databricks catalog's (``information_schema`` is Unity
        Catalog's alone)."""
        return f"SHOW TABLES IN {self.quote(schema)}" if schema else "SHOW TABLES"

    @cached_property
    def placeholder(self) -> str:
        """``?``: databricks-sql-connector (3.0 on) binds parameters natively, a list at ``?`` markers,
        while ``DatabricksSqlHook`` keeps common-sql's ``%s`` (a syntax error on the server); ``%s``
        where the connection asks for the connector's client-side ``use_inline_params`` (read once
        per dialect, that is per run, as common-sql's own ``placeholder`` is read once per hook)."""
        params = dict(getattr(self.hook, "additional_params", None) or {})
        with contextlib.suppress(Exception):  # the hook's connection, when it has one
            params = {**self.hook.databricks_conn.extra_dejson, **params}
        return "%s" if params.get("use_inline_params") else "?"

    @staticmethod
    def connect(hook: Any) -> Any:
        """A new connection each time: ``DatabricksSqlHook.get_conn`` hands back the last one it made,
        closed or lost included, so a run's store after a lost connection would fail on the dead one
        (and lose answers paid for), and a second session of the run would share the first's. The
        hook's own ``run`` forgets its connection the same way after closing it (a reach into the
        hook's private attribute: :mod:`airflow_provider_namelookup.third_party`)."""
        return fresh_databricks_connection(hook)

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE TABLE {table} AS {select}"

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        values = ", ".join(f"CAST(r[{i}] AS {_CASTS[k]})" if k in _CASTS else f"r[{i}]" for i, k in enumerate(kinds))
        return (f"SELECT {values} FROM (SELECT explode(from_json({self.placeholder}, 'array<array<string>>')) AS r) "
                f"AS j")

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        sets = ", ".join(f"{alias}.{column} = {expression}" for column, expression in assignments)
        return f"MERGE INTO {table} {alias} USING {source} c ON {condition} WHEN MATCHED THEN UPDATE SET {sets}"


DIALECT = DatabricksDialect
