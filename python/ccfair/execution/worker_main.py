"""Entry point of a local sweep worker process (started by :mod:`ccfair.execution.workers`).

A module of its own, which the package does not import, so that ``python -m`` runs it without
importing it twice.
"""

import os
import signal
import sys

if __name__ == "__main__":  # pragma: no cover - runs in the worker subprocess
    # Before the imports (a second or so): Ctrl-C goes to the whole process group, and the
    # parent decides how its workers stop; a press while a worker starts was a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ccfair.execution.workers import die_with_parent, worker_main

    die_with_parent(int(os.environ.get("CCFAIR_SWEEP_PARENT", "0")))
    sys.exit(worker_main())
