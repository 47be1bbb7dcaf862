"""ccfair: a congestion-control fairness lab.

Example:
    >>> import ccfair
    >>> result = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
    >>> sorted(result.flows.columns)[:3]
    ['acks_dropped', 'acks_sent', 'base_rtt_ms']
"""

from ccfair import _core
from ccfair.api import default_scenario, run
from ccfair.errors import CcfairError, LimitError, RunError, SpecError
from ccfair.executor import run_sweep
from ccfair.limits import Limits
from ccfair.metrics import Results
from ccfair.results import RunResult, jain_index, load, load_table
from ccfair.spec import Scenario, dumbbell, parking_lot
from ccfair.sweep import Sweep

__version__ = _core.__version__

__all__ = [
    "CcfairError",
    "LimitError",
    "Limits",
    "Results",
    "RunError",
    "RunResult",
    "Scenario",
    "SpecError",
    "Sweep",
    "default_scenario",
    "dumbbell",
    "jain_index",
    "load",
    "load_table",
    "parking_lot",
    "run",
    "run_sweep",
]
