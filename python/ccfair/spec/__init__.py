"""What to run: scenarios and sweeps, from their input (TOML, dicts, builders) to the resolved
record a backend runs.

Owns the scenario's parts and their checks (:mod:`~ccfair.spec.parts`), the scenario
(:mod:`~ccfair.spec.scenario`), its resolution into the engine's input and the normalised
record (:mod:`~ccfair.spec.resolve`, :mod:`~ccfair.spec.resolved`), the run identity
(:mod:`~ccfair.spec.identity`), TOML in and out (:mod:`~ccfair.spec.toml`), topologies and
routes (:mod:`~ccfair.spec.topology`), the builders (:mod:`~ccfair.spec.shapes`,
:mod:`~ccfair.spec.builders`) and sweeps with their bases, grids and filters
(:mod:`~ccfair.spec.sweep`, :mod:`~ccfair.spec.sweep_base`, :mod:`~ccfair.spec.grid`,
:mod:`~ccfair.spec.filters`).

May import: :mod:`ccfair.backends` (a scenario names its backend: the registry's names) and
the base modules (:mod:`ccfair.errors`, :mod:`ccfair.units`, :mod:`ccfair.algorithms`,
:mod:`ccfair.limits`, ``ccfair._core``). Nothing above: results, execution, figures.
"""
