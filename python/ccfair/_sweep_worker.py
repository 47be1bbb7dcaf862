"""Entry point of a local sweep worker process (started by ``ccfair.executor``).

A module of its own, which the package does not import, so that ``python -m`` runs it without
importing it twice.
"""

import sys

from ccfair.executor import _worker_main

if __name__ == "__main__":  # pragma: no cover - runs in the worker subprocess
    sys.exit(_worker_main())
