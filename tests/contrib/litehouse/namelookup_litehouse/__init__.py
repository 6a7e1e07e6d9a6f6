"""Litehouse: SQLite under an engine name of its own, a warehouse dialect from outside the provider's package."""
