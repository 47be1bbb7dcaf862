"""Results you work with: one run's result (:mod:`~ccfair.results.run`: its tables as Arrow
tables with a lazy pandas view, saved to and loaded from a results directory).

May import the layers below it: :mod:`ccfair.store` (the results directory and its tables),
:mod:`ccfair.analysis` (statistics), :mod:`ccfair.spec`, :mod:`ccfair.backends` and the
base modules. Execution, which makes results, sits above.
"""
