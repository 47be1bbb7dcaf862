"""Figures and views of results: the style (:mod:`~ccfair.present.style`), heatmaps,
curves over the buffer, time series, throughput against delay, model against measurement,
and what a result shows of itself (:mod:`~ccfair.present.views`: ``r.plot``, ``res.plot``,
notebook display).

Figures take the result objects (:class:`ccfair.results.run.RunResult`,
:class:`ccfair.results.directory.Results`) as arguments and never import them: those objects
sit above this package and offer its figures as their ``plot``. Importing this package
imports neither pandas nor matplotlib (each figure imports them), so that ``ccfair.run``
stays light. It may import :mod:`ccfair.analysis`, :mod:`ccfair.store`, :mod:`ccfair.spec`
and the base modules.
"""
