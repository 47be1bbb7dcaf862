"""`python -m ccfair` runs the ccfair command."""

import sys

from ccfair.cli import main

sys.exit(main())
