"""The fill: the target table created like the source, and the upsert of its new and changed rows.

The fill writes every source row whose question is answered (or invalid), by one set-based
statement from a join of the source to the resolved map; then it moves each query's price to
one row (``SUM(credits_used)`` is what the table cost), locking the query's answers row first
(:meth:`FillStatements.lock_answers`) so that two runs' fix-ups of one query do not interleave.

Example (the defaults)::

    dialect.upsert('"customers_gender"', ["id", "gender"], "id", "SELECT ...")
    # 'MERGE INTO "customers_gender" AS t USING (SELECT ...) AS s ON t.id = s.id
    #  WHEN MATCHED THEN UPDATE SET gender = s.gender WHEN NOT MATCHED THEN INSERT (id, gender) VALUES (s.id, s.gender)'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from airflow_provider_namelookup.warehouse.dialects.claims import AnswersStatements
from airflow_provider_namelookup.warehouse.dialects.reading import SourceReading
from airflow_provider_namelookup.warehouse.dialects.traits import Names
from airflow_provider_namelookup.warehouse.schema import STATUS_ERROR, STATUS_OK, Column

_ALIAS = "t0"
"""The target row a fix-up of prices updates."""


@dataclass(frozen=True)
class PriceFixUps:
    """The statements of one fix-up of prices (:meth:`FillStatements.price_fix_ups`), in the order they run.

    :param collect: make the run's table of the queries whose price may move (dropped first if a step
        is run again), then add those whose price sits on a row the fill rewrites.
    :param lock: locks their answers rows (:meth:`FillStatements.lock_answers`), or None.
    :param update: puts each one's price on the lowest key holding it, 0 on its other rows.
    """

    collect: list[str]
    lock: str | None
    update: str


class FillStatements(AnswersStatements):
    """The target table's statements (see the module docstring)."""

    def add_primary_key(self, table: str, key: str) -> list[str]:
        """The statements that make ``key`` the table's primary key (none where keys are not declared).

        Example: ``["ALTER TABLE \"customers_gender\" ADD PRIMARY KEY (\"id\")"]``."""
        return [f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"]

    def before_fill_by_creating(self) -> list[str]:
        """Statements run in the transaction of a fill that creates its target (``CREATE TABLE ... AS``),
        before it: settings for the engine's plan of that one statement. None by default.

        Example: ``["SELECT set_config('parallel_tuple_cost', '0', true)"]`` (PostgreSQL: ``SET LOCAL``)."""
        return []

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        """Create a target table: its key and raw columns take the source's own types (rows are
        compared like with like), the ``typed`` columns their own; the key is the primary key.

        :param key_sample: a key of the source (for engines that must name the key's type).

        Example: ``CREATE TABLE "t" AS SELECT s."id" AS "id", CAST(NULL AS VARCHAR(16)) AS gender, ...
        FROM (...) s WHERE 1 = 0``, then :meth:`add_primary_key`.
        """
        select = f"SELECT {self._target_columns(names, typed)} FROM {names.relation} s WHERE 1 = 0"
        return [f"CREATE TABLE {table} AS {select}",
                *self.add_primary_key(table, names.key_column)]

    def _target_columns(self, names: Names, typed: Sequence[Column]) -> str:
        """The columns of a target made like the source: its key, the ``typed`` columns as NULLs of
        their type, the raw columns (the SELECT list of :meth:`create_like_source`)."""
        return ", ".join([f"{names.key} AS {names.key_column}", *(f"{self.cast_null(c)} AS {c.name}" for c in typed),
                          *(f"{expression} AS {column}" for expression, column in names.raw_columns())])

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str | list[str]:
        """Insert ``select``'s rows into ``table``, replacing rows with the same key (see the module's example);
        a list: statements run in order, where the engine has no one statement for it (ClickHouse: a
        ``DELETE`` of the rows replaced, then an ``INSERT``; ``select`` reads the target, so the second
        finds the rows the first deleted new)."""
        names = ", ".join(columns)
        sets = ", ".join(f"{c} = s.{c}" for c in columns if c != key)
        values = ", ".join(f"s.{c}" for c in columns)
        return (f"MERGE INTO {table} AS t USING ({select}) AS s ON t.{key} = s.{key} "
                f"WHEN MATCHED THEN UPDATE SET {sets} WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})")

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        """A statement that locks the answers rows of the hashes ``chosen`` selects until the
        transaction ends (fix-ups of one query then run one after another), or None (the default)
        where the engine serialises the statements that follow anyway.

        Example: ``SELECT a.query_hash FROM answers a WHERE a.query_hash IN (...) ORDER BY a.query_hash
        FOR UPDATE OF a``."""
        return None

    def _lowest_key(self, expression: str, key_sample: Any, *, over: str = "") -> str:
        """:meth:`~.reading.SourceReading.lowest_key`, which the dialect has beside this group."""
        return cast(SourceReading, self).lowest_key(expression, key_sample, over=over)

    def resolve_map(self, resolved: str, value_map: str, answers: str, raw: Sequence[str], read: Sequence[Column], *,
                    paid_for: str, key_sample: Any = None) -> list[str]:
        """Create the resolved map ``resolved`` (a stage: :meth:`~.run_tables.RunTables.create_stage_as`): each
        value of ``value_map`` (its ``raw`` columns) that is invalid or answered, with the answer's ``read``
        columns, the key of the row that carries its query's price (``charge_key``) and the price when
        ``paid_for`` paid it (``price_here``).

        Example: ``CREATE TEMPORARY TABLE "r" AS SELECT m.raw_name, m.query_hash, m.error, MIN(m.first_key)
        OVER (PARTITION BY m.query_hash) AS charge_key, CASE WHEN a.paid_for = 't' THEN a.credits ELSE 0 END
        AS price_here, a.gender FROM "m" m LEFT JOIN "a" a ON ...
        WHERE m.error IS NOT NULL OR a.query_hash IS NOT NULL``."""
        fields = ", ".join(f"a.{c.name}" for c in read)
        select = (f"SELECT {', '.join(f'm.{c}' for c in raw)}, m.query_hash, m.error, "
                  f"{self._lowest_key('m.first_key', key_sample, over='PARTITION BY m.query_hash')} AS charge_key, "
                  f"CASE WHEN a.paid_for = {self.literal(paid_for)} THEN a.credits ELSE 0 END AS price_here, {fields} "
                  f"FROM {value_map} m LEFT JOIN {answers} a ON a.query_hash = m.query_hash AND a.state = 'answered' "
                  f"WHERE m.error IS NOT NULL OR a.query_hash IS NOT NULL")
        return self.create_stage_as(resolved, select)

    def _join_resolved(self, names: Names, *, null_names: bool | None) -> str:
        """How a source row ``s`` finds its resolved entry ``m``: the rows with a NULL name apart
        (``null_names``), so that the common case stays a plain equality the warehouse can hash
        or index; or (None) all at once, where the engine's null-safe equality uses its index."""
        if null_names is None:
            name = self.null_safe_equal(names.name, "m.raw_name")
        else:
            name = (f"{names.name} IS NULL AND m.raw_name IS NULL" if null_names
                    else self.exact_equal(names.name, "m.raw_name"))
        if names.last_name:
            name += f" AND {self.null_safe_equal(names.last_name, 'm.raw_last_name')}"
        if names.country:
            name += f" AND {self.null_safe_equal(names.country, 'm.raw_country')}"
        return name

    def fill_rows(self, names: Names, typed: Sequence[Column], raw: Sequence[tuple[str, str]], *, resolved: str,
                  null_names: bool | None, stamp: Any, spec: str, abstain: Any = None, cast_typed: bool = False,
                  target: str | None = None, stale_before: Any = None) -> str:
        """The target's rows: the source rows joined to the resolved map (rows of one shape, ``null_names``:
        :meth:`_join_resolved`), each with its key, its ``typed`` columns (``cast_typed``: cast to their
        type, for ``CREATE TABLE ... AS``) and its ``raw`` ``(expression, column)`` values; its price on
        the row of its query's ``charge_key``; ``enriched_at`` the literal of ``stamp``, ``query_spec``
        of ``spec``. With ``target``: only the new and changed rows (whose raw values or ``spec`` differ
        from the target row's, or that were enriched before ``stale_before``). ``abstain``: the run's
        :class:`~airflow_provider_namelookup.engine.abstain.Abstain`, applied to ``gender``.

        Example: ``SELECT s."id" AS "id", m.gender AS gender, ... FROM (...) s JOIN "r" m ON s."name" = m.raw_name
        LEFT JOIN "t" t ON t."id" = s."id" WHERE t."id" IS NULL OR NOT (...)``."""
        lit = self.literal
        values = {
            **{c.name: f"m.{c.name}" for c in typed},
            "status": f"CASE WHEN m.error IS NOT NULL THEN {lit(STATUS_ERROR)} ELSE {lit(STATUS_OK)} END",
            "error": "m.error",
            "credits_used": f"CASE WHEN {names.key} = m.charge_key THEN m.price_here ELSE 0 END",
            "query_hash": "m.query_hash", "enriched_at": lit(stamp), "query_spec": lit(spec),
        }
        if abstain is not None and "gender" in values:  # probability and samples are written as they are
            values["gender"] = abstain.sql("m.gender", "m.probability", "m.samples", lit)
        columns = [f"{names.key} AS {names.key_column}",
                   *(f"{self.cast(values[c.name], c) if cast_typed else values[c.name]} AS {c.name}" for c in typed),
                   *(f"{expression} AS {column}" for expression, column in raw)]
        select = (f"SELECT {', '.join(columns)} FROM {names.relation} s "
                  f"JOIN {resolved} m ON {self._join_resolved(names, null_names=null_names)}")
        if target is None:
            return select
        t = "t"
        same = [self.null_safe_equal(f"{t}.{column}", expression) for expression, column in raw]
        same.append(self.null_safe_equal(f"{t}.query_spec", lit(spec)))
        changed = f"{t}.{names.key_column} IS NULL OR NOT ({' AND '.join(same)})"
        if stale_before is not None:
            changed += f" OR {t}.enriched_at < {lit(stale_before)}"
        return f"{select} LEFT JOIN {target} {t} ON {t}.{names.key_column} = {names.key} WHERE {changed}"

    def fill_new(self, table: str, columns: Sequence[str], selects: Sequence[str], *, create: bool) -> list[str]:
        """A fill with no row of the target to compare (:meth:`fill_rows` without ``target``, one select a
        row shape): ``create``, ``CREATE TABLE ... AS`` their union (then :meth:`add_primary_key`), else an
        insert of each into the table the run has just created.

        Example: ``['CREATE TABLE "t" AS SELECT ... UNION ALL SELECT ...']``; ``['INSERT INTO "t" ("id", gender, ...)
        SELECT ...']``."""
        if create:
            return [f"CREATE TABLE {table} AS {' UNION ALL '.join(selects)}"]
        return [f"INSERT INTO {table} ({', '.join(columns)}) {select}" for select in selects]

    def price_fix_ups(self, target: str, names: Names, *, fixes: str, resolved: str, answers: str, paid_for: str,
                      key_sample: Any = None, leaving: Sequence[bool | None] = ()) -> PriceFixUps:
        """The fix-up of prices (see the module docstring), through the run's table ``fixes``: the queries
        the resolved map answers and, for each row shape in ``leaving`` (:meth:`_join_resolved`), those whose
        price sits on a row the fill rewrites with another query; their answers rows locked; then on each,
        the price paid for ``paid_for`` (unquoted) on the lowest key holding it, 0 on the others. Built
        on :meth:`~.run_tables.RunTables.create_temp_as`, :meth:`lock_answers` and :meth:`update_from`.

        Example: ``PriceFixUps(collect=['CREATE TEMPORARY TABLE "f" AS SELECT DISTINCT query_hash FROM "r"
        WHERE error IS NULL'], lock=None,
        update='UPDATE "t" AS t0 SET credits_used = CASE ... FROM (...) c WHERE ...')``."""
        key, lit = names.key_column, self.literal
        collect = [self.create_temp_as(fixes, f"SELECT DISTINCT query_hash FROM {resolved} WHERE error IS NULL")]
        collect += [f"INSERT INTO {fixes} (query_hash) SELECT DISTINCT t.query_hash FROM {names.relation} s "
                    f"JOIN {resolved} m ON {self._join_resolved(names, null_names=shape)} "
                    f"JOIN {target} t ON t.{key} = {names.key} "
                    f"WHERE t.credits_used > 0 AND t.query_hash <> m.query_hash" for shape in leaving]
        carriers = (f"(SELECT t.query_hash, {self._lowest_key(f't.{key}', key_sample)} AS carrier, "
                    f"MAX(CASE WHEN a.paid_for = {lit(paid_for)} THEN a.credits ELSE 0 END) AS price "
                    f"FROM {target} t JOIN {fixes} f ON f.query_hash = t.query_hash "
                    f"LEFT JOIN {answers} a ON a.query_hash = t.query_hash AND a.answered_at IS NOT NULL "
                    f"WHERE t.status = {lit(STATUS_OK)} GROUP BY t.query_hash)")
        price = f"CASE WHEN {_ALIAS}.{key} = c.carrier THEN c.price ELSE 0 END"
        update = self.update_from(target, _ALIAS, [("credits_used", price)], carriers,
                                  f"{_ALIAS}.query_hash = c.query_hash AND {_ALIAS}.status = {lit(STATUS_OK)} "
                                  f"AND COALESCE({_ALIAS}.credits_used, -1) <> {price}")
        return PriceFixUps(collect, self.lock_answers(answers, f"SELECT query_hash FROM {fixes}"), update)
