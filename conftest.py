"""Make tests use this checkout's package, whatever `ccfair` the environment has installed.

Several checkouts (git worktrees) may share one Python environment; an editable install
points at only one of them. The compiled extension is built into python/ccfair/ by
`pip install -e .`, so putting python/ first on the path (also for subprocesses) tests
exactly this tree.
"""

import os
import sys
from pathlib import Path

_PKG = str(Path(__file__).resolve().parent / "python")
sys.path.insert(0, _PKG)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_PKG, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
)
