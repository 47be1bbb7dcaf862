"""Running: one run and a few in threads (:mod:`~ccfair.execution.runs`,
:mod:`~ccfair.execution.threads`), sweeps (:mod:`~ccfair.execution.sweeps`) in local worker
processes (:mod:`~ccfair.execution.workers`) or on a Dask cluster
(:mod:`~ccfair.execution.cluster`). The rules come from the backends' capabilities, not their
names.

Execution makes results: it may import :mod:`ccfair.results` (what a run returns),
:mod:`ccfair.store` (where runs are written), :mod:`ccfair.spec`, :mod:`ccfair.backends` and
the base modules. Nothing below imports it; presets, the report, the studies and the CLI
above use it.
"""
