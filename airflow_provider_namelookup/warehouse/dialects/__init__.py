"""One module per warehouse engine, each the only place of its SQL spellings, loaded when first used.

:data:`WAREHOUSES` lists the supported warehouses: the engine names a common-sql hook
reports for each (``dialect_name``, else the connection type), the Airflow provider of its
hook and the extra of this package that installs it. :func:`dialect_for` imports only the
module of the hook's warehouse; a warehouse the engine cannot serve gets an error naming the
ones it can, and :func:`install_hint` says what to install when a warehouse's provider is
missing.

A warehouse of another package registers its dialect in the entry-point group
:data:`ENTRY_POINT_GROUP`, named after the engine its hook reports (``mywarehouse =
"my_package.dialect:MyDialect"`` in its ``pyproject.toml``): :func:`dialect_for` loads it when no
built-in warehouse serves that engine, and a class that fails the contract fails naming the entry
point. A built-in warehouse is one module here (a :class:`~.base.WarehouseDialect` subclass
named ``DIALECT``, its module named after it), one entry in :data:`WAREHOUSES`, and its tests.

Example::

    >>> [w.name for w in WAREHOUSES]
    ['sqlite', 'postgresql', 'mysql', 'duckdb', 'snowflake', 'bigquery', 'databricks', 'redshift', 'mssql']
    >>> install_hint("snowflake")
    "pip install 'apache-airflow-providers-snowflake>=6.20' (what the snowflake extra of ...)"
"""

from __future__ import annotations

import functools
import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import (
    IncompleteDialect,
    Names,
    Unchanged,
    WarehouseDialect,
    contract_gaps,
)

__all__ = ["ENTRY_POINT_GROUP", "WAREHOUSES", "Names", "Unchanged", "UnsupportedWarehouse", "Warehouse",
           "WarehouseDialect", "all_dialects", "dialect_for", "engine_of", "install_hint", "registered", "warehouse_of"]

ENTRY_POINT_GROUP = "airflow_provider_namelookup.warehouses"
"""The entry-point group a dialect of another package registers in: the entry point's name is the
engine its hook reports (:func:`engine_of`), its value the dialect class."""


@dataclass(frozen=True)
class Warehouse:
    """A supported warehouse.

    :param name: its dialect module's name (and the dialect's :attr:`~.base.WarehouseDialect.name`).
    :param engines: the ``dialect_name`` or connection types of its common-sql hooks.
    :param provider: the Airflow provider package of its hook.
    :param extra: the extra of this package that installs that provider (None: install it by hand).
    :param entry_point: where another package registered its dialect (None: a module of this package).
    """

    name: str
    engines: tuple[str, ...]
    provider: str
    extra: str | None = None
    entry_point: EntryPoint | None = None

    def dialect_class(self) -> type[WarehouseDialect]:
        """Its dialect (the module is imported now).

        :raises IncompleteDialect: a registered dialect that fails the contract, naming its entry point.
        """
        if self.entry_point is not None:
            return _load(self.entry_point)
        module = importlib.import_module(f"{__name__}.{self.name}")
        dialect: type[WarehouseDialect] = module.DIALECT
        return dialect


WAREHOUSES: tuple[Warehouse, ...] = (
    Warehouse("sqlite", ("sqlite",), "apache-airflow-providers-sqlite", "examples"),
    Warehouse("postgresql", ("postgresql", "postgres"), "apache-airflow-providers-postgres"),
    Warehouse("mysql", ("mysql", "mariadb"), "apache-airflow-providers-mysql"),
    Warehouse("duckdb", ("duckdb",), "apache-airflow-providers-duckdb", "duckdb"),
    Warehouse("snowflake", ("snowflake",), "apache-airflow-providers-snowflake", "snowflake"),
    Warehouse("bigquery", ("bigquery", "google_cloud_platform", "gcpbigquery"), "apache-airflow-providers-google",
              "bigquery"),
    Warehouse("databricks", ("databricks",), "apache-airflow-providers-databricks", "databricks"),
    Warehouse("redshift", ("redshift",), "apache-airflow-providers-amazon", "redshift"),
    Warehouse("mssql", ("mssql", "microsoft_sql_server", "azure_sql"), "apache-airflow-providers-microsoft-mssql",
              "mssql"),
)


class UnsupportedWarehouse(ValueError):
    """The connection's warehouse has no dialect module."""


def engine_of(hook: Any) -> str:
    """The engine a common-sql hook speaks to: its ``dialect_name``, else its connection type.

    >>> from types import SimpleNamespace
    >>> engine_of(SimpleNamespace(dialect_name="postgresql")), engine_of(SimpleNamespace(dialect_name="default",
    ...                                                                                  conn_type="duckdb"))
    ('postgresql', 'duckdb')
    """
    name = getattr(hook, "dialect_name", None)
    return str(name if name and name != "default" else getattr(hook, "conn_type", None) or name)


def warehouse_of(engine: str | None) -> Warehouse | None:
    """The supported warehouse of an engine name or connection type (a built-in one, else one another
    package registered), or None."""
    built_in = next((w for w in WAREHOUSES if engine in w.engines), None)
    if built_in is not None or not engine:
        return built_in
    return next((w for w in registered() if engine in w.engines), None)


def registered() -> list[Warehouse]:
    """The warehouses other packages registered in :data:`ENTRY_POINT_GROUP` (none imported yet), except
    those named after a built-in warehouse's engine, which the built-in one serves.

    Entry points naming one dialect class (one per name its hooks report: ``clickhouse`` and
    ``clickhousedb``) are one warehouse, named by the first of them in sorted order, serving them all.
    """
    built_in = {engine for w in WAREHOUSES for engine in w.engines}
    by_dialect: dict[str, list[EntryPoint]] = {}
    for point in sorted(_entry_points(tuple(sys.path)), key=lambda p: p.name):
        if point.name not in built_in:
            by_dialect.setdefault(point.value, []).append(point)
    return [Warehouse(points[0].name, tuple(p.name for p in points),
                      points[0].dist.name if points[0].dist else points[0].value, entry_point=points[0])
            for points in by_dialect.values()]


@functools.lru_cache(maxsize=4)
def _entry_points(path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """The group's entry points on ``path`` (``sys.path``): read once a path, as a scan of every
    installed distribution takes tens of milliseconds and operators ask on every connection they read."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def _load(point: EntryPoint) -> type[WarehouseDialect]:
    """The dialect class a registered entry point names, checked against the contract."""
    where = f"the warehouse entry point {point.name} = {point.value} (group {ENTRY_POINT_GROUP}"
    where += f", distribution {point.dist.name})" if point.dist else ")"
    try:
        loaded = point.load()
    except IncompleteDialect as err:  # the check when the class is defined, as its module was imported
        raise IncompleteDialect(f"{where} fails the dialect contract: {err}") from err
    if not (isinstance(loaded, type) and issubclass(loaded, WarehouseDialect)):
        raise IncompleteDialect(f"{where} names {loaded!r}, which is no WarehouseDialect subclass (docs: Adding a "
                                "warehouse)")
    gaps = contract_gaps(loaded)  # a class declared abstract=True was not checked when it was defined
    if gaps:
        raise IncompleteDialect(f"{where} fails the dialect contract: {loaded.__qualname__} must write: "
                                f"{'; '.join(gaps)} (docs: Adding a warehouse)")
    return loaded


def dialect_for(hook: Any) -> WarehouseDialect:
    """The dialect of a common-sql hook (its module imported on first use).

    :raises UnsupportedWarehouse: naming the warehouses the table operators support.
    """
    engine = engine_of(hook)
    warehouse = warehouse_of(engine)
    if warehouse is None:
        supported = ", ".join(w.name for w in (*WAREHOUSES, *registered()))
        raise UnsupportedWarehouse(f"the table operators support {supported} warehouses; this connection's "
                                   f"dialect is {engine!r}")
    return warehouse.dialect_class()(hook)


def connect(hook: Any) -> Any:
    """A DB-API connection of a common-sql hook, opened the way its warehouse's dialect opens one
    (BigQuery's is not the hook's ``get_conn()``); a hook of another warehouse: its ``get_conn()``."""
    warehouse = warehouse_of(engine_of(hook))
    return warehouse.dialect_class().connect(hook) if warehouse else hook.get_conn()


def all_dialects() -> list[type[WarehouseDialect]]:
    """Every built-in warehouse's dialect (each module imported; registered ones are not: :func:`registered`)."""
    return [w.dialect_class() for w in WAREHOUSES]


def install_hint(conn_type: str | None) -> str | None:
    """What to install for the hook of a supported warehouse's connection type (None: not one of them).

    The Airflow provider itself, as this package's extra requires it: a command that works however
    this package was installed (it is not on PyPI yet, so naming its extra would not).
    """
    warehouse = warehouse_of(conn_type)
    if warehouse is None:
        return None
    if warehouse.extra:
        return (f"pip install '{_required(warehouse.provider, warehouse.extra)}' "
                f"(what the {warehouse.extra} extra of airflow-provider-namelookup installs)")
    return f"pip install {warehouse.provider}"


def _required(package: str, extra: str) -> str:
    """``package`` with the versions this distribution's ``extra`` requires (its installed metadata),
    else its bare name."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        required = requires("airflow-provider-namelookup") or []
    except PackageNotFoundError:
        return package
    for line in required:
        requirement = Requirement(line)
        if (canonicalize_name(requirement.name) == canonicalize_name(package) and requirement.marker is not None
                and requirement.marker.evaluate({"extra": extra})):
            return f"{package}{requirement.specifier}"
    return package
