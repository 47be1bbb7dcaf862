"""``ccfair validate``: the fidelity study of the simulator against Linux.

Every point runs on both backends: the simulator and the kernel backend (real Linux TCP,
docs/kernel.md). Points come from scenarios, scenario files, sweep files or a preset's grid;
a sweep's repetitions (different seeds) are runs of one point. For every point and flow the
study reports the mean share of the total goodput on each backend with its 95% confidence
interval over the repetitions, the difference of the means (kernel minus simulator) and
whether the intervals overlap; per algorithm pair, the median and largest difference over
the grid; heatmaps of the difference over two grid axes; overlaid time series of the points
that differ most; and a Markdown report section. Runs are saved as they finish into
``OUT/results``, so an interrupted study resumes where it stopped (kernel runs are kept; the
simulator's, which take a fraction of a second, always run again, so that they are the
current model's), and a kernel run the self-checks flag is run again (``retries``).

The simulator runs at the kernel's ``HZ`` unless the scenario sets ``tcp.hz`` itself: the
simulator's default (1000) would otherwise be a difference of configuration, not of model.

The study's points (:mod:`~ccfair.validate.points`), the comparison
(:mod:`~ccfair.validate.compare`), its figures (:mod:`~ccfair.validate.figures`), its
Markdown section (:mod:`~ccfair.validate.markdown`) and the study that runs them
(:mod:`~ccfair.validate.study`). An application at the top of the package: it may import
execution, results, figures and presets, and only the CLI imports it.
"""
