"""The published experiments (docs/experiments.md, "The studies") as presets: sweep, setup
table and figures.

``ccfair reproduce NAME`` runs a preset's full grid as the study specifies; ``--quick`` runs a
reduced grid with shorter runs (demos, CI). Either writes its figures and an HTML report into
the results directory. ``ccfair reproduce --list`` shows them.

Each preset carries its **setup table**: per item (topology, rates, delays, buffers, flows,
duration, repetitions, algorithm versions, ...) what the study states and what ccfair runs,
with the reason wherever ccfair had to choose. The report prints it; docs/experiments.md
lists the same choices. Nothing here is tuned to make a figure look like a paper.

The presets are registered here (:data:`PRESETS`), each built by its study's module
(:mod:`~ccfair.presets.harada`, :mod:`~ccfair.presets.ogino`, :mod:`~ccfair.presets.ogawa`,
:mod:`~ccfair.presets.katsumata`, :mod:`~ccfair.presets.aqm`) from
:mod:`~ccfair.presets.base`. A sweep names its preset by name (``preset = "..."``); the
names a sweep may give are :data:`ccfair.spec.sweep.PRESET_NAMES` (the spec sits below the
presets), which a test keeps equal to :data:`PRESETS`. Presets may import every layer below
them (execution, results, figures, analysis, the spec); the report, the studies and the CLI
above use them.

Example:
    >>> p = get("katsumata-rtprop")
    >>> sorted(p.full["grid"]["params.bbr"])[:2]
    ['forced-expire-2.4', 'forced-expire-2.4-loss']
    >>> p.full["repetitions"], p.quick["repetitions"]
    (5, 2)
"""

from __future__ import annotations

from typing import Any

from ccfair.errors import SpecError, close_matches
from ccfair.presets.aqm import harada_aqm_preset
from ccfair.presets.base import Preset
from ccfair.presets.harada import harada_dumbbell_preset, harada_parking_preset
from ccfair.presets.katsumata import katsumata_preset
from ccfair.presets.ogawa import ogawa_preset
from ccfair.presets.ogino import ogino_preset
from ccfair.spec.sweep import Sweep

__all__ = ["PRESETS", "Preset", "count_runs", "get"]


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        harada_dumbbell_preset(),
        harada_parking_preset(2),
        harada_parking_preset(10),
        ogino_preset(),
        ogawa_preset(),
        katsumata_preset(),
        harada_aqm_preset(),
    )
}


def get(name: str) -> Preset:
    """The preset called ``name``; :class:`SpecError` naming the known ones otherwise.

    Example:
        >>> get("harada-dumbbell").full["repetitions"]
        5
    """
    if name not in PRESETS:
        hint = close_matches(name, list(PRESETS))
        more = f'; did you mean "{hint[0]}"?' if hint else ""
        raise SpecError("preset", name, f"is not a preset{more} (presets: {', '.join(PRESETS)})")
    return PRESETS[name]


def count_runs(sweep_dict: dict[str, Any]) -> int:
    """Runs of a preset's grid (product of the axes x repetitions, less the points its
    filters remove), without building them.

    Example:
        >>> count_runs(get("harada-dumbbell").full)
        270
        >>> count_runs(get("harada-aqm").full)
        540
    """
    if sweep_dict.get("filters"):
        return Sweep.from_dict({"name": "count", **sweep_dict}).filtered_runs()
    n = sweep_dict.get("repetitions", 1)
    for values in sweep_dict["grid"].values():
        n *= len(values)
    return n
