"""Table and column names are checked before they reach SQL."""

from __future__ import annotations

import pytest

from airflow_provider_namelookup.warehouse.identifiers import check_identifier


@pytest.mark.parametrize("bad", ["", "1abc", "a-b", "a b", "a;drop", "a.b.c", "é", None, 5, "a" * 64])
def test_identifiers_are_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="plain SQL identifier"):
        check_identifier(bad, "source_table", qualified=True)
