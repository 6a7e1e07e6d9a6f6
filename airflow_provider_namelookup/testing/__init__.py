"""What the provider ships for testing warehouses: the compliance suite (:mod:`.compliance`), the
DB-API adapter it runs on (:mod:`.dbapi`), what a warehouse declares it can do
(:mod:`.capabilities`), and how a failure finds the dialect method at fault (:mod:`.trace`).

Example (a contributor's test module for a new warehouse)::

    from airflow_provider_namelookup.testing.compliance import *  # noqa: F403  (the suite's tests)
    from airflow_provider_namelookup.testing.dbapi import DbApiWarehouse

    @pytest.fixture
    def compliance_warehouse(tmp_path):
        yield DbApiWarehouse(lambda: mydriver.connect(tmp_path / "db"), MyDialect)
"""
