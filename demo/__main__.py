"""``python -m demo [--rows N] [--short]``"""

from demo.run import main

raise SystemExit(main())
