"""The answers a run stores, on their way into the answers table.

A store is two statements whatever the number of answers: the answers go into the run's
incoming table by the warehouse's bulk path (:mod:`.bulk`: ``COPY`` on PostgreSQL, one
statement over list or JSON parameters elsewhere), tagged with the store's number, and one
``UPDATE ... FROM`` writes them into the answers rows the run still holds. Where the
warehouse updates straight from a bound JSON document (SQLite:
:meth:`~.dialects.claims.AnswersStatements.answers_document`), a store is that one ``UPDATE``
and no incoming table is made. Where the warehouse's ``UPDATE`` cannot name the rows it
wrote, and not every row was written (a claim was taken over meanwhile), another statement
reads back which were.

The incoming table is a temporary table of the run's connection where the warehouse keeps
them private (a lost connection takes it along, and the next store makes it again), else a
staging table beside the answers table, dropped at the end of the run. It is made and
committed before the first store's answers go in, so a store undone by a lock conflict
leaves it in place for the retry.

Example::

    incoming = IncomingAnswers(session, answers.quoted, dialect.temp_name("namelookup_incoming_1a2b"))
    kept = incoming.write(rows, result_columns(LookupKind.GENDER), owner=run_id, stamp=time.time(),
                          credits=1, paid_for="customers_gender")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.schema import Column
from airflow_provider_namelookup.warehouse.session import WarehouseSession


class IncomingAnswers:
    """The run's incoming table.

    :param session: the run's warehouse session.
    :param answers: the answers table (quoted).
    :param name: the incoming table's name (quoted).
    """

    def __init__(self, session: WarehouseSession, answers: str, name: str) -> None:
        self.session = session
        self.answers = answers
        self.name = name
        self.made = False
        self.stores = 0
        if session.dialect.engine.temporary_tables_are_private:
            session.on_lost(self._forget)

    def _forget(self) -> None:
        self.made = False

    def write(self, rows: Sequence[Sequence[Any]], result_columns: Sequence[Column], *, owner: str, stamp: float,
              credits: int, paid_for: str) -> set[str]:
        """Write answers (``(hash, *result values)`` each) into the rows ``owner`` holds; the hashes
        written (not committed)."""
        d, session = self.session.dialect, self.session
        columns = ["query_hash", *(c.name for c in result_columns)]
        self.stores += 1
        number = self.stores
        source, params = d.answers_document(columns), None
        if source is not None and (document := d.json_document(rows)) is not None:
            params = [document]
        else:
            source = None
            self._make(result_columns)
            session.load(self.name, [*columns, "store_no"], [(*row, number) for row in rows])
        hashes = [row[0] for row in rows]
        update = d.store_answers(self.answers, self.name, number, result_columns, owner=owner, stamp=stamp,
                                 credits=credits, paid_for=paid_for, source=source, hashes=hashes)
        if d.engine.update_returning:
            return {r[0] for r in session.fetchall(update, params, commit=False)}
        if session.execute(update, params) == len(rows):
            return set(hashes)
        return {r[0] for r in session.fetchall(d.stored_by(self.answers, self.name, number, owner=owner, stamp=stamp,
                                                           source=source), params, commit=False)}

    def _make(self, result_columns: Sequence[Column]) -> None:
        if self.made:
            return
        self.session.execute(self.session.dialect.create_incoming(self.name, self.answers, result_columns))
        # committed on its own: where DDL is transactional (PostgreSQL), a store rolled back by a
        # lock conflict would otherwise take the table along, and its retry would find none
        self.session.commit()
        self.made = True

    def drop_statements(self) -> list[str]:
        """What drops the table at the end of the run (nothing where it is private to the connection)."""
        d = self.session.dialect
        return [d.drop_table(self.name)] if self.made and not d.engine.temporary_tables_are_private else []
