"""An answers table's writer lease: one run at a time claims there, on an engine without row claims.

Where a dialect's :attr:`~.dialects.engine_traits.EngineTraits.claim_protocol` is
``SINGLE_WRITER`` (ClickHouse: no row-level transactions, no key that refuses a second row), a
run claims only while it holds the answers table's writer lease, a small table of its own
(``<answers>_writer``) whose creation only one of two runs wins. The holder takes over what is
reclaimable, inserts what nobody holds, reads back what it won and drops the lease: claims queue
for each other, the lookups of parallel runs do not. A holder that died leaves its lease until
it expires; the next run then retires it by a statement that names the holder it read, so that
of two runs retiring it one wins, and neither can retire a later holder's lease.

Example::

    with WriterLease(session, "namelookup_answers", owner=run_id, seconds=60):
        ...   # the claim's statements
"""

from __future__ import annotations

import time
from types import TracebackType

from airflow_provider_namelookup.warehouse.session import WarehouseSession

POLL_SECONDS = 0.05
"""The first wait for a lease another run holds (doubled up to a second)."""


class WriterLeaseTimeout(TimeoutError):
    """The writer lease could not be had: another run held it past twice its length, or retiring an
    expired one kept failing."""


class WriterLease:
    """The writer lease of answers table ``answers`` (unquoted), held by ``owner`` within a ``with`` block.

    :param session: the run's warehouse session.
    :param answers: the answers table's checked name (``table`` or ``schema.table``).
    :param owner: this run's id.
    :param seconds: how long the lease holds: a claim must end within it (one is a few statements).
    """

    def __init__(self, session: WarehouseSession, answers: str, *, owner: str, seconds: float) -> None:
        self.session = session
        self.table = f"{answers}_writer"
        self.owner = owner
        self.seconds = seconds

    def __enter__(self) -> WriterLease:
        d, session = self.session.dialect, self.session
        deadline = time.time() + 2 * self.seconds + 5
        wait = POLL_SECONDS
        while True:
            statements = d.writer_lease(self.table, owner=self.owner, expires=time.time() + self.seconds)
            try:
                session.execute(statements.take)
                session.commit()
                return self
            except Exception as err:
                session.rollback()
                if not d.errors.is_duplicate_key(err):
                    raise
            held = session.fetchall(statements.read)
            if held and float(held[0][1]) < time.time():  # its holder died: retire it, then take it
                holder = (str(held[0][0]), float(held[0][1]))
                try:
                    session.execute(d.writer_lease(self.table, owner=self.owner, expires=0.0, holder=holder).retire)
                    session.commit()
                    continue
                except Exception:  # another run retired it first, or took it meanwhile
                    session.rollback()
            if time.time() > deadline:
                raise WriterLeaseTimeout(f"the writer lease {self.table} was held by another run for longer than "
                                         f"{2 * self.seconds + 5:.0f} s")
            time.sleep(wait)
            wait = min(wait * 2, 1.0)

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.session.execute(self.session.dialect.drop_table(self.session.dialect.quote(self.table)))
        self.session.commit()
