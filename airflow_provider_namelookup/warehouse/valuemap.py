"""The raw-value map: a temporary table from each raw (name, country) to its query hash or error.

Python plans each distinct raw value (a name, its country and its last name, where the run
reads them) once; the map carries those decisions into the
warehouse, page by page, where every set-based statement of the run reads them: which
queries are answered already (one join), which a claim takes (the map's ``chunk``
column), and how the target is filled (source rows joined to the map on their raw
values). Its raw columns are made from the source itself (``CREATE TABLE ... AS SELECT
... WHERE 1 = 0``), so they have the source's types and joins compare like with like.
``first_key`` is the lowest key of the rows holding the value; it lives in the run's
connection and vanishes with it. A pseudonymising run's map also holds each raw name's (and last
name's) pseudonym, computed in Python: what the target keeps in their place.

Before the fill the map is **resolved**: joined once to the answers table into a second
temporary table holding each raw value's result columns, the row that carries its
query's price (``charge_key``: the lowest key holding the query) and that price when the
answer was paid for this target (``price_here``). Values whose query is not answered are
left out. The fill joins every source row to that one small table.

Example::

    value_map = ValueMap(session, source.names(with_params=False))
    batch = value_map.load([(question, chunk), ...])
    value_map.resolve(answers.quoted, LookupKind.GENDER, paid_for="customers_gender")
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.ports import Question
from airflow_provider_namelookup.personal.pseudonym import Pseudonymiser
from airflow_provider_namelookup.warehouse.dialects import Names
from airflow_provider_namelookup.warehouse.schema import Column, result_columns
from airflow_provider_namelookup.warehouse.session import WarehouseSession

_TYPED = (Column("query_hash", "text", 64), Column("error", "longtext"), Column("chunk", "int"),
          Column("batch", "int"))
PSEUDONYM = Column("pseudonym", "text", 64)
"""The type of a pseudonym column (64 hex digits)."""


class ValueMap:
    """The run's map table (and its resolved form).

    :param session: the run's warehouse session.
    :param names: the source's names (without parameters: the map is made by a statement that binds none).
    :param schema: where staging tables go on a warehouse whose temporary tables are not private
        to the session (the answers table's schema; None: the connection's default).
    :param pseudonymiser: a pseudonymising run's: the map holds the pseudonyms of the raw name
        (``pseudo_name``) and last name (``pseudo_last_name``) beside them.
    """

    def __init__(self, session: WarehouseSession, names: Names, *, schema: str | None = None,
                 pseudonymiser: Pseudonymiser | None = None) -> None:
        self.session = session
        self.names = names
        self.pseudonymiser = pseudonymiser
        self.suffix = suffix = uuid.uuid4().hex[:12]
        self.schema = schema
        self.name = self.staging_name("namelookup_map")
        self.resolved = session.dialect.stage_name(f"namelookup_resolved_{suffix}", schema)
        self.fixes = self.staging_name("namelookup_fix")
        self.index = f"namelookup_resolved_{suffix}_idx"
        self.made: list[str] = []
        """The tables made so far (the staging tables to drop at the end)."""
        self.created = False
        self.staged = False
        self.batches = 0
        self.has_null_name = False

    def staging_name(self, base: str) -> str:
        """The (quoted) name of another table of the run's, beside the map (a temporary table, or a
        staging table where those are not private)."""
        return self.session.dialect.temp_name(f"{base}_{self.suffix}", self.schema)

    @property
    def raw_columns(self) -> list[str]:
        return ["raw_name", *(["raw_last_name"] if self.names.last_name else []),
                *(["raw_country"] if self.names.country else [])]

    @property
    def pseudonym_columns(self) -> list[str]:
        """The pseudonyms of the raw name and last name (none when the run keeps them in clear)."""
        if self.pseudonymiser is None:
            return []
        return ["pseudo_name", *(["pseudo_last_name"] if self.names.last_name else [])]

    @property
    def columns(self) -> list[str]:
        return [*self.raw_columns, "first_key", "query_hash", "error", "chunk", "batch", *self.pseudonym_columns]

    def _create(self) -> None:
        typed = (*_TYPED, *(Column(c, PSEUDONYM.kind, PSEUDONYM.length) for c in self.pseudonym_columns))
        for statement in self.session.dialect.create_value_map(self.name, self.names, typed):
            self.session.execute(statement)
        self.made.append(self.name)
        self.created = True

    def load(self, questions: Sequence[tuple[Question, int | None]]) -> int:
        """Add one page of questions, each with its claim's chunk (None for invalid ones);
        the page's batch number. Committed."""
        self.session.require_temporaries()
        if not self.created:
            self._create()
        self.batches += 1
        rows = []
        for question, chunk in questions:
            name, country, last_name = question.ref
            error = None if question.error is None else str(question.error)
            raw = (name, *((last_name,) if self.names.last_name else ()), *((country,) if self.names.country else ()))
            hidden: tuple[Any, ...] = ()
            if (pseudonymiser := self.pseudonymiser) is not None:
                hidden = (pseudonymiser.value(name),
                          *((pseudonymiser.value(last_name),) if self.names.last_name else ()))
            rows.append((*raw, question.first_key, question.query_hash, error, chunk, self.batches, *hidden))
            self.has_null_name = self.has_null_name or name is None
        self.session.load(self.name, self.columns, rows)
        self.session.commit()
        return self.batches

    def chunk_hashes(self) -> str:
        """A SELECT of the distinct valid hashes of one chunk (bound: the chunk)."""
        return self.session.dialect.chunk_hashes(self.name)

    def resolve(self, answers: str, lookup: LookupKind, *, paid_for: str, key_sample: Any = None,
                results: Sequence[Column] | None = None) -> None:
        """Create the resolved map: each raw value that is invalid or whose query is answered,
        with the answer's result columns, the key of the row carrying its price and that price.

        :param key_sample: a key of the source (the dialect's :meth:`~.SourceReading.lowest_key` may need it).
        :param results: the result columns the fill reads (a target's ``columns``); None: every one.
        """
        self.session.require_temporaries()
        d = self.session.dialect
        read = result_columns(lookup) if results is None else results
        for statement in d.resolve_map(self.resolved, self.name, answers, [*self.raw_columns, *self.pseudonym_columns],
                                       read, paid_for=paid_for, key_sample=key_sample):
            self.session.execute(statement)
        self.made.append(self.resolved)
        self.staged = True
        covering = ["query_hash", "error", "charge_key", "price_here", *(c.name for c in read)]
        for statement in d.index_temp(self.resolved, self.index, self.raw_columns, covering):
            try:
                self.session.execute(statement)
            except Exception as err:
                instead = d.index_temp_instead(err, self.resolved, self.index, self.raw_columns)
                if instead is None:
                    raise
                for other in instead:
                    self.session.execute(other)
        self.session.commit()

    def row_shapes(self) -> list[bool | None]:
        """The join shapes the fill needs: ``[False]``, plus ``True`` when some name is NULL
        (``[None]``, one shape, where the engine joins on null-safe equality through its index)."""
        if self.has_null_name and self.session.dialect.engine.indexes_null_safe_equality:
            return [None]
        return [False, True] if self.has_null_name else [False]

    def drop(self, also: Sequence[str] = ()) -> None:
        """Drop the run's tables that outlive the session (a stage, staging tables), and run ``also``
        (another table's drop statements)."""
        d = self.session.dialect
        statements = d.drop_stage(self.resolved) if self.staged else []
        if not d.engine.temporary_tables_are_private:
            statements += [d.drop_table(table) for table in dict.fromkeys(self.made)]
        statements += also
        self.made, self.staged = [], False
        for statement in statements:
            self.session.execute(statement)
        if statements:
            self.session.commit()


def load_entries(questions: Sequence[Question], chunks: dict[str, int]) -> list[tuple[Question, Any]]:
    """Each question with the chunk its hash is claimed in (None for an invalid one)."""
    return [(q, chunks.get(q.query_hash) if q.valid else None) for q in questions]
