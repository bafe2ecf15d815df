"""`python -m bot.cli` is the same as `strata`."""

import sys

from bot.cli import main

sys.exit(main())
