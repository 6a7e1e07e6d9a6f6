"""What the provider ships for testing warehouses: the compliance suite (:mod:`.compliance`) and
the DB-API adapter it runs on (:mod:`.dbapi`).

Example (a contributor's test module for a new warehouse)::

    from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests)
    from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse

    @pytest.fixture
    def compliance_warehouse(tmp_path):
        yield DbApiWarehouse(lambda: mydriver.connect(tmp_path / "db"), MyDialect)
"""
