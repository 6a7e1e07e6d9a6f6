"""The statement builder every dialect refines, and its data: bulk loads, driver errors, tuning."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_namelookup.warehouse.dialects import all_dialects
from airflow_provider_namelookup.warehouse.dialects.base import BulkLoad, DriverErrors, WarehouseDialect
from airflow_provider_namelookup.warehouse.schema import (
    ANSWER_BOOKKEEPING,
    ANSWER_RESULTS,
    BOOKKEEPING,
    SOURCE_COUNTRY,
    SOURCE_NAME,
)


def _hook(placeholder: str = "?") -> SimpleNamespace:
    return SimpleNamespace(placeholder=placeholder, dialect=SimpleNamespace(escape_word=lambda word: f'"{word}"'))


class _ArrowCursor:
    """What an Arrow load does with its cursor: a view registered, statements run, the view dropped."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def register(self, view: str, data: object) -> None:
        self.calls.append(f"register {view}")

    def execute(self, sql: str, params: object = None) -> None:
        self.calls.append(sql)

    def unregister(self, view: str) -> None:
        self.calls.append(f"unregister {view}")


def _arrow_insert(dialect: WarehouseDialect) -> str:
    cursor = _ArrowCursor()
    dialect.insert_arrow(cursor, "t", ["a", "b"], object())
    registered, insert, unregistered = cursor.calls
    view = registered.removeprefix("register ")
    assert unregistered == f"unregister {view}" and insert.endswith(f"FROM {view}")
    return insert


def test_every_dialect_spells_every_column_kind_and_loads_by_a_known_way() -> None:
    for dialect in all_dialects():
        assert set(dialect.types) == set(WarehouseDialect.types), dialect.name
        assert isinstance(dialect.engine.bulk_load, BulkLoad) and isinstance(dialect.errors, DriverErrors), dialect.name
        builder = dialect(_hook("%s"))
        load = {BulkLoad.EXECUTEMANY: lambda d=builder: d.insert_values("t", ["a", "b"]),
                BulkLoad.COPY: lambda d=builder: d.copy_from_stdin("t", ["a", "b"]),
                BulkLoad.UNNEST: lambda d=builder: d.insert_unnest("t", ["a", "b"]),
                BulkLoad.JSON: lambda d=builder: d.insert_json("t", ["a", "b"], ["text", "int"]),
                BulkLoad.LITERALS: lambda d=builder: d.insert_literals("t", ["a", "b"], [("x", 1)])[0],
                BulkLoad.ARROW: lambda d=builder: _arrow_insert(d)}
        assert set(load) == set(BulkLoad)  # a new way of loading is checked here too
        assert load[dialect.engine.bulk_load]().startswith(("INSERT INTO t", "COPY t")), dialect.name  # its own way
        if dialect.engine.bulk_load is BulkLoad.ARROW:  # rows Arrow cannot hold exactly go as lists
            assert load[BulkLoad.UNNEST]().startswith("INSERT INTO t (a, b) SELECT UNNEST("), dialect.name


def test_the_engine_s_own_column_names_are_reserved_nowhere() -> None:
    """They are written unquoted (base.py), so no supported engine may reserve one."""
    from sqlalchemy.dialects.mysql.reserved_words import RESERVED_WORDS_MARIADB, RESERVED_WORDS_MYSQL
    from sqlalchemy.dialects.postgresql.base import RESERVED_WORDS as POSTGRES
    from sqlalchemy.dialects.sqlite.base import SQLiteIdentifierPreparer

    ours = {c.name for c in (*BOOKKEEPING, *ANSWER_BOOKKEEPING, *ANSWER_RESULTS)} | {
        SOURCE_NAME, SOURCE_COUNTRY, "query_hash", "raw_name", "raw_country", "first_key", "chunk", "batch",
        "charge_key", "price_here", "carrier", "price", "total", "store_no"}
    for reserved in (POSTGRES, RESERVED_WORDS_MYSQL, RESERVED_WORDS_MARIADB, SQLiteIdentifierPreparer.reserved_words):
        assert not ours & {w.lower() for w in reserved}


def test_values_of_the_engine_become_literals_and_author_sql_keeps_its_percent() -> None:
    dialect = WarehouseDialect(_hook())
    assert dialect.literal("it's") == "'it''s'" and dialect.literal(None) == "NULL" and dialect.literal(2) == "2"
    percent = WarehouseDialect(_hook("%s"))
    assert percent.user_sql("id % 8 = 3", with_params=True) == "id %% 8 = 3"
    assert percent.user_sql("id % 8 = 3", with_params=False) == "id % 8 = 3"
    assert dialect.user_sql("id % 8 = 3", with_params=True) == "id % 8 = 3"  # ? markers: nothing to escape
    assert dialect.quote("analytics.customers") == '"analytics"."customers"'


class _Failure(Exception):
    def __init__(self, message: str, *, sqlstate: str | None = None, errno: int | None = None) -> None:
        super().__init__(message)
        self.sqlstate, self.errno = sqlstate, errno


def test_driver_errors_are_told_apart_by_state_code_or_words() -> None:
    errors = DriverErrors(lock_conflict_codes=frozenset({1213}), connection_lost_codes=frozenset({2013}),
                          duplicate_key_codes=frozenset({1062}))
    assert errors.is_lock_conflict(_Failure("x", sqlstate="40P01"))
    assert errors.is_lock_conflict(_Failure("x", errno=1213))
    assert errors.is_lock_conflict(_Failure("Deadlock found when trying to get lock"))
    assert errors.is_connection_lost(_Failure("x", sqlstate="08006"))
    assert errors.is_connection_lost(_Failure("x", errno=2013))
    assert errors.is_connection_lost(_Failure("terminating connection due to administrator command"))
    assert errors.is_duplicate_key(_Failure("x", sqlstate="23505"))
    assert errors.is_duplicate_key(_Failure("x", errno=1062))
    assert not errors.is_lock_conflict(_Failure("syntax error")) and not errors.is_connection_lost(_Failure("x"))
    assert not DriverErrors(lock_conflict_words=("database is locked",)).is_lock_conflict(_Failure("deadlock"))
