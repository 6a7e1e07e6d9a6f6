"""The dialect of "litehouse", a hook that reports that engine over SQLite files: registered through
this package's ``airflow_provider_namelookup.warehouses`` entry point, not listed in the provider.

What differs from SQLite's dialect: only its name.
"""

from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect


class LitehouseDialect(SqliteDialect, name="litehouse",
                       credit_promise="claims are INSERT ... ON CONFLICT on the answers table's primary key, and "
                                      "SQLite lets one writer commit at a time"):
    """SQLite's spellings, found by the engine name ``litehouse``."""
