"""The published experiments (docs/experiments.md, "The studies") as presets: sweep, setup
table and figures.

``ccfair reproduce NAME`` runs a preset's full grid as the study specifies; ``--quick`` runs a
reduced grid with shorter runs (demos, CI). Either writes its figures and an HTML report into
the results directory. ``ccfair reproduce --list`` shows them.

Each preset carries its **setup table**: per item (topology, rates, delays, buffers, flows,
duration, repetitions, algorithm versions, ...) what the study states and what ccfair runs,
with the reason wherever ccfair had to choose. The report prints it; docs/experiments.md
lists the same choices. Nothing here is tuned to make a figure look like a paper.

Example:
    >>> p = get("katsumata-rtprop")
    >>> sorted(p.full["grid"]["params.bbr"])[:2]
    ['forced-expire-2.4', 'forced-expire-2.4-loss']
    >>> p.full["repetitions"], p.quick["repetitions"]
    (5, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ccfair.present.curves import dots, flow_distribution, metric_vs_buffer, throughput_vs_buffer
from ccfair.present.heatmaps import heatmaps, parking_lot_groups
from ccfair.present.model import model_vs_measured
from ccfair.present.style import SMOOTH_S, axis_name, point_label, slug, varying_keys
from ccfair.present.timeseries import jain_over_time, timeseries, timeseries_rows
from ccfair.results.directory import Results

__all__ = ["PRESETS", "Preset", "SetupRow", "get"]

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
BBR_STUDY_PARAMS = {"profile": "linux-4.9"}


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
    'profile "linux-4.9" (params.bbr): no ACK-aggregation cwnd (extra_acked), no EDT '
    "in-flight term, min_rtt refreshed by an equal sample",
    "ccfair has two BBRv1 profiles, linux-4.9 and linux-5.x. Kernels 4.13 and 4.15 predate "
    "the EDT model (4.20), extra_acked (5.1) and the strict min-RTT refresh (5.10): in each of "
    "these linux-4.9 matches them and linux-5.x does not. Not modelled: the 4.x pacing margin, "
    "the PROBE_RTT and idle-restart fixes of 4.17-4.19 (docs/fidelity.md, BBRv1)",
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


def _reps_row(study: str, *, quick: int = QUICK_REPETITIONS) -> SetupRow:
    return SetupRow(
        "repetitions",
        study,
        f"{REPETITIONS} (seeds 1-{REPETITIONS}); --quick: {quick}",
        "enough for a useful 95% interval: with 5 runs the t interval is 1.24 standard "
        "deviations each side, with 2 it is 8.98; --repetitions N runs another count",
    )


def _goodput_row() -> SetupRow:
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
    ) -> Any:
        """The :class:`ccfair.sweep.Sweep` of this preset.

        Example:
            >>> len(get("harada-dumbbell").sweep().expand())  # doctest: +SKIP
            270
            >>> s = get("harada-dumbbell").sweep(quick=True, profiles=["ideal", "mininet-netem"])
            >>> s.name, len(s.expand())
            ('harada-dumbbell-quick-ideal-mininet-netem', 48)
        """
        from ccfair.spec.sweep import Sweep

        return Sweep.from_dict(
            self.sweep_dict(
                quick=quick, baselines=baselines, repetitions=repetitions, profiles=profiles
            )
        )


# --------------------------------------------------------------------------------------------
# Figure helpers


def _grid_points(res: Results) -> pd.DataFrame:
    """Rep-0 runs of the grid (no baselines), one row per point, in grid order."""
    pts = res.points()
    return pts[(pts["rep"] == 0) & pts["baseline"].isna()]


def _nearest(have: list[Any], want: Any) -> Any:
    """``want`` if the grid has it, else the middle value of the axis."""
    return want if want in have else have[len(have) // 2]


def _select(res: Results, prefer: dict[str, Any]) -> pd.DataFrame:
    """Rep-0 grid points at the preferred value of each key (the nearest the grid has)."""
    pts = _grid_points(res)
    for key, want in prefer.items():
        if key in pts.columns and len(pts):
            pts = pts[pts[key] == _nearest(list(dict.fromkeys(pts[key])), want)]
    return pts


def _label(res: Results, row: Any, keys: list[str] | None = None) -> str:
    keys = keys if keys is not None else res.grid_keys
    return ", ".join(point_label(k, row[k]) for k in keys)


def _timeseries_figs(res: Results, rows: pd.DataFrame, caption: str) -> FigureList:
    figs = []
    for _, row in rows.iterrows():
        label = _label(res, row, varying_keys(res))
        fig = timeseries(res, row["run_id"], title=label)
        figs.append((f"timeseries-{slug(label)}", f"{caption} ({label}).", fig))
    return figs


def _model(res: Results, by: str | None) -> FigureList:
    from ccfair.analysis.models import model_table

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


def _heatmaps(res: Results, caption: str, **kw: Any) -> FigureList:
    return [(name, caption, fig) for name, fig in heatmaps(res, **kw)]


_SMOOTH = (
    f"goodput is a {SMOOTH_S:g} s moving average of the sampled goodput "
    "(ccfair plot --smooth 0 draws the raw samples)"
)


# --------------------------------------------------------------------------------------------
# 1. harada-dumbbell


def _harada_dumbbell_figures(res: Results) -> FigureList:
    figs = _heatmaps(
        res,
        "Mean goodput of each flow (Mbit/s) over the repetitions, on the grid of bottleneck "
        "one-way delay D and buffer (x BDP); darker is higher; small print: lowest and highest "
        "repetition.",
        x="delay",
        y="alpha",
        by="ccas",
    )
    figs += _model(res, "ccas")
    figs += [
        (
            n,
            "Jain index of the two flows' goodput against the buffer, one line per bottleneck "
            "delay, one panel per algorithm pair: mean (line), each repetition (dots), 95% "
            "interval (band, clipped to [0, 1]).",
            f,
        )
        for n, f in metric_vs_buffer(res, metric="jain_index", lines="delay", panels=["ccas"])
    ]
    picks = _select(res, {"delay": "18ms", "alpha": 2})
    figs += _jain_over_time(res, picks, "ccas")
    figs += _timeseries_figs(res, picks, f"One run (repetition 0) over time; {_SMOOTH}")
    return figs


def _jain_over_time(res: Results, picks: pd.DataFrame, by: str) -> FigureList:
    runs = [(str(row[by]), row["run_id"]) for _, row in picks.iterrows()]
    if not runs:
        return []
    where = _label(res, picks.iloc[0], [k for k in varying_keys(res) if k != by])
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


def _harada_setup(topology: str, study_reps: str) -> list[SetupRow]:
    return [
        SetupRow("topology", topology, "the same (node names in lower case)"),
        SetupRow(
            "bottleneck",
            "50 Mbit/s, one-way delay D in {2, 18, 100} ms, drop-tail",
            "the same",
        ),
        SetupRow(
            "access links",
            "1000 Mbit/s, 1 ms",
            "1000 Mbit/s, 1 ms, drop-tail 1000 packets",
            "the study gives no access buffer; 1000 packets never fills at 50 Mbit/s",
        ),
        SetupRow(
            "buffer",
            "alpha x BDP, alpha in {0.5, 1, 2, 4, 8, 16}; BDP of the RTT 2 x (1 + D + 1) ms",
            "the same, rounded to whole packets (at least 1)",
        ),
        SetupRow(
            "start",
            "all flows start together",
            "all at t = 0, each opening with a TCP handshake",
        ),
        SetupRow("duration", "60 s", "60 s; time series sampled every 100 ms"),
        _goodput_row(),
        _reps_row(study_reps),
        BBR_ROW,
        CUBIC_ROW,
        TCP_ROW,
    ]


def _harada_dumbbell() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "harada-dumbbell",
        "n_flows": 2,
        "bottleneck_rate": "50Mbit/s",
        "access_rate": "1Gbit/s",
        "access_delay": "1ms",
        "receiver_delay": "1ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    pairs = [["reno", "bbr"], ["cubic", "bbr"], ["reno", "cubic"]]
    bbr = {"linux-4.9": BBR_STUDY_PARAMS}
    return Preset(
        name="harada-dumbbell",
        title="Two flows on one 50 Mbit/s bottleneck: delay x buffer x CCA pair",
        study="Harada & Kamiyama, fairness of BBR, CUBIC and Reno on a dumbbell",
        full={
            "base": base,
            "grid": {"ccas": pairs, "delay": DELAYS, "alpha": ALPHAS, "params.bbr": bbr},
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": pairs, "delay": ["2ms", "18ms"], "alpha": [1, 4], "params.bbr": bbr},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_harada_dumbbell_figures,
        setup=[
            *_harada_setup(
                "dumbbell: H1, H2 -> S1 -> bottleneck -> S2 -> H3, H4; flows H1->H3, H2->H4; "
                "pairs Reno-BBR, CUBIC-BBR, Reno-CUBIC",
                "2, averaged",
            ),
        ],
        headline=("heatmap-reno-bbr", "model-vs-measured"),
        quick_note="D in {2, 18} ms, alpha in {1, 4}, 10 s runs, 2 repetitions",
    )


# --------------------------------------------------------------------------------------------
# 2-3. harada-2hop, harada-10hop


def _parking_figures(res: Results) -> FigureList:
    ten = any("cross10" in str(n) for n in res.table("flows")["flow_name"].unique())
    figs = _heatmaps(
        res,
        "Mean goodput (Mbit/s) of the main flow and of the cross flows over bottleneck "
        "one-way delay D and buffer (x BDP) of every bottleneck; [main CCA, cross CCA] in "
        "the title; darker is higher; small print: lowest and highest repetition"
        + ("; the ten cross flows are averaged." if ten else "."),
        x="delay",
        y="alpha",
        by="ccas",
        flow_group=parking_lot_groups if ten else (lambda n: n),
    )
    figs += [
        (
            n,
            "Jain index of all flows' goodput against the buffer, one line per delay, one "
            "panel per [main, cross] assignment: mean, repetitions (dots), 95% interval.",
            f,
        )
        for n, f in metric_vs_buffer(res, metric="jain_index", lines="delay", panels=["ccas"])
    ]
    pts = _select(res, {"delay": "18ms", "alpha": 2})
    mains = list(dict.fromkeys(str(c).split("-")[0] for c in pts["ccas"]))
    for main in mains:
        mine = pts[[str(c).split("-")[0] == main for c in pts["ccas"]]]
        runs = [
            (f"cross flows {str(c).split('-')[1]}", rid)
            for c, rid in zip(mine["ccas"], mine["run_id"], strict=True)
        ]
        where = _label(res, mine.iloc[0], ["delay", "alpha"])
        figs.append(
            (
                f"goodput-over-time-main-{main}",
                f"Goodput over time of the {main} main flow and of each cross flow, one row per "
                f"cross-flow algorithm (repetition 0; {where}); {_SMOOTH}.",
                timeseries_rows(res, runs, what="goodput", title=f"main flow {main}, {where}"),
            )
        )
    figs += _jain_over_time(res, pts, "ccas")
    cubic_cross = pts[[str(c).endswith("-cubic") for c in pts["ccas"]]]
    figs += _timeseries_figs(
        res,
        cubic_cross if len(cubic_cross) else pts.head(3),
        f"One run (repetition 0) over time, every main-flow algorithm against CUBIC cross "
        f"flows; {_SMOOTH}",
    )
    return figs


def _parking(hops: int) -> Preset:
    name = f"harada-{hops}hop"
    base = {
        "builder": "parking_lot",
        "name": name,
        "hops": hops,
        "rate": "50Mbit/s",
        "access_rate": "1Gbit/s",
        "access_delay": "1ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    assignments = [[m, c] for m in CCAS3 for c in CCAS3]
    quick_assign = [["bbr", "cubic"], ["cubic", "bbr"]] if hops == 2 else [["bbr", "cubic"]]
    bbr = {"linux-4.9": BBR_STUDY_PARAMS}
    if hops == 2:
        topology = (
            "routers R1 -> R2 -> R3, bottlenecks L1, L2; main flow H1 -> H6 over both, cross "
            "flows H2 -> H3 over L1 and H4 -> H5 over L2"
        )
    else:
        topology = (
            "routers R1 ... R11, bottlenecks L1 ... L10; main flow H1 -> H22 over all ten, "
            "cross flows H2 -> H3, ..., H20 -> H21, each over one Li"
        )
    setup = _harada_setup(topology, "2")
    setup.insert(
        1,
        SetupRow(
            "algorithms",
            "every assignment of {Reno, CUBIC, BBR} to the main flow and to the cross flows "
            "(all cross flows run one algorithm)",
            "the same: 9 assignments, ccas = [main, cross]",
        ),
    )
    setup[4] = SetupRow(
        "buffer",
        "alpha x BDP of the one-hop (cross-flow) path, alpha in {0.5, ..., 16}",
        "the same on every Li, with cross flow i as the reference path",
    )
    return Preset(
        name=name,
        title=(
            "Two bottlenecks in series: main flow across both, one cross flow on each"
            if hops == 2
            else "Ten bottlenecks in series: main flow across all, one cross flow on each"
        ),
        study="Harada & Kamiyama, parking-lot topologies",
        full={
            "base": base,
            "grid": {"ccas": assignments, "delay": DELAYS, "alpha": ALPHAS, "params.bbr": bbr},
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": quick_assign, "delay": ["18ms"], "alpha": [1, 4], "params.bbr": bbr},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_parking_figures,
        setup=setup,
        headline=("heatmap-bbr-cubic", "heatmap-cubic-bbr"),
        quick_note=(
            ("[BBR, CUBIC] and [CUBIC, BBR]" if hops == 2 else "[BBR, CUBIC]")
            + ", D = 18 ms, alpha in {1, 4}, 10 s runs, 2 repetitions"
        ),
    )


# --------------------------------------------------------------------------------------------
# 4. ogino-copa


def _ogino_figures(res: Results) -> FigureList:
    figs = [
        (
            n,
            "Mean throughput per flow of each algorithm against the buffer (x BDP), n Copa "
            "flows against n CUBIC or n BBR flows: mean over repetitions (line), each repetition "
            "(dots), 95% interval (band); dashed: the fair share 50 Mbit/s / 2n.",
            f,
        )
        for n, f in throughput_vs_buffer(res, x="alpha", panels=["ccas", "per_cca"])
    ]
    figs += [
        (
            n,
            "The bottleneck queue's 99th percentile (sampled every 50 ms, in BDP) against the "
            "buffer: where it stays below the buffer (the dotted diagonal) and no packet is "
            "dropped, the buffer never filled and any larger buffer is the same network.",
            f,
        )
        for n, f in metric_vs_buffer(
            res, metric="queue_p99_bdp", lines="per_cca", panels=["ccas"], diagonal=True
        )
    ]
    pts = _grid_points(res)
    alphas = [a for a in res.axes.get("alpha", []) if a in set(pts["alpha"])]
    chosen = [a for a in (0.5, 1, 8, 64) if a in alphas] or alphas[:: max(1, len(alphas) // 3)]
    for n in dict.fromkeys(pts["per_cca"]) if "per_cca" in pts.columns else [None]:
        for ccas in dict.fromkeys(pts["ccas"]):
            sel = pts[(pts["ccas"] == ccas) & (pts["alpha"].isin(chosen))]
            if n is not None:
                sel = sel[sel["per_cca"] == n]
            figs += _timeseries_figs(
                res,
                sel,
                "Goodput, cwnd and packets in flight, RTT of each flow, the bottleneck queue and "
                f"Copa's delta and mode over time (repetition 0); {_SMOOTH}",
            )
    return figs


def _ogino() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "ogino-copa",
        "bottleneck_rate": "50Mbit/s",
        # RTT 2 x (1 + 18 + 1) ms = 40 ms, 1 BDP = 250 kB as in the study.
        "bottleneck_delay": "18ms",
        "duration": "120s",
        "sample_interval": "50ms",
    }
    ccas = [["copa", "cubic"], ["copa", "bbr"]]
    bbr = {"linux-4.9": BBR_STUDY_PARAMS}
    return Preset(
        name="ogino-copa",
        title="n Copa flows against n CUBIC or n BBR flows over buffers of 0.5 to 64 BDP",
        study="Ogino, Okada & Utsumi, Copa against CUBIC and BBR",
        full={
            "base": base,
            "grid": {
                "ccas": ccas,
                "per_cca": [1, 4],
                "alpha": [0.5, 1, 2, 4, 8, 16, 32, 64],
                "params.bbr": bbr,
            },
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"ccas": ccas, "per_cca": [1], "alpha": [1, 8], "params.bbr": bbr},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_ogino_figures,
        setup=[
            SetupRow(
                "topology",
                "dumbbell of 2n senders and 2n receivers, one bottleneck",
                "the same: senders h1..h2n -> s1 -> bottleneck -> s2 -> receivers",
            ),
            SetupRow(
                "bottleneck",
                "50 Mbit/s, round-trip propagation 40 ms (1 BDP = 250 kB), no random loss",
                "50 Mbit/s, one-way 18 ms; with 1 ms access links each side the RTT is 40 ms",
            ),
            SetupRow(
                "access links",
                "not stated",
                "1 Gbit/s, 1 ms, drop-tail 1000 packets",
                "the Harada access links; they add 4 ms of the 40 ms RTT",
            ),
            SetupRow(
                "algorithms",
                "n Copa vs n CUBIC and n Copa vs n BBR, n in {1, 4}",
                "the same (ccas, per_cca)",
            ),
            SetupRow("buffer", "0.5 ... 64 BDP in powers of two", "the same, drop-tail"),
            SetupRow("start", "not stated", "all at t = 0, each with a TCP handshake"),
            SetupRow("duration", "120 s", "120 s; time series sampled every 50 ms"),
            SetupRow(
                "receivers",
                "SACK, timestamps, delayed ACK",
                "the same (ccfair's TCP defaults)",
            ),
            SetupRow(
                "Copa",
                "not stated",
                'variant "paper": the NSDI 2018 paper as published (delta 0.5, competitive '
                "mode on)",
                "Copa is not in Linux; docs/fidelity.md lists its variants",
            ),
            _goodput_row(),
            _reps_row("not stated"),
            BBR_ROW,
            CUBIC_ROW,
            TCP_ROW,
        ],
        headline=("throughput-vs-buffer",),
        quick_note="n = 1, alpha in {1, 8}, 20 s runs, 2 repetitions",
    )


# --------------------------------------------------------------------------------------------
# 5. ogawa-bbr-fairness


def _ogawa_figures(res: Results) -> FigureList:
    panels = ["rtt_ratio", "params.bbr"]
    figs = [
        (
            n,
            "Jain index among the BBR flows against the buffer, one line per number of flows, "
            "one panel per RTT spread and BBR variant: mean, repetitions (dots), 95% interval.",
            f,
        )
        for n, f in metric_vs_buffer(res, metric="jain_index", lines="n_flows", panels=panels)
    ]
    figs += [
        (
            n,
            "Throughput of every flow relative to the fair share (its goodput x n / the total "
            "goodput) against the buffer: each dot is one flow of one repetition, coloured by "
            "flow (flow 1 has the shortest RTT); the box spans the middle half of the flows.",
            f,
        )
        for n, f in flow_distribution(
            res, x="alpha", panels=["rtt_ratio", "n_flows"], hue="params.bbr"
        )
    ]
    figs += [
        (
            n,
            "Bottleneck utilisation against the buffer, as above.",
            f,
        )
        for n, f in metric_vs_buffer(
            res,
            metric="utilisation_frac",
            lines="n_flows",
            panels=panels,
            name="utilisation-vs-alpha",
        )
    ]
    picks = _select(res, {"n_flows": 4, "alpha": 2, "rtt_ratio": 1})
    figs += _jain_over_time(res, picks, "params.bbr")
    figs += _timeseries_figs(res, picks, f"One run (repetition 0) over time; {_SMOOTH}")
    return figs


def _ogawa_setup() -> list[SetupRow]:
    """What the Ogawa et al. study states and what ccfair runs, item by item."""
    return [
        SetupRow(
            "topology",
            "several BBR flows share one bottleneck",
            "dumbbell: n senders -> s1 -> bottleneck -> s2 -> n receivers, n in {2, 4, 8}",
            "the study leaves the grid open",
        ),
        SetupRow(
            "bottleneck",
            "not stated",
            "50 Mbit/s, one-way 18 ms; access links 1 Gbit/s, 1 ms (RTT 40 ms)",
            "the Harada bottleneck",
        ),
        SetupRow(
            "RTTs",
            "equal and unequal",
            "equal (rtt_ratio 1: all 40 ms) or spread linearly from 40 to 80 ms "
            "(rtt_ratio 2) by longer sender access links",
        ),
        SetupRow(
            "buffer",
            "varied",
            "alpha in {0.5, ..., 16} x the BDP of the shortest (40 ms) path",
        ),
        SetupRow(
            "BBR parameter",
            "one BBRv1 parameter fixed to stabilise the split (which one is not stated)",
            "stock, and a fixed PROBE_BW start phase (fixed_start_phase = 2)",
            "the random start phase is the candidate the study's description points to; "
            "min_rtt_win_sec, probe_rtt_ms, bw_rtts and cwnd_gain can be swept with "
            "params.bbr",
        ),
        SetupRow("start", "not stated", "all at t = 0, each with a TCP handshake"),
        SetupRow("duration", "not stated", "60 s; time series sampled every 100 ms"),
        SetupRow(
            "fairness",
            "Jain's index of the flows' throughput",
            "the same, of the goodput over the whole run",
        ),
        _reps_row("not stated"),
        BBR_ROW,
        TCP_ROW,
    ]


def _ogawa() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "ogawa-bbr-fairness",
        "ccas": "bbr",
        "bottleneck_delay": "18ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    variants = {
        "stock": dict(BBR_STUDY_PARAMS),
        "fixed-phase": {**BBR_STUDY_PARAMS, "fixed_start_phase": 2},
    }
    return Preset(
        name="ogawa-bbr-fairness",
        title="Throughput distribution among BBR flows: flows x RTT spread x buffer x variant",
        study="Ogawa et al., throughput distribution and stabilisation among BBR flows",
        full={
            "base": base,
            "grid": {
                "n_flows": [2, 4, 8],
                "rtt_ratio": [1, 2],
                "alpha": ALPHAS,
                "params.bbr": variants,
            },
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {
                "n_flows": [2, 4],
                "rtt_ratio": [1, 2],
                "alpha": [2],
                "params.bbr": {"stock": dict(BBR_STUDY_PARAMS)},
            },
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_ogawa_figures,
        setup=_ogawa_setup(),
        headline=("jain_index-vs-alpha", "flow-distribution"),
        quick_note="n in {2, 4}, alpha = 2, stock BBR only, 20 s runs, 2 repetitions",
    )


# --------------------------------------------------------------------------------------------
# 6. katsumata-rtprop


def _katsumata_figures(res: Results) -> FigureList:
    figs = [
        (
            n,
            "Goodput per flow of BBR and CUBIC for each BBR variant, against each other "
            "(top) and BBR alone (bottom), one column per buffer: each repetition a dot, the "
            "mean a marker with its 95% interval.",
            f,
        )
        for n, f in dots(
            res,
            value="per_flow_mbps",
            x="params.bbr",
            hue="cca",
            panels=["ccas", "alpha"],
            name="goodput-by-variant",
        )
    ]
    figs += [
        (
            n,
            "Jain index of the BBR and the CUBIC flow for each BBR variant, one panel per "
            "buffer: repetitions (dots), mean and 95% interval (clipped to [0.5, 1]).",
            f,
        )
        for n, f in dots(
            res,
            value="jain_index",
            x="params.bbr",
            panels=["alpha"],
            table="runs",
            where={"ccas": "bbr-vs-cubic"},
            name="jain-by-variant",
        )
    ]
    pts = _grid_points(res)
    if "alpha" not in pts.columns:
        return figs
    for alpha in dict.fromkeys(pts["alpha"]):
        figs += _katsumata_over_time(res, alpha, pts[pts["alpha"] == alpha])
    return figs


def _katsumata_over_time(res: Results, alpha: Any, at: pd.DataFrame) -> FigureList:
    """Goodput and RTT over time at one buffer, one row per BBR variant (repetition 0)."""
    variants = list(dict.fromkeys(at["params.bbr"]))

    def runs_of(ccas: str) -> list:
        sel = at[at["ccas"] == ccas]
        return [
            (str(v), sel[sel["params.bbr"] == v].iloc[0]["run_id"])
            for v in variants
            if (sel["params.bbr"] == v).any()
        ]

    figs: FigureList = []
    where = f"buffer {alpha} x BDP"
    duel, alone = runs_of("bbr-vs-cubic"), runs_of("bbr-alone")
    a = slug(alpha)
    if duel:
        figs.append(
            (
                f"goodput-over-time-bbr-vs-cubic-alpha-{a}",
                f"Goodput over time of the BBR and the CUBIC flow, one row per BBR variant "
                f"(repetition 0, {where}); {_SMOOTH}.",
                timeseries_rows(res, duel, what="goodput", title=where),
            )
        )
        figs.append(
            (
                f"rtt-over-time-bbr-vs-cubic-alpha-{a}",
                f"Smoothed RTT of both flows (thick; BBR solid, CUBIC dashed) and BBR's "
                f"RTprop estimate (thin) over time, one row per BBR variant (repetition 0, "
                f"{where}); dotted: the base RTT.",
                timeseries_rows(res, duel, what="rtt", title=where),
            )
        )
    if alone:
        figs.append(
            (
                f"goodput-over-time-bbr-alone-alpha-{a}",
                f"Goodput over time of a single BBR flow, one row per variant (repetition 0, "
                f"{where}); {_SMOOTH}.",
                timeseries_rows(res, alone, what="goodput", title=where),
            )
        )
    return figs


def _katsumata_variants() -> dict[str, dict[str, Any]]:
    """The BBR variants of the study: stock, forced RTprop expiry (on the RTT ratio, or also
    on loss) and the RTprop update with two gains."""
    p = BBR_STUDY_PARAMS
    return {
        "stock": dict(p),
        "forced-expire-2.4": {
            **p,
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.4,
            "rtprop_action": "expire",
        },
        "forced-expire-2.4-loss": {
            **p,
            "rtprop_trigger": "rtt_ratio_or_loss",
            "rate_th": 2.4,
            "rtprop_action": "expire",
        },
        "update-a1.0": {
            **p,
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.0,
            "rtprop_action": "update",
            "update_gain_a": 1.0,
        },
        "update-a0.5": {
            **p,
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.0,
            "rtprop_action": "update",
            "update_gain_a": 0.5,
        },
    }


def _katsumata_setup() -> list[SetupRow]:
    """What the Katsumata and Sasaki et al. studies state and what ccfair runs, item by item."""
    return [
        SetupRow(
            "topology",
            "one BBR and one CUBIC flow share a bottleneck; then BBR alone",
            "dumbbell: h1, h2 -> s1 -> bottleneck -> s2 -> h3, h4 (one flow for BBR alone)",
        ),
        SetupRow(
            "bottleneck",
            "not published",
            "50 Mbit/s, one-way 18 ms; access links 1 Gbit/s, 1 ms (RTT 40 ms)",
            "the Harada bottleneck, chosen by ccfair",
        ),
        SetupRow(
            "buffer",
            "not published",
            "alpha in {1, 2, 4, 8} x BDP",
            "a full buffer of alpha BDP raises the RTT to (1 + alpha) x the base RTT: "
            "alpha = 1 stays below both thresholds (only the loss trigger fires), 2 passes "
            "2.0 but not 2.4, 4 and 8 pass both",
        ),
        SetupRow(
            "BBR variants",
            "stock; forced expire when RTT / RTprop > 2.4 (optionally also on loss); "
            "RTprop update RTprop <- a RTT + (1 - a) RTprop when RTT / RTprop > 2.0, "
            "a in {1.0, 0.5}",
            "the same (params.bbr: rtprop_trigger rtt_ratio or rtt_ratio_or_loss, "
            "rtprop_action expire or update)",
            "the loss trigger is run with the forced expiry, where the study describes it",
        ),
        SetupRow("start", "not stated", "both at t = 0, each with a TCP handshake"),
        SetupRow("duration", "not published", "60 s; time series sampled every 50 ms"),
        _goodput_row(),
        _reps_row("not stated"),
        BBR_ROW,
        CUBIC_ROW,
        TCP_ROW,
    ]


def _katsumata() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "katsumata-rtprop",
        "bottleneck_delay": "18ms",
        "duration": "60s",
        "sample_interval": "50ms",
    }
    variants = _katsumata_variants()
    ccas = {"bbr-vs-cubic": ["bbr", "cubic"], "bbr-alone": ["bbr"]}
    return Preset(
        name="katsumata-rtprop",
        title="BBR's RTprop against CUBIC: stock, forced expire (RTT ratio, or loss) and RTprop "
        "update",
        study="Sasaki et al. (CANDAR 2020); Katsumata, Ogawa & Yamaguchi",
        full={
            "base": base,
            "grid": {"ccas": ccas, "params.bbr": variants, "alpha": [1, 2, 4, 8]},
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"ccas": ccas, "params.bbr": variants, "alpha": [4]},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_katsumata_figures,
        setup=_katsumata_setup(),
        headline=("goodput-by-variant",),
        quick_note="alpha = 4 only, 20 s runs, 2 repetitions",
    )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        _harada_dumbbell(),
        _parking(2),
        _parking(10),
        _ogino(),
        _ogawa(),
        _katsumata(),
    )
}


def get(name: str) -> Preset:
    """The preset called ``name``; :class:`SpecError` naming the known ones otherwise.

    Example:
        >>> get("harada-dumbbell").full["repetitions"]
        5
    """
    from ccfair.errors import SpecError

    if name not in PRESETS:
        import difflib

        hint = difflib.get_close_matches(name, list(PRESETS), n=1)
        more = f'; did you mean "{hint[0]}"?' if hint else ""
        raise SpecError("preset", name, f"is not a preset{more} (presets: {', '.join(PRESETS)})")
    return PRESETS[name]


def count_runs(sweep_dict: dict[str, Any]) -> int:
    """Runs of a preset's grid (product of the axes x repetitions), without validating it.

    Example:
        >>> count_runs(get("harada-dumbbell").full)
        270
    """
    n = sweep_dict.get("repetitions", 1)
    for values in sweep_dict["grid"].values():
        n *= len(values)
    return n
