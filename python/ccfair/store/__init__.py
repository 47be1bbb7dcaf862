"""How runs are kept: the results schema and the one list of tables
(:mod:`~ccfair.store.schema`), a run's tables built as Arrow tables
(:mod:`~ccfair.store.tables`), the files ccfair writes atomically (:mod:`~ccfair.store.files`),
the results directory (:mod:`~ccfair.store.directory`: table folders, a run's files, finished
runs, the lock, a sweep's claim), its sweep record (:mod:`~ccfair.store.sweep_record`) and
reading its tables back (:mod:`~ccfair.store.read`).

Every write under a results directory goes through this package. It may import
:mod:`ccfair.spec` (run ids, the sweep a record describes), :mod:`ccfair.backends` (the
provenance a run records) and the base modules; the result objects, execution and figures sit
above it.
"""
