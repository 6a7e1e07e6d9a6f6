"""The common-sql hook of a ``litehouse`` connection: SQLite's, reporting its own engine name."""

from airflow.providers.sqlite.hooks.sqlite import SqliteHook


class LitehouseHook(SqliteHook):
    """SQLite's hook for a ``litehouse`` connection (its host: the database file)."""

    conn_type = "litehouse"
    hook_name = "Litehouse"

    @property
    def dialect_name(self) -> str:
        return "litehouse"

    def get_uri(self) -> str:
        """SQLite's URI of the connection's file (SQLite's hook reads it from a ``sqlite://`` connection URI)."""
        return f"sqlite:///{self.get_connection(self.get_conn_id()).host}"
