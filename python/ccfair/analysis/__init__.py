"""The numbers over results: statistics over repetitions (Student t intervals, Welch), Jain's
index and the metrics' ranges (:mod:`~ccfair.analysis.stats`), and the model predictions
next to measurements (:mod:`~ccfair.analysis.models`: Ware et al.'s BBR share).

Plain functions of numbers, tables and normalised specs: this package imports no results
object, only the spec and the base modules below it, so that the figures and the result
objects above both use it.
"""
