"""A test-only DB-API connection that runs Databricks SQL statements on a local Spark (Iceberg tables).

What is real: the statements. Every ``cursor.execute(sql, params)`` hands the exact text the
Databricks dialect built, with the exact parameters, to ``SparkSession.sql(text, args=...)``
of Apache Spark 3.5.6, which parses, binds (``?`` positionally for a list, ``:name`` for a dict:
the markers databricks-sql-connector's native parameters use, and Spark's own) and runs it on
Apache Iceberg 1.10.2 v2 tables (``MERGE``, ``UPDATE``, ``DELETE``, ``explode(from_json(...))``)
in a Hadoop catalog directory. Spark's errors arrive as the connector's
``databricks.sql.exc.ServerOperationError`` carrying Spark's own message, as a SQL warehouse's
do.

What is adapted: the transport and the table format. databricks-sql-connector itself cannot
talk to Spark's Thrift server (it refuses the server's Hive protocol version:
``expected server to use a protocol version >= SPARK_CLI_SERVICE_PROTOCOL_V2, instead got: 9``),
so this module stands in for it. Delta Lake's jars are not reachable here (not on PyPI, apt or
npm; no Maven Central), so tables are Iceberg's. Spark 3.5 reports no row counts for DML, where
Databricks returns ``num_affected_rows`` (the connector's ``rowcount``): ``rowcount`` is read
from the Iceberg snapshot the statement committed (tables are merge-on-read: ``added-records``
for ``INSERT``, ``UPDATE`` and ``MERGE`` without ``DELETE``, ``added-position-deletes`` for
``DELETE``), -1 where that cannot tell (as the connector's when the server reports none).
Parameter types are Spark's (``lit``: int → INT or BIGINT, str → STRING, None → VOID, a naive
datetime → TIMESTAMP in the session's zone, UTC), close to the connector's inferred native types
but not its code. A connection is a ``SparkSession.newSession()`` (its own current namespace,
one catalog for all), and each statement first makes it the calling thread's active session
(Iceberg's table loads ask for it). Concurrent runs are not tested here: Iceberg's optimistic
commits are not Delta's. Every statement is written to the file ``$NAMELOOKUP_SPARK_TRACE``
names, when set.
Commit and rollback do nothing: each statement commits on its own, as on Databricks.
:meth:`SparkConnection.kill` stands in for the network dropping the connection: what follows
fails as the connector's ``RequestError`` does then.

Example::

    conn = connect("localhost", "/sql/1.0/warehouses/local", "token", schema="test_1")  # as databricks.sql.connect
    cur = conn.cursor()
    cur.execute("SELECT ? AS a, ? AS b", [1, "x"])
    cur.fetchall()                                  # [Row(a=1, b='x')]
    cur.execute("SELECT :a AS a", {"a": 2})         # named markers take a dict
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_DML = re.compile(r"^\s*(INSERT\s+INTO|MERGE\s+INTO|UPDATE|DELETE\s+FROM)\s+([`\w.]+)", re.IGNORECASE)

ICEBERG = {
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.spark_catalog.type": "hadoop",
    # every connection (a new Spark session) reads the table's latest commit, as on Databricks
    "spark.sql.catalog.spark_catalog.cache-enabled": "false",
    **{f"spark.sql.catalog.spark_catalog.table-default.write.{op}.mode": "merge-on-read"
       for op in ("delete", "update", "merge")},
    **{f"spark.sql.catalog.spark_catalog.table-default.write.{op}distribution-mode": "none"
       for op in ("", "delete.", "update.", "merge.")},
}
"""Plain ``CREATE TABLE`` makes Iceberg v2 tables, written merge-on-read without shuffles."""


def start_spark(warehouse: Path, jars: Sequence[str]) -> Any:
    """A local Spark session (2 cores, no UI) whose default catalog keeps Iceberg tables in ``warehouse``;
    tuned for tables of a few thousand rows (no whole-stage code generation, no adaptive plans, one
    shuffle partition: a test's statements take half the time)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("namelookup-databricks")
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(jars),
                "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "2",
                "spark.sql.session.timeZone": "UTC", "spark.driver.memory": "1g",
                "spark.sql.codegen.wholeStage": "false", "spark.sql.adaptive.enabled": "false",
                "spark.sql.catalog.spark_catalog.warehouse": str(warehouse), **ICEBERG}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class SparkConnection:
    """One DB-API connection: a Spark session of its own (its current namespace), sharing the engine.

    :param spark: the shared session (its catalog and warehouse directory).
    :param namespace: the current namespace (Databricks' schema) of the connection.
    """

    def __init__(self, spark: Any, namespace: str) -> None:
        self.spark = spark.newSession()
        self.spark.sql(f"USE `{namespace}`")
        self.namespace = namespace
        self.open = True
        self.dropped = False
        self.autocommit = True

    def cursor(self) -> SparkCursor:
        self._check()
        return SparkCursor(self)

    def _check(self) -> None:
        from databricks.sql.exc import InterfaceError, RequestError

        if self.dropped:
            raise RequestError("Error during request to server: ('Connection aborted.', "
                               "ConnectionResetError(104, 'Connection reset by peer'))")
        if not self.open:
            raise InterfaceError("Cannot create cursor from closed connection")

    def kill(self) -> None:
        """The network drops the connection (the test's stand-in for a server ending it)."""
        self.dropped = True

    def commit(self) -> None:
        self._check()

    def rollback(self) -> None:
        self._check()

    def close(self) -> None:
        self.open = False


class SparkCursor:
    """A DB-API cursor over :meth:`SparkSession.sql`; rows are pyspark ``Row`` objects (tuples with
    ``__fields__``, as the connector's ``Row``)."""

    arraysize = 10_000

    def __init__(self, connection: SparkConnection) -> None:
        self.connection = connection
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self.query_id: str | None = None
        self._rows: list[Any] = []

    def execute(self, operation: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> SparkCursor:
        from databricks.sql.exc import ServerOperationError

        self.connection._check()
        spark = self.connection.spark
        args = None if parameters is None else (dict(parameters) if isinstance(parameters, Mapping)
                                                else list(parameters))
        _trace(f"[{id(self.connection):x} {self.connection.namespace}] {operation} {parameters!r:.200}")
        # the calling thread's JVM thread acts in this connection's session (Iceberg's table loads ask for it)
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        dml = _DML.match(operation)
        before = _snapshot(spark, dml[2]) if dml else None
        try:
            frame = spark.sql(operation, args=args)
            rows = frame.collect()
        except Exception as err:  # Spark's AnalysisException, ParseException, Iceberg's commit failures
            raise ServerOperationError(str(err).strip()) from err
        self.rowcount = -1
        if dml:
            self.description, self._rows = None, []
            self.rowcount = _affected(spark, dml[2], before, dml[1].split()[0].upper(), operation)
        elif frame.columns:
            self.description = [(f.name, f.dataType.simpleString(), None, None, None, None, f.nullable)
                                for f in frame.schema.fields]
            self._rows = rows
        else:
            self.description, self._rows = None, []
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> None:
        total = 0
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
            total += max(self.rowcount, 0)
        self.rowcount = total

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int | None = None) -> list[Any]:
        size = size or self.arraysize
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def close(self) -> None:
        self._rows = []


def _trace(line: str) -> None:
    """Every statement, in ``$NAMELOOKUP_SPARK_TRACE`` when set (a file)."""
    import os

    if path := os.environ.get("NAMELOOKUP_SPARK_TRACE"):
        with open(path, "a") as trace:
            trace.write(line + "\n")


def _table(spark: Any, name: str) -> Any:
    """The Iceberg table behind a statement's target name, through Iceberg's own API."""
    jvm = spark._jvm
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name.replace("`", ""))


def _snapshot(spark: Any, name: str) -> int | None:
    try:
        snapshot = _table(spark, name).currentSnapshot()
    except Exception:  # not a table (yet): the statement will say so
        return None
    return None if snapshot is None else int(snapshot.snapshotId())


def _affected(spark: Any, name: str, before: int | None, verb: str, operation: str) -> int:
    """Rows a DML statement affected, summed over the snapshots it committed after ``before``."""
    table = _table(spark, name)
    snapshot = table.currentSnapshot()
    total = 0
    while snapshot is not None and int(snapshot.snapshotId()) != before:
        summary = dict(snapshot.summary())
        if verb == "DELETE":
            total += int(summary.get("added-position-deletes", 0))
        elif verb == "MERGE" and re.search(r"\bTHEN\s+DELETE\b", operation, re.IGNORECASE):
            return -1  # updated and deleted rows share the position deletes: no telling them apart
        else:
            total += int(summary.get("added-records", 0))
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    return total


_SPARK: list[Any] = []
_FAILED: list[Exception] = []


def shared_spark() -> Any:
    """The test session's one Spark (the JVM takes seconds to start), on a fresh Iceberg warehouse
    directory removed at exit; raises what keeps it from starting (no pyspark, no Java, no jars:
    ``make spark``), and raises it again at once on later calls."""
    if _FAILED:
        raise _FAILED[0]
    if not _SPARK:
        import atexit
        import logging
        import shutil
        import tempfile

        from tests.warehouse.spark_jars import spark_jars

        try:
            jars = spark_jars(Path.home() / ".cache" / "airflow-provider-namelookup" / "spark")
            warehouse = Path(tempfile.mkdtemp(prefix="namelookup-iceberg-"))
            atexit.register(shutil.rmtree, warehouse, ignore_errors=True)
            spark = start_spark(warehouse, jars)
        except ImportError as err:
            _FAILED.append(ImportError(f"{err} (make spark installs pyspark and Iceberg's jars)"))
            raise _FAILED[0] from err
        except Exception as err:
            _FAILED.append(err)
            raise
        atexit.register(spark.stop)
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its "Closing down" lines, after pytest's streams
        _SPARK.append(spark)
    return _SPARK[0]


def connect(server_hostname: str | None = None, http_path: str | None = None, access_token: str | None = None,
            *, schema: str | None = None, **kwargs: Any) -> SparkConnection:
    """Stands in for ``databricks.sql.connect`` (what ``DatabricksSqlHook.get_conn`` calls): a
    connection to the shared Spark whose current namespace is ``schema``, created if missing."""
    spark = shared_spark()
    namespace = schema or "default"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{namespace}`")
    return SparkConnection(spark, namespace)
