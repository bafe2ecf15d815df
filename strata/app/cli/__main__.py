"""`python -m strata.app.cli` is the same as `strata`."""

import sys

from strata.app.cli import main

sys.exit(main())
