"""Litehouse: SQLite under an engine name of its own, a warehouse from outside the provider's package.

An Airflow provider of one connection type (``litehouse``, :mod:`.hook`) and the Name Lookup
provider's dialect for it (:mod:`.dialect`), each registered by an entry point of this package's
``pyproject.toml``.
"""


def get_provider_info() -> dict[str, object]:
    """What Airflow's providers manager reads: the ``litehouse`` connection type and its hook."""
    return {
        "package-name": "namelookup-litehouse",
        "name": "Litehouse",
        "description": "SQLite files under the engine name litehouse (a test of warehouses registered from outside).",
        "versions": ["0.1"],
        "connection-types": [
            {"connection-type": "litehouse", "hook-class-name": "namelookup_litehouse.hook.LitehouseHook"},
        ],
    }
