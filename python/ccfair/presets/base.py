"""What every preset is made of: :class:`Preset` (a named experiment: its full and quick
sweeps, its figures, its setup table), :class:`SetupRow`, the rows and constants the
studies share, and the figure helpers their figures use.

Example:
    >>> REPETITIONS, QUICK_REPETITIONS
    (5, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ccfair.analysis.models import model_table
from ccfair.present.heatmaps import heatmaps
from ccfair.present.model import model_vs_measured
from ccfair.present.style import SMOOTH_S, axis_name, point_label, slug, varying_keys
from ccfair.present.timeseries import jain_over_time, timeseries
from ccfair.results.directory import Results
from ccfair.spec.sweep import Sweep

FigureList = list[tuple[str, str, Figure]]


CCAS3 = ["reno", "cubic", "bbr"]


DELAYS = ["2ms", "18ms", "100ms"]


ALPHAS = [0.5, 1, 2, 4, 8, 16]


#: Repetitions of every full grid. Runs differ between seeds for every algorithm (the modelled
#: handshake and host latency, docs/fidelity.md), so a point has a spread; with 5 runs the 95%
#: Student t interval is 1.24 standard deviations wide each side (t = 2.78), where 2 runs
#: (the Harada study's count) give 8.98 (t = 12.7): an interval that says little.
REPETITIONS = 5


#: Repetitions of the ``--quick`` grids: the fewest that give an interval at all.
QUICK_REPETITIONS = 2


#: The studies ran BBRv1 on Linux 4.13 and 4.15 (see :data:`BBR_ROW`).
BBR_STUDY_PARAMS = {"version": "linux-4.15"}


@dataclass(frozen=True)
class SetupRow:
    """One line of a preset's setup table.

    Attributes:
        item: what is set (``"bottleneck"``, ``"buffer"``, ``"repetitions"``...).
        study: what the study states, or ``"not stated"``.
        ccfair: what ccfair runs.
        why: the reason, wherever ccfair chose (empty when it follows the study).
    """

    item: str
    study: str
    ccfair: str
    why: str = ""


BBR_ROW = SetupRow(
    "BBR version",
    "BBRv1 of the studies' Linux 4.13 / 4.15 kernels",
    'version "linux-4.15" (params.bbr): Linux 4.15\'s tcp_bbr.c (pacing on the MTU without '
    "the 0.99 margin, no ACK-aggregation cwnd, no EDT in-flight term, min_rtt refreshed by an "
    "equal sample)",
    "ccfair's BBRv1 versions are linux-4.13, linux-4.15 and linux-6.18 (docs/fidelity.md, "
    "BBRv1); the studies ran 4.13 and 4.15",
)


CUBIC_ROW = SetupRow(
    "Reno, CUBIC",
    "the kernel's",
    "Linux tcp_cong.c / tcp_cubic.c as of 6.x (HyStart with µs delay samples)",
    "the 4.x HyStart (ms clock, before the 5.7 rework) is not modelled; it only changes the "
    "slow-start exit",
)


TCP_ROW = SetupRow(
    "TCP",
    "Linux defaults",
    "Linux 6.x semantics: SACK, RACK, TLP, F-RTO, delayed ACK (40 ms, quick ACKs), "
    "timestamps (MSS 1448 B), HZ 1000, receive window with autotuning, handshake and measured "
    "host latency",
    "repetitions differ through the handshake and host latency drawn from the seed "
    "(docs/fidelity.md)",
)


def reps_row(study: str, *, quick: int = QUICK_REPETITIONS) -> SetupRow:
    return SetupRow(
        "repetitions",
        study,
        f"{REPETITIONS} (seeds 1-{REPETITIONS}); --quick: {quick}",
        "enough for a useful 95% interval: with 5 runs the t interval is 1.24 standard "
        "deviations each side, with 2 it is 8.98; --repetitions N runs another count",
    )


def goodput_row() -> SetupRow:
    return SetupRow(
        "throughput",
        "each flow's average goodput over the run, averaged over repetitions",
        "the same: payload delivered in order over the whole run (no warm-up excluded), mean "
        "over repetitions with a 95% interval",
    )


@dataclass(frozen=True)
class Preset:
    """A named experiment.

    Attributes:
        name: the preset's name (``ccfair reproduce NAME``).
        title: one line.
        study: the study it reproduces.
        full: the sweep spec (dict of the TOML schema) of the full grid.
        quick: the reduced sweep.
        figures: builds the figures from a results directory: (file name, caption, figure).
        setup: the setup table: what the study states and what ccfair runs.
        headline: names of the figures the report shows first, in its summary.
        quick_note: how the ``--quick`` grid differs from the full one.
    """

    name: str
    title: str
    study: str
    full: dict[str, Any]
    quick: dict[str, Any]
    figures: Callable[[Results], FigureList]
    setup: list[SetupRow] = field(default_factory=list)
    headline: tuple[str, ...] = ()
    quick_note: str = ""

    def sweep_dict(
        self,
        *,
        quick: bool = False,
        baselines: bool = False,
        repetitions: int | None = None,
        profiles: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The sweep spec, with the preset name recorded (the report uses its figures).

        ``profiles`` (testbed profiles, docs/spec.md) become a ``profile`` axis of the grid
        (``scripts/profile_table.py`` puts them side by side); the sweep's name says which.
        """
        d = dict(self.quick if quick else self.full)
        d["name"] = self.name + ("-quick" if quick else "")
        d["preset"] = self.name
        if baselines:
            d["baselines"] = True
        if repetitions is not None:
            d["repetitions"] = repetitions
        if profiles:
            d["grid"] = {"profile": list(profiles), **d["grid"]}
            d["name"] += "-" + "-".join(profiles)
        return d

    def sweep(
        self,
        *,
        quick: bool = False,
        baselines: bool = False,
        repetitions: int | None = None,
        profiles: Sequence[str] = (),
    ) -> Sweep:
        """The :class:`~ccfair.spec.sweep.Sweep` of this preset.

        Example:
            >>> from ccfair.presets import get
            >>> len(get("harada-dumbbell").sweep().expand())  # doctest: +SKIP
            270
            >>> s = get("harada-dumbbell").sweep(quick=True, profiles=["ideal", "mininet-netem"])
            >>> s.name, len(s.expand())
            ('harada-dumbbell-quick-ideal-mininet-netem', 48)
        """
        return Sweep.from_dict(
            self.sweep_dict(
                quick=quick, baselines=baselines, repetitions=repetitions, profiles=profiles
            )
        )


def grid_points(res: Results) -> pd.DataFrame:
    """Rep-0 runs of the grid (no baselines), one row per point, in grid order."""
    pts = res.points()
    return pts[(pts["rep"] == 0) & pts["baseline"].isna()]


def _nearest(have: list[Any], want: Any) -> Any:
    """``want`` if the grid has it, else the middle value of the axis."""
    return want if want in have else have[len(have) // 2]


def select_points(res: Results, prefer: dict[str, Any]) -> pd.DataFrame:
    """Rep-0 grid points at the preferred value of each key (the nearest the grid has)."""
    pts = grid_points(res)
    for key, want in prefer.items():
        if key in pts.columns and len(pts):
            pts = pts[pts[key] == _nearest(list(dict.fromkeys(pts[key])), want)]
    return pts


def row_label(res: Results, row: Any, keys: list[str] | None = None) -> str:
    keys = keys if keys is not None else res.grid_keys
    return ", ".join(point_label(k, row[k]) for k in keys)


def timeseries_figures(res: Results, rows: pd.DataFrame, caption: str) -> FigureList:
    figs = []
    for _, row in rows.iterrows():
        label = row_label(res, row, varying_keys(res))
        fig = timeseries(res, row["run_id"], title=label)
        figs.append((f"timeseries-{slug(label)}", f"{caption} ({label}).", fig))
    return figs


def model_figures(res: Results, by: str | None) -> FigureList:
    fig = model_vs_measured(model_table(res), by=by)
    if fig is None:
        return []
    return [
        (
            "model-vs-measured",
            "BBR's share of goodput, measured (each repetition a small dot, the mean a marker) "
            "against Ware et al. (IMC 2019): left, against the full N-flow prediction with the "
            "PROBE_RTT cost; right, against the buffer in BDPs with both model curves. Colour: "
            "the loss-based algorithm BBR competes with.",
            fig,
        )
    ]


def heatmap_figures(res: Results, caption: str, **kw: Any) -> FigureList:
    return [(name, caption, fig) for name, fig in heatmaps(res, **kw)]


SMOOTH_NOTE = (
    f"goodput is a {SMOOTH_S:g} s moving average of the sampled goodput "
    "(ccfair plot --smooth 0 draws the raw samples)"
)


def jain_over_time_figures(res: Results, picks: pd.DataFrame, by: str) -> FigureList:
    runs = [(str(row[by]), row["run_id"]) for _, row in picks.iterrows()]
    if not runs:
        return []
    where = row_label(res, picks.iloc[0], [k for k in varying_keys(res) if k != by])
    fig = jain_over_time(res, runs, title=where)
    return [
        (
            "jain-over-time",
            f"Jain index of the flows' goodput over time, each flow's goodput averaged over "
            f"{SMOOTH_S:g} s windows; one line per {axis_name(by)} "
            f"(repetition 0; {where}).",
            fig,
        )
    ]
