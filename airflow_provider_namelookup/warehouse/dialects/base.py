"""The warehouse contract: what the table engine needs from a warehouse, written once.

A dialect builds every statement the engine sends (its modules write no SQL); the run's session
(:mod:`airflow_provider_namelookup.warehouse.session`) sends them. (common-sql's ``Dialect`` both
builds statements and runs them through its hook; here the two are apart, so that one session
counts, retries and reconnects for every warehouse.) :class:`WarehouseDialect` is the contract,
grouped by what the engine needs, each group a module of its own with the standard-SQL default
of every statement and an example:

======================================  =====================================================================
group                                   what the engine does with it
======================================  =====================================================================
:class:`~.spelling.Spelling`            names, literals, bind markers, column types, casts, equality
:class:`~.reading.SourceReading`        a run's connections; read a row of the source, or all; the distinct pass
:class:`~.run_tables.RunTables`         the run's own tables (the raw-value map, its chunks) and bulk loads into them
:class:`~.claims.AnswersStatements`     the shared answers table: claims with a lease (renewed, released), reads, stores
:class:`~.fill.FillStatements`          the target: made like the source, filled from the resolved map, prices fixed up
:class:`~.erasure.ErasureStatements`    ``erasure``: erasure of people (tombstones in the answers table), retention
:class:`~.traits.DriverErrors`          the driver's errors classified: lock conflict, lost connection, duplicate key
======================================  =====================================================================

**What a dialect must write** is :data:`MUST_WRITE` (what no default can say, given in its class
statement), and what its own
choices bind it to (:data:`MUST_WRITE_WHEN`: ``engine = EngineTraits(bulk_load=BulkLoad.JSON)`` needs
``json_select``, a ``claim`` of its own needs its ``claim_params``). What the engine does that
changes how a run works with it (its keys, claims, ``RETURNING``, bulk loads, temporary tables) is
one value, :class:`~.engine_traits.EngineTraits` (``engine``); what a ``where`` may call and how
the engine may read it, another (:class:`~.where_spelling.WhereSpelling`, ``where``). Everything
else has a default that most warehouses share, and is overridden only where the engine spells it
differently. The check runs when the class is defined, so a dialect missing one fails at import,
naming what is missing (:class:`IncompleteDialect`). Whether the SQL is right is the compliance suite's business
(:mod:`airflow_provider_namelookup.testing.compliance`).

Example::

    class FirebirdDialect(WarehouseDialect, name="firebird",
                          credit_promise="claims are MERGE inserts that conflict on the answers table's primary key"):
        types = column_types(text="VARCHAR({n})", longtext="BLOB SUB_TYPE TEXT", float="DOUBLE PRECISION",
                             int="INTEGER", bigint="BIGINT", timestamp="TIMESTAMP")

    FirebirdDialect(hook).claim("answers", "SELECT ...", reclaimable="...")   # the standard MERGE
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.claims import LeaseStatements
from airflow_provider_namelookup.warehouse.dialects.engine_traits import ClaimProtocol, EngineTraits
from airflow_provider_namelookup.warehouse.dialects.erasure import ErasureStatements
from airflow_provider_namelookup.warehouse.dialects.fill import FillStatements, PriceFixUps
from airflow_provider_namelookup.warehouse.dialects.reading import SourceReading
from airflow_provider_namelookup.warehouse.dialects.spelling import COLUMN_KINDS, PROOFS
from airflow_provider_namelookup.warehouse.dialects.traits import (
    BulkLoad,
    DriverErrors,
    Names,
    Tuning,
    Unchanged,
    cloud_tuning,
    json_rows,
    value_kinds,
)
from airflow_provider_namelookup.warehouse.dialects.where_spelling import WhereSpelling

__all__ = [
    "MUST_WRITE",
    "MUST_WRITE_WHEN",
    "BulkLoad",
    "ClaimProtocol",
    "DriverErrors",
    "EngineTraits",
    "IncompleteDialect",
    "LeaseStatements",
    "Names",
    "OnConflictDialect",
    "PriceFixUps",
    "Tuning",
    "Unchanged",
    "WarehouseDialect",
    "WhereSpelling",
    "cloud_tuning",
    "json_rows",
    "value_kinds",
]

MUST_WRITE: dict[str, str] = {
    "name": "the engine's name (messages, the docs' table of warehouses; a built-in one's module is named after it)",
    "credit_promise": "how the engine's keys, locks or commits let exactly one of two runs claiming a query win it",
}
"""What every dialect says of its engine in its class statement (``class MyDialect(WarehouseDialect,
name=..., credit_promise=...)``), and what each is for."""

MUST_WRITE_WHEN: tuple[tuple[str, str, str], ...] = (
    ("engine.bulk_load = BulkLoad.JSON", "json_select", "the SELECT that reads the bound JSON document's rows"),
    ("engine.bulk_load = BulkLoad.LITERALS", "insert_literals", "the INSERT statements of the rows as literals"),
    ("engine.bulk_load = BulkLoad.ARROW", "insert_arrow", "the INSERT that reads an Arrow table in place"),
    ("a claim of its own", "claim_params", "as many parameters, in the order its markers stand"),
    ("engine.claim_protocol = ClaimProtocol.SINGLE_WRITER", "writer_lease",
     "the statements that take, read and retire the answers table's writer lease"),
)
"""What a dialect's own choices bind it to write: (when, what, why)."""


RETIRED_NAMES: dict[str, str] = {
    **{field.name: f"engine = EngineTraits({field.name}=...)" for field in dataclasses.fields(EngineTraits)},
    "where_functions": "where = WhereSpelling(functions=...)",
    "where_readings": "where = WhereSpelling(readings=...)",
    "where_string_forms": "where = WhereSpelling(string_forms=...)",
    **{name: f"_{name}" for name in ("percent_escaped", "insert_claim", "insert_claim_params", "merge_claim",
                                     "target_columns", "column_type")},
    **{name: f"erasure.{name}: a subclass of ErasureStatements that erasure returns" for name in (
        "rows_of_keys", "rows_with_values", "echoed_names", "delete_where_in", "erase_answers", "existing_hashes",
        "insert_tombstone", "delete_erased_rows", "count_erased_since", "delete_answers_before")},
}
"""Names a dialect class wrote before they were grouped (issue 52) or became building blocks of its
own, and their spelling now: a dialect that still writes one fails when it is defined, naming the
new spelling, rather than having what it wrote ignored."""


class IncompleteDialect(TypeError):
    """A dialect class lacks what the contract says it must write (raised when it is defined)."""


class WarehouseDialect(SourceReading, FillStatements):
    """The statements and traits of one warehouse (see the module docstring for the groups and
    what a subclass must write).

    :param hook: the warehouse's common-sql ``DbApiHook`` (quoting and the bind marker come from it).
    """

    @cached_property
    def erasure(self) -> ErasureStatements:
        """The statements of erasure and retention, spelled by this dialect (:class:`~.erasure.ErasureStatements`)."""
        return ErasureStatements(self)

    def __init_subclass__(cls, *, abstract: bool = False, name: str | None = None, credit_promise: str | None = None,
                          proof: str | None = None, sqlglot_name: str | None = None, **kwargs: Any) -> None:
        """Take what a dialect says of its engine (``class MyDialect(WarehouseDialect, name="...",
        credit_promise="...")``: :data:`MUST_WRITE`, ``proof`` and ``sqlglot_name``) and check the
        contract (``abstract=True``: a shared refinement of the base, such as :class:`OnConflictDialect`,
        checked in its subclasses)."""
        super().__init_subclass__(**kwargs)
        retired = [f"{old} (now {RETIRED_NAMES[old]})" for old in vars(cls) if old in RETIRED_NAMES]
        if retired:
            raise IncompleteDialect(f"{cls.__module__}.{cls.__qualname__} writes names the dialect contract no longer "
                                    f"has: {'; '.join(retired)} (docs: Adding a warehouse)")
        said = {"name": name, "credit_promise": credit_promise, "proof": proof, "sqlglot_name": sqlglot_name}
        for attribute, value in said.items():
            if value is not None:
                setattr(cls, attribute, value)
        if not abstract:
            missing = contract_gaps(cls)
            if missing:
                raise IncompleteDialect(f"{cls.__module__}.{cls.__qualname__} must write: {'; '.join(missing)} "
                                        "(docs: Adding a warehouse)")


def contract_gaps(cls: type[WarehouseDialect]) -> list[str]:
    """What ``cls`` lacks of the contract, each named with why (empty: nothing).

    >>> class Half(WarehouseDialect, abstract=True):
    ...     engine = EngineTraits(bulk_load=BulkLoad.JSON)
    >>> [gap.split(" ")[0] for gap in contract_gaps(Half)]
    ['name', 'credit_promise', 'json_select']
    """
    own = _written_below(cls, WarehouseDialect)
    missing = [f"{attribute} ({why})" for attribute, why in MUST_WRITE.items() if attribute not in own]
    wants = {"json_select": cls.engine.bulk_load is BulkLoad.JSON and "json_select" not in own,
             "insert_literals": cls.engine.bulk_load is BulkLoad.LITERALS and "insert_literals" not in own,
             "insert_arrow": cls.engine.bulk_load is BulkLoad.ARROW and "insert_arrow" not in own,
             "claim_params": not _claim_markers_match(cls),
             "writer_lease": cls.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER and "writer_lease" not in own}
    missing += [f"{what} ({when}: {why})" for when, what, why in MUST_WRITE_WHEN if wants[what]]
    if not set(COLUMN_KINDS) <= set(cls.types):
        lacking = ", ".join(k for k in COLUMN_KINDS if k not in cls.types)
        missing.append(f"types of {lacking} (every column kind's type)")
    if cls.proof not in PROOFS:
        missing.append(f"proof as one of {', '.join(PROOFS)} (got {cls.proof!r})")
    return missing


def _written_below(cls: type, base: type) -> set[str]:
    """The names written by ``cls`` or a class between it and ``base``."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is base:
            break
        names |= set(vars(klass))
    return names


class _MarkerHook:
    """What a claim statement is built with when the contract counts its markers: ``?`` markers."""

    placeholder = "?"


def _claim_markers_match(cls: type[WarehouseDialect]) -> bool:
    """:meth:`~.claims.AnswersStatements.claim` has as many ``?`` markers as its ``claim_params``."""
    dialect = cls(_MarkerHook())
    dialect.__dict__["placeholder"] = "?"  # a dialect reading its marker off the hook in its own way
    statement = dialect.claim("answers", "SELECT query_hash FROM m WHERE chunk = ?", reclaimable="(a.x < ?)")
    params = dialect.claim_params([1], [2], owner="o", lease=0.0, lookup="gender")
    return statement.count("?") == len(params)


class OnConflictDialect(WarehouseDialect, abstract=True):
    """Claims and upserts as ``INSERT ... SELECT ... ON CONFLICT (...) DO UPDATE`` (SQLite,
    PostgreSQL, DuckDB), in place of the base's ``MERGE``.

    ``WHERE 1 = 1`` keeps SQLite from reading ``ON CONFLICT`` as the derived table's join
    constraint; the others ignore it. A claim is judged by its row count (``INSERT ... ON CONFLICT``
    counts the rows it inserted or took over), so the common claim (nobody else holds any of its
    queries) is one statement: all three engines count them, and taking in ``RETURNING`` rows cost
    each more (SQLite a wait for the interpreter per row; PostgreSQL and DuckDB more CPU, measured in
    ``benchmarks/results_in_task.md``).

    Example::

        class SqliteDialect(OnConflictDialect): ...
    """

    engine = WarehouseDialect.engine.changed(claim_counts_rows=True)

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        return (f"{self._insert_claim(answers, chosen, alias=' AS a')} WHERE 1 = 1 "
                f"ON CONFLICT (query_hash) DO UPDATE SET state = 'claimed', claimed_by = excluded.claimed_by, "
                f"lease_expires = excluded.lease_expires WHERE {reclaimable}")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return self._insert_claim_params(chosen, reclaimable, owner=owner, lease=lease, lookup=lookup)

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        return f"INSERT INTO {table} ({', '.join(columns)}) {select} ON CONFLICT ({key}) DO UPDATE SET {sets}"
