"""Warehouses shipped with this package but registered as another package's would be: by an entry point
of the group ``airflow_provider_namelookup.warehouses`` (``pyproject.toml``), not in the built-in list
(:data:`~airflow_provider_namelookup.warehouse.dialects.WAREHOUSES`). Each was written from the docs' page
"Adding a warehouse" alone, and proves that route."""
