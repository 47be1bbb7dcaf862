"""One self-contained HTML report of a results directory (``ccfair report DIR``).

The page reads and prints: a summary at the top (what ran, the headline figures, what the
checks found), the setup table (what the study states and what ccfair ran, item by item), every
figure (PNG embedded; PNG, SVG and PDF files in ``DIR/figures``), the tables per grid point and
per algorithm (means with 95% intervals clipped to each metric's range, n per row, numbers
to significant digits, split by the first grid key when long; no scroll boxes), the model
comparison (Ware et al.), harm where baseline runs exist, the sweep spec and provenance. No
scripts and no external resources: it opens anywhere, offline, and prints on A4.

The page (:mod:`~ccfair.report.page`) is made of sections (:mod:`~ccfair.report.sections`),
the setup table (:mod:`~ccfair.report.setup`), figures (:mod:`~ccfair.report.figures`) and
HTML helpers (:mod:`~ccfair.report.html`). The report draws a preset's figures and prints its
setup table when the directory holds a preset's sweep, so it sits above
:mod:`ccfair.presets`: it may import the presets and every layer below them (results,
figures, analysis, the store, the spec); the studies and the CLI above use it.
"""
