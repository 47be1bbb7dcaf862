"""ccfair: a congestion-control fairness lab."""

from ccfair import _core

__version__ = _core.__version__
