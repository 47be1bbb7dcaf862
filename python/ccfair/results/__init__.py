"""Results you work with: one run's result (:mod:`~ccfair.results.run`: its tables as Arrow
tables with a lazy pandas view, saved to and loaded from a results directory) and a results
directory as a whole with its metric tables (:mod:`~ccfair.results.directory`), which
computes its points (:mod:`~ccfair.results.points`) and metric tables
(:mod:`~ccfair.results.metrics`) from its tables.

Both offer their figures (``r.plot``, ``res.plot``) and notebook views, so they sit above
:mod:`ccfair.present`; they may import it, :mod:`ccfair.store` (the results directory and its
tables), :mod:`ccfair.analysis` (statistics, models), :mod:`ccfair.spec`,
:mod:`ccfair.backends` and the base modules. Execution, which makes results, sits above.
"""
