"""The dialect contract is checked when a dialect is defined: what it must write, named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from airflow_provider_namelookup.warehouse.dialects import all_dialects
from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    EngineTraits,
    IncompleteDialect,
    WarehouseDialect,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types

PROMISE = "claims are MERGE inserts that conflict on the answers table's primary key"


def test_every_supported_dialect_keeps_the_contract() -> None:
    assert [d.name for d in all_dialects()] == ["sqlite", "postgresql", "mysql", "duckdb", "snowflake", "bigquery",
                                                "databricks", "redshift", "mssql"]


def test_the_smallest_dialect_is_its_name_and_credit_promise() -> None:
    class Tiny(WarehouseDialect, name="tiny", credit_promise=PROMISE):
        pass

    assert (Tiny.name, Tiny.credit_promise, Tiny.proof) == ("tiny", PROMISE, "real engine")


def test_a_dialect_without_its_name_or_promise_fails_when_defined() -> None:
    with pytest.raises(IncompleteDialect, match=r"Nameless must write: name \(.*\); credit_promise \(how"):
        class Nameless(WarehouseDialect):
            pass


def test_a_json_bulk_load_needs_its_select() -> None:
    with pytest.raises(IncompleteDialect, match=r"must write: json_select \(engine.bulk_load = BulkLoad.JSON"):
        class Loader(WarehouseDialect, name="loader", credit_promise=PROMISE):
            engine = EngineTraits(bulk_load=BulkLoad.JSON)


def test_a_claim_of_its_own_needs_parameters_that_fit_it() -> None:
    with pytest.raises(IncompleteDialect, match=r"must write: claim_params \(a claim of its own"):
        class Claimer(WarehouseDialect, name="claimer", credit_promise=PROMISE):
            def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
                return f"{self._insert_claim(answers, chosen)} ON CONFLICT DO NOTHING WHERE {reclaimable}"

    class Fitting(WarehouseDialect, name="fitting", credit_promise=PROMISE):
        def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
            return f"{self._insert_claim(answers, chosen)} ON CONFLICT DO NOTHING WHERE {reclaimable}"

        def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                         lookup: str) -> list[Any]:
            return self._insert_claim_params(chosen, reclaimable, owner=owner, lease=lease, lookup=lookup)

    assert Fitting.name == "fitting"


def test_types_name_every_column_kind_and_proof_is_known() -> None:
    with pytest.raises(TypeError, match="column_types takes exactly"):
        column_types(text="TEXT")
    with pytest.raises(IncompleteDialect, match=r"types of timestamp .*; proof as one of"):
        class Untyped(WarehouseDialect, name="untyped", credit_promise=PROMISE, proof="tried once"):
            types: ClassVar[dict[str, str]] = {"text": "TEXT", "longtext": "TEXT", "float": "REAL", "int": "INTEGER",
                                               "bigint": "INTEGER"}


def test_the_single_writer_claim_protocol_needs_a_writer_lease() -> None:
    from airflow_provider_namelookup.warehouse.dialects.base import ClaimProtocol, LeaseStatements

    with pytest.raises(IncompleteDialect, match=r"must write: writer_lease \(engine.claim_protocol = ClaimProtocol"):
        class Unleased(WarehouseDialect, name="unleased", credit_promise=PROMISE):
            engine = EngineTraits(claim_protocol=ClaimProtocol.SINGLE_WRITER)

    class Leased(WarehouseDialect, name="leased", credit_promise=PROMISE):
        engine = EngineTraits(claim_protocol=ClaimProtocol.SINGLE_WRITER)

        def writer_lease(self, lease: str, *, owner: str, expires: float,
                         holder: tuple[str, float] | None = None) -> LeaseStatements:
            return LeaseStatements(f"CREATE TABLE {lease} (x INTEGER)", f"SELECT 'holder', 0.0 FROM {lease}",
                               f"DROP TABLE {lease}")

    assert Leased.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER
    assert WarehouseDialect.engine.claim_protocol is ClaimProtocol.ROW_CLAIMS  # the default: row claims, as before


def test_a_dialect_writing_a_retired_name_fails_naming_the_new_spelling() -> None:
    """A trait written the old way would be ignored (the engine reads ``engine``): it fails instead."""
    with pytest.raises(IncompleteDialect, match=r"enforces_keys \(now engine = EngineTraits\(enforces_keys=\.\.\.\)\); "
                                                r"where_readings \(now where = WhereSpelling\(readings=\.\.\.\)\)"):
        class Old(WarehouseDialect, name="old", credit_promise=PROMISE):
            enforces_keys = False
            where_readings = ()
    with pytest.raises(IncompleteDialect, match=r"insert_claim \(now _insert_claim\); delete_where_in \(now "
                                                r"erasure.delete_where_in: a subclass of ErasureStatements"):
        class OldHelper(WarehouseDialect, abstract=True):
            def insert_claim(self, answers: str, chosen: str, *, alias: str = "") -> str:
                return ""

            def delete_where_in(self, table: str, column: str, count: int) -> str:
                return ""


def test_a_dialect_refines_a_shared_bases_traits() -> None:
    from airflow_provider_namelookup.warehouse.dialects.cloud import CloudTableDialect

    class Lake(CloudTableDialect, name="lake", credit_promise=PROMISE):
        engine = CloudTableDialect.engine.changed(naive_timestamps=True)

        def json_select(self, width: int, kinds: Sequence[str]) -> str:
            return "SELECT 1"

    assert (Lake.engine.naive_timestamps, Lake.engine.enforces_keys, Lake.engine.bulk_load) == (True, False,
                                                                                                BulkLoad.JSON)
    assert WarehouseDialect.engine == EngineTraits()  # the base's traits are the defaults
