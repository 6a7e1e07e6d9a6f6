"""Erasure's statements (:mod:`airflow_provider_namelookup.warehouse.dialects.erasure`) parse in each
dialect's own sqlglot dialect, with literals as the dialect writes them: the engines the compliance
suite cannot run (Redshift, SQL Server; Databricks' Spark is slow) are held to that much."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_namelookup.warehouse.dialects import all_dialects
from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect
from airflow_provider_namelookup.warehouse.schema import ANSWER_RESULTS
from tests.warehouse.dialects.parsing import parse_all


class _Hook:
    placeholder = "?"


def _statements(dialect: WarehouseDialect) -> list[str]:
    target, answers, key = "customers_gender", "namelookup_answers", "customer_id"  # quoting is the dialect's own
    return [dialect.erasure.rows_of_keys(target, key, 3),
            dialect.erasure.rows_with_values(target, key, "source_last_name"),
            dialect.erasure.rows_with_values(target, key, None), dialect.erasure.echoed_names(answers),
            dialect.erasure.delete_where_in(target, key, 2),
            dialect.erasure.erase_answers(answers, [c.name for c in ANSWER_RESULTS], 2),
            dialect.erasure.existing_hashes(answers, 2), dialect.erasure.insert_tombstone(answers),
            dialect.erasure.delete_answers_before(answers), dialect.erasure.delete_answers_before(answers, count=True),
            dialect.erasure.delete_erased_rows(target, answers, dialect.literal(dialect.timestamp(datetime.now(UTC))))]


@pytest.mark.parametrize("cls", all_dialects(), ids=lambda cls: cls.name)
def test_erasure_statements_parse_in_each_dialect(cls: type[WarehouseDialect]) -> None:
    dialect = cls(_Hook())
    dialect.__dict__["placeholder"] = "?"
    statements = _statements(dialect)
    assert len(parse_all(statements, cls.sqlglot_name or cls.name)) == len(statements)
    assert "state <> 'erased'" in statements[5] and statements[5].count("?") == 3
