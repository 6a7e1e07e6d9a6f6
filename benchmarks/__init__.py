"""Benchmarks of airflow-provider-namelookup against the emulator, run as a separate process.

Three benchmarks, each reported as ratios against a baseline measured in the same run:

* ``table``: :mod:`benchmarks.table_enrichment`, the headline. ``SqlGenderLookupOperator``
  over SQLite tables of skewed customer names, beside the naive per-row loop a user
  would write in a ``PythonOperator``.
* ``hook``: :mod:`benchmarks.hook_throughput`. ``NameLookupAsyncHook.gender_batch`` at
  several ``max_concurrency`` levels against the sync ``NameLookupHook.gender_batch``.
* ``emulator``: :mod:`benchmarks.emulator_throughput`. Requests/s and names/s of the
  emulator itself, with single-name and 100-name requests at several concurrency levels.

Supporting modules: :mod:`benchmarks.service` (the emulator process and its counters),
:mod:`benchmarks.warehouse` (the SQLite source tables), :mod:`benchmarks.child` (one
measured run in a fresh interpreter, for wall time and peak RSS), :mod:`benchmarks.provider`
and :mod:`benchmarks.naive` (the two ways of enriching a table), :mod:`benchmarks.figures`
(the Markdown report) and :mod:`benchmarks.machine` (what it ran on).

Example::

    python -m benchmarks.run --quick              # small sizes: 15 min, 13 of them the in-task DAG runs
    python -m benchmarks.run                      # the full run (see benchmarks/README.md)
    python -m benchmarks.run --only hook,emulator
"""
