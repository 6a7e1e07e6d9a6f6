"""The one-command demo: ``make demo`` (or ``python -m demo``).

Starts the emulator with a seeded account, builds an SQLite warehouse with a realistic
customers table, runs the ``namelookup_warehouse_enrichment`` example DAG with
``airflow dags test`` on a throwaway AIRFLOW_HOME, runs it a second time to show that
an unchanged table costs nothing, prints a summary, and stops everything it started.
"""
