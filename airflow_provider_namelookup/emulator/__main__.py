"""``python -m airflow_provider_namelookup.emulator``: the same as ``namelookup-emulator``."""

from airflow_provider_namelookup.emulator.cli import main

raise SystemExit(main())
