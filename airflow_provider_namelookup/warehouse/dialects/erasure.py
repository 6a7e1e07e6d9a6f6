"""Erasure and retention: people's rows out of targets, their answers out of the answers table.

An erased answer is not deleted at once: its row becomes a **tombstone** (``state='erased'``,
every value and result NULL, ``lease_expires`` the erasure's time, so that a run that claims it
later holds it as a fresh claim), which a run that started before
the erasure neither claims nor fills a row from (:class:`~..answers.AnswersTable`), so nothing
erased comes back from a run in flight; runs that start later claim it as new. Tombstones
older than :data:`TOMBSTONE_SECONDS` are deleted by the next erasure or retention.

They are one object the dialect owns, :attr:`~.base.WarehouseDialect.erasure`: standard SQL that
every warehouse here takes as it is. A dialect whose engine spells one otherwise returns a subclass
of its own from ``erasure``.

Example (the defaults: standard SQL)::

    dialect.erasure.erase_answers('"namelookup_answers"', ["gender", "first_name"], 2)
    # "UPDATE \"namelookup_answers\" SET state = 'erased', ..., gender = NULL, first_name = NULL
    #  WHERE query_hash IN (?, ?) AND state <> 'erased'"
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_provider_namelookup.warehouse.dialects.spelling import Spelling

STATE_ERASED = "erased"
TOMBSTONE_SECONDS = 86_400.0
"""How long a tombstone keeps a run that started before the erasure from bringing its answer back."""


class ErasureStatements:
    """The statements of erasure and retention (see the module docstring), spelled with the bind
    markers of the dialect that owns them.

    Example (a dialect whose engine deletes otherwise)::

        class MyErasure(ErasureStatements):
            def delete_where_in(self, table: str, column: str, count: int) -> str: ...

        class MyDialect(WarehouseDialect, name=..., credit_promise=...):
            @cached_property
            def erasure(self) -> ErasureStatements:
                return MyErasure(self)
    """

    def __init__(self, dialect: Spelling) -> None:
        self.dialect = dialect

    @property
    def placeholder(self) -> str:
        """The owning dialect's bind marker."""
        return self.dialect.placeholder

    def marks(self, count: int) -> str:
        """``count`` of the owning dialect's bind markers."""
        return self.dialect.marks(count)

    def rows_of_keys(self, target: str, key: str, count: int) -> str:
        """The keys and query hashes of a target's rows with one of ``count`` keys.

        Example: ``SELECT "id", query_hash FROM "customers_gender" WHERE "id" IN (?, ?)``."""
        return f"SELECT {key}, query_hash FROM {target} WHERE {key} IN ({self.marks(count)})"

    def rows_with_values(self, target: str, key: str, last_name: str | None) -> str:
        """Each target row's key, the values it was enriched from and its query hash (the rows with a
        value; ``last_name`` None: the target has no last name column).

        Example: ``SELECT "id", source_name, source_last_name, query_hash FROM "t" WHERE source_name IS NOT NULL``."""
        return (f"SELECT {key}, source_name, {last_name or 'NULL'}, query_hash FROM {target} "
                f"WHERE source_name IS NOT NULL")

    def echoed_names(self, answers: str) -> str:
        """Each answer's hash and the names the service echoed (the answers that hold a first name).

        Example: ``SELECT query_hash, first_name, last_name FROM "namelookup_answers" WHERE first_name IS NOT NULL``."""
        return f"SELECT query_hash, first_name, last_name FROM {answers} WHERE first_name IS NOT NULL"

    def delete_where_in(self, table: str, column: str, count: int, *, count_only: bool = False) -> str:
        """Delete the rows whose ``column`` is one of ``count`` values; ``count_only``: count those rows
        instead (for engines whose ``DELETE`` reports no row count).

        Example: ``DELETE FROM "customers_gender" WHERE "id" IN (?, ?)``."""
        action = "SELECT COUNT(*) FROM" if count_only else "DELETE FROM"
        return f"{action} {table} WHERE {column} IN ({self.marks(count)})"

    def erase_answers(self, answers: str, cleared: Sequence[str], count: int) -> str:
        """Make tombstones of the answers rows of ``count`` hashes (bound after the erasure's time), the
        ``cleared`` columns NULL; rows already erased are left alone, so the row count is what was erased."""
        p = self.placeholder
        nulls = ", ".join(f"{c} = NULL" for c in ("claimed_by", "answered_at", "answered_by", "credits", "paid_for",
                                                  *cleared))
        return (f"UPDATE {answers} SET state = '{STATE_ERASED}', lease_expires = {p}, {nulls} "
                f"WHERE query_hash IN ({self.marks(count)}) AND state <> '{STATE_ERASED}'")

    def existing_hashes(self, answers: str, count: int) -> str:
        """Which of ``count`` hashes have a row in the answers table."""
        return f"SELECT query_hash FROM {answers} WHERE query_hash IN ({self.marks(count)})"

    def insert_tombstone(self, answers: str) -> str:
        """One tombstone for a hash without a row (bound: the hash, the erasure's time)."""
        p = self.placeholder
        return f"INSERT INTO {answers} (query_hash, state, lease_expires) VALUES ({p}, '{STATE_ERASED}', {p})"

    def delete_erased_rows(self, target: str, answers: str, stamp: str) -> str:
        """Delete a target's rows written at ``stamp`` (a literal) from answers erased since a time (bound).

        Example: ``DELETE FROM "t" WHERE enriched_at = '2026-11-28 10:00:00' AND query_hash IN
        (SELECT query_hash FROM "namelookup_answers" WHERE state = 'erased' AND lease_expires >= ?)``."""
        return (f"DELETE FROM {target} WHERE enriched_at = {stamp} AND query_hash IN (SELECT query_hash FROM {answers} "
                f"WHERE state = '{STATE_ERASED}' AND lease_expires >= {self.placeholder})")

    def count_erased_since(self, answers: str) -> str:
        """How many answers were erased since a time (bound): where none was, a fill has no row to delete.

        Example: ``SELECT COUNT(*) FROM "namelookup_answers" WHERE state = 'erased' AND lease_expires >= ?``."""
        return f"SELECT COUNT(*) FROM {answers} WHERE state = '{STATE_ERASED}' AND lease_expires >= {self.placeholder}"

    def delete_answers_before(self, answers: str, *, count: bool = False) -> str:
        """Delete answers (and the lost answers' rows) stored before a time, and tombstones before
        another (both bound); claims in flight are left alone. ``count``: count those rows instead
        (for engines whose ``DELETE`` reports no row count)."""
        p = self.placeholder
        action = "SELECT COUNT(*) FROM" if count else "DELETE FROM"
        return (f"{action} {answers} WHERE (state IN ('answered', 'lost') AND answered_at < {p}) "
                f"OR (state = '{STATE_ERASED}' AND lease_expires < {p})")
