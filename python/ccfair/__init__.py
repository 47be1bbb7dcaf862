"""ccfair: a congestion-control fairness lab.

The public names load on first use, so that ``import ccfair`` (and the ``ccfair`` command's
start) does not pay for pandas, pyarrow and pydantic until something needs them.

Example:
    >>> import ccfair
    >>> result = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
    >>> sorted(result.flows.columns)[:3]
    ['ack_dropped_pkts', 'ack_sent_pkts', 'base_rtt_ms']
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ccfair import _core

if TYPE_CHECKING:  # what the lazy names resolve to, for type checkers and readers
    from ccfair.analysis.stats import jain_index  # noqa: F401
    from ccfair.errors import CcfairError, LimitError, RunError, SpecError  # noqa: F401
    from ccfair.execution.runs import run  # noqa: F401
    from ccfair.execution.sweeps import run_sweep  # noqa: F401
    from ccfair.limits import Limits  # noqa: F401
    from ccfair.results.directory import Results  # noqa: F401
    from ccfair.results.run import RunResult, load  # noqa: F401
    from ccfair.spec.scenario import Scenario  # noqa: F401
    from ccfair.spec.shapes import default_scenario, dumbbell, parking_lot  # noqa: F401
    from ccfair.spec.sweep import Sweep  # noqa: F401
    from ccfair.store.read import load_table  # noqa: F401

__version__ = _core.__version__

#: Public name -> the module that defines it.
_LAZY = {
    "CcfairError": "ccfair.errors",
    "LimitError": "ccfair.errors",
    "Limits": "ccfair.limits",
    "Results": "ccfair.results.directory",
    "RunError": "ccfair.errors",
    "RunResult": "ccfair.results.run",
    "Scenario": "ccfair.spec.scenario",
    "SpecError": "ccfair.errors",
    "Sweep": "ccfair.spec.sweep",
    "default_scenario": "ccfair.spec.shapes",
    "dumbbell": "ccfair.spec.shapes",
    "jain_index": "ccfair.analysis.stats",
    "load": "ccfair.results.run",
    "load_table": "ccfair.store.read",
    "parking_lot": "ccfair.spec.shapes",
    "run": "ccfair.execution.runs",
    "run_sweep": "ccfair.execution.sweeps",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ccfair' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
