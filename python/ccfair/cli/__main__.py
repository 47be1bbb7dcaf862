"""``python -m ccfair.cli`` runs the ccfair command."""

import sys

from ccfair.cli import main

sys.exit(main())
