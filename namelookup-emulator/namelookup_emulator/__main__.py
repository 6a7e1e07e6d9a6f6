"""``python -m namelookup_emulator``: the same as ``namelookup-emulator``."""

from namelookup_emulator.cli import main

raise SystemExit(main())
