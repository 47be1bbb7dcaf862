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
from ccfair.testbeds import KERNELS, TESTBEDS

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


#: The algorithms' versions of a kernel that lists none: the engine's defaults.
_LATEST_VERSIONS = "ccfair's defaults (BBR version linux-6.18; CUBIC's HyStart of 5.6 and later)"


def host_rows(
    testbed: str,
    kernel: str,
    *,
    study_testbed: str,
    study_kernel: str,
    testbed_why: str = "",
    kernel_why: str = "",
    tool: SetupRow | None = None,
) -> list[SetupRow]:
    """The setup rows of the hosts, one name per concept: the **testbed** (links and host
    build), the **host kernel** (the TCP substrate's settings), the **algorithm versions**
    the kernel implies (docs/spec.md, "Testbeds and host kernels"), the TCP it runs, and
    the measurement tool's effect on the averages."""
    bed, k = TESTBEDS[testbed], KERNELS[kernel]
    versions = "; ".join(
        f"{cca}: {', '.join(f'{key} {v}' for key, v in params.items())}"
        for cca, params in k.cca.items()
    )
    rows = [
        SetupRow(
            "testbed",
            study_testbed,
            f'testbed = "{testbed}": {bed.summary} ({bed.source})',
            testbed_why,
        ),
        SetupRow("host kernel", study_kernel, f'kernel = "{kernel}": {k.summary}', kernel_why),
        SetupRow(
            "algorithm versions",
            f"those of the hosts' kernel ({study_kernel})",
            f"Linux {kernel}'s: {versions or _LATEST_VERSIONS}",
            "the host kernel chooses them (docs/fidelity.md); a flow's cca_params override",
        ),
        SetupRow(
            "TCP",
            "Linux defaults",
            f"Linux {kernel} as ccfair models it: SACK, RACK, TLP, F-RTO, PRR, delayed ACK "
            f"(40 ms, quick ACKs), timestamps (MSS 1448 B), HZ {bed.tcp.get('hz', 1000)}, the "
            "receive window with autotuning, the send buffer, GSO skbs, a TCP handshake and "
            "measured host latency",
            "repetitions differ through the handshake and host latency drawn from the seed "
            "(docs/fidelity.md); what ccfair does not model of this kernel is listed in "
            "docs/model.md",
        ),
    ]
    if tool is not None:
        rows.append(tool)
    return rows


def iperf_row(study: str) -> SetupRow:
    """What a study's iperf measurement does to the averages: nothing ccfair must model."""
    return SetupRow(
        "measurement tool",
        study,
        "the receiving application's goodput over the whole run, the value iperf reports at "
        "its end; time series sampled by ccfair",
        "iperf's end-of-test average counts from the connection's start, as ccfair's "
        "goodput does (no warm-up is omitted unless -O is given, which the studies do not "
        "state); its 1 s reporting interval only bins the time series, which ccfair's "
        "figures smooth over 1 s too",
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
        testbed: the study's testbed (``ccfair.testbeds.TESTBEDS``), its runs' default.
        kernel: the study's host kernel (``ccfair.testbeds.KERNELS``), its runs' default.
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
    testbed: str = "linux-stock"
    kernel: str = "6.18"

    def sweep_dict(
        self,
        *,
        quick: bool = False,
        baselines: bool = False,
        repetitions: int | None = None,
        testbeds: Sequence[str] = (),
        kernels: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The sweep spec, with the preset name recorded (the report uses its figures), on
        the study's testbed and host kernel unless ``testbeds`` or ``kernels`` say
        otherwise: one value replaces the study's, several become an axis of the grid
        (``scripts/testbed_table.py`` puts them side by side); the sweep's name says which.
        """
        d = dict(self.quick if quick else self.full)
        d["name"] = self.name + ("-quick" if quick else "")
        d["preset"] = self.name
        if baselines:
            d["baselines"] = True
        if repetitions is not None:
            d["repetitions"] = repetitions
        base = {**d["base"], "testbed": self.testbed, "kernel": self.kernel}
        grid = dict(d["grid"])
        for key, values in (("kernel", kernels), ("testbed", testbeds)):
            values = list(values)
            if len(values) == 1:
                base[key] = values[0]
            elif values:
                grid = {key: values, **grid}
            if values:
                d["name"] += "-" + "-".join(values)
        d["base"], d["grid"] = base, grid
        return d

    def sweep(
        self,
        *,
        quick: bool = False,
        baselines: bool = False,
        repetitions: int | None = None,
        testbeds: Sequence[str] = (),
        kernels: Sequence[str] = (),
    ) -> Sweep:
        """The :class:`~ccfair.spec.sweep.Sweep` of this preset.

        Example:
            >>> from ccfair.presets import get
            >>> len(get("harada-dumbbell").sweep().expand())  # doctest: +SKIP
            270
            >>> s = get("harada-dumbbell").sweep(quick=True, testbeds=["ideal", "mininet-netem"])
            >>> s.name, len(s.expand())
            ('harada-dumbbell-quick-ideal-mininet-netem', 48)
        """
        return Sweep.from_dict(
            self.sweep_dict(
                quick=quick,
                baselines=baselines,
                repetitions=repetitions,
                testbeds=testbeds,
                kernels=kernels,
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
