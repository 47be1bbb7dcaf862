"""The published experiments (docs/experiments.md) as presets: sweep plus figures.

``ccfair reproduce NAME`` runs a preset's full grid as the study specifies; ``--quick`` runs a
reduced grid with shorter runs (demos, CI). Either writes its figures and an HTML report into
the results directory. ``ccfair reproduce --list`` shows them.

Choices ccfair makes where docs/experiments.md is silent are stated in each preset's ``notes`` and
in docs/experiments.md; they are never tuned to make a figure look like a paper.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure

from ccfair import plots
from ccfair.metrics import Results

__all__ = ["PRESETS", "Preset", "get"]

FigureList = list[tuple[str, str, Figure]]

CCAS3 = ["reno", "cubic", "bbr"]
DELAYS = ["2ms", "18ms", "100ms"]
ALPHAS = [0.5, 1, 2, 4, 8, 16]


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
        notes: choices ccfair made where the study's setup is silent.
    """

    name: str
    title: str
    study: str
    full: dict[str, Any]
    quick: dict[str, Any]
    figures: Callable[[Results], FigureList]
    notes: list[str] = field(default_factory=list)

    def sweep_dict(self, *, quick: bool = False, baselines: bool = False) -> dict[str, Any]:
        """The sweep spec, with the preset name recorded (the report uses its figures)."""
        d = dict(self.quick if quick else self.full)
        d["name"] = self.name + ("-quick" if quick else "")
        d["preset"] = self.name
        if baselines:
            d["baselines"] = True
        return d

    def sweep(self, *, quick: bool = False, baselines: bool = False) -> Any:
        """The :class:`ccfair.sweep.Sweep` of this preset.

        Example:
            >>> len(get("harada-dumbbell").sweep().expand())  # doctest: +SKIP
            108
        """
        from ccfair.sweep import Sweep

        return Sweep.from_dict(self.sweep_dict(quick=quick, baselines=baselines))


# --------------------------------------------------------------------------------------------
# Figure helpers


def _pick_runs(res: Results, prefer: dict[str, Any], by: str | None, limit: int = 6) -> list:
    """(label, run_id) of rep-0 runs at the preferred grid values (nearest available), one per
    value of ``by``."""
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    for key, want in prefer.items():
        if key in pts.columns and len(pts):
            have = list(dict.fromkeys(pts[key]))
            choice = want if want in have else have[len(have) // 2]
            pts = pts[pts[key] == choice]
    out = []
    groups = list(dict.fromkeys(pts[by])) if by and by in pts.columns else [None]
    for g in groups[:limit]:
        sel = pts if g is None else pts[pts[by] == g]
        if len(sel):
            row = sel.iloc[0]
            label = ", ".join(f"{k}={row[k]}" for k in res.grid_keys)
            out.append((label, row["run_id"]))
    return out


def _timeseries(res: Results, picks: list, caption: str) -> FigureList:
    figs = []
    for label, rid in picks:
        fig = plots.timeseries(res, rid, title=label)
        figs.append((f"timeseries-{plots.slug(label)}", f"{caption} ({label}).", fig))
    return figs


def _model(res: Results, by: str | None) -> FigureList:
    from ccfair.models import model_table

    fig = plots.model_vs_measured(model_table(res), by=by)
    if fig is None:
        return []
    return [
        (
            "model-vs-measured",
            "BBR's share of goodput, measured vs Ware et al. (IMC 2019): full N-flow form with "
            "the PROBE_RTT cost (filled) and the form without PROBE_RTT terms (open); right, "
            "against the buffer in BDPs with the model curves.",
            fig,
        )
    ]


def _heatmaps(res: Results, caption: str, **kw: Any) -> FigureList:
    return [(name, caption, fig) for name, fig in plots.heatmaps(res, **kw)]


# --------------------------------------------------------------------------------------------
# 1. harada-dumbbell


def _harada_dumbbell_figures(res: Results) -> FigureList:
    figs = _heatmaps(
        res,
        "Mean goodput of each flow over the repetitions (Mbit/s) on the grid of bottleneck "
        "delay D and buffer alpha x BDP; darker = higher",
        x="delay",
        y="alpha",
        by="ccas",
    )
    figs += _model(res, "ccas")
    figs += [
        (n, "Jain index over the buffer, per CCA pair and delay, 95% CI band.", f)
        for n, f in plots.metric_vs_buffer(
            res, metric="jain_index", lines="delay", panels=["ccas"], ylabel="Jain index"
        )
    ]
    figs += _timeseries(
        res,
        _pick_runs(res, {"delay": "18ms", "alpha": 2}, "ccas"),
        "Time series of one run (repetition 0)",
    )
    return figs


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
    return Preset(
        name="harada-dumbbell",
        title="Two flows on one 50 Mbit/s bottleneck: delay x buffer x CCA pair",
        study="Harada & Kamiyama, fairness of BBR, CUBIC and Reno on a dumbbell",
        full={
            "base": base,
            "grid": {"ccas": pairs, "delay": DELAYS, "alpha": ALPHAS},
            "repetitions": 2,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": pairs, "delay": ["2ms", "18ms"], "alpha": [1, 4]},
            "repetitions": 1,
        },
        figures=_harada_dumbbell_figures,
        notes=[
            "Time series are sampled every 100 ms (summaries are exact; this keeps 108 runs "
            "small).",
        ],
    )


# --------------------------------------------------------------------------------------------
# 2-3. harada-2hop, harada-10hop


def _parking_figures(res: Results) -> FigureList:
    ten = any("cross10" in str(n) for n in res.table("flows")["flow_name"].unique())
    figs = _heatmaps(
        res,
        "Mean goodput per flow (Mbit/s) over delay D and buffer alpha x BDP of every "
        "bottleneck; title: [main CCA, cross CCA]"
        + ("; the ten cross flows are averaged" if ten else ""),
        x="delay",
        y="alpha",
        by="ccas",
        flow_group=plots.parking_lot_groups if ten else (lambda n: n),
    )
    figs += [
        (n, "Jain index over the buffer per CCA assignment and delay, 95% CI band.", f)
        for n, f in plots.metric_vs_buffer(
            res, metric="jain_index", lines="delay", panels=["ccas"], ylabel="Jain index"
        )
    ]
    figs += _timeseries(
        res,
        _pick_runs(res, {"delay": "18ms", "alpha": 2}, "ccas", limit=3),
        "Time series of one run (repetition 0)",
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
            "grid": {"ccas": assignments, "delay": DELAYS, "alpha": ALPHAS},
            "repetitions": 2,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": quick_assign, "delay": ["18ms"], "alpha": [1, 4]},
            "repetitions": 1,
        },
        figures=_parking_figures,
        notes=[
            "ccas = [main CCA, cross CCA]: every assignment of {Reno, CUBIC, BBR}, cross "
            "flows sharing one CCA (9 assignments).",
            "Each bottleneck's buffer is alpha x the BDP of its one-hop cross flow.",
        ],
    )


# --------------------------------------------------------------------------------------------
# 4. ogino-copa


def _ogino_figures(res: Results) -> FigureList:
    figs = [
        (
            n,
            "Mean throughput per flow of each CCA against the buffer (BDP multiples), n Copa "
            "flows against n CUBIC or n BBR flows; bands are 95% CIs over repetitions.",
            f,
        )
        for n, f in plots.throughput_vs_buffer(res, x="alpha", panels=["ccas", "per_cca"])
    ]
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    if "per_cca" in pts.columns:
        pts = pts[pts["per_cca"] == 1]
    alphas = [a for a in res.axes.get("alpha", []) if a in set(pts["alpha"])]
    chosen = [a for a in (1, 8, 64) if a in alphas] or alphas[:: max(1, len(alphas) // 3)]
    for ccas in dict.fromkeys(pts["ccas"]):
        for a in chosen:
            sel = pts[(pts["ccas"] == ccas) & (pts["alpha"] == a)]
            if len(sel):
                label = f"ccas={ccas}, n=1, alpha={a}"
                fig = plots.timeseries(res, sel.iloc[0]["run_id"], title=label)
                figs.append(
                    (
                        f"timeseries-{plots.slug(label)}",
                        f"Packets in flight, RTT of each flow, Copa's delta and mode ({label}).",
                        fig,
                    )
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
            },
            "repetitions": 2,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"ccas": ccas, "per_cca": [1], "alpha": [1, 8]},
            "repetitions": 1,
        },
        figures=_ogino_figures,
        notes=[
            "Receivers use SACK, timestamps and delayed ACK: the TCP defaults.",
            "The study does not state repetitions; ccfair runs 2 so that curves have CIs.",
        ],
    )


# --------------------------------------------------------------------------------------------
# 5. ogawa-bbr-fairness


def _ogawa_figures(res: Results) -> FigureList:
    figs = [
        (
            n,
            "Jain index among the BBR flows against the buffer, one line per number of flows; "
            "panels: RTT spread and BBR parameter variant; 95% CI bands over repetitions.",
            f,
        )
        for n, f in plots.metric_vs_buffer(
            res,
            metric="jain_index",
            lines="n_flows",
            panels=["rtt_ratio", "params.bbr"],
            ylabel="Jain index",
        )
    ]
    figs += [
        (n, "Bottleneck utilisation, as above.", f)
        for n, f in plots.metric_vs_buffer(
            res,
            metric="utilisation_frac",
            lines="n_flows",
            panels=["rtt_ratio", "params.bbr"],
            ylabel="bottleneck utilisation",
            name="utilisation-vs-alpha",
        )
    ]
    figs += _timeseries(
        res,
        _pick_runs(res, {"n_flows": 4, "alpha": 2, "rtt_ratio": 1}, "params.bbr", limit=3),
        "Time series of one run (repetition 0)",
    )
    return figs


def _ogawa() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "ogawa-bbr-fairness",
        "ccas": "bbr",
        "bottleneck_delay": "18ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    variants = {"stock": {}, "fixed-phase": {"fixed_start_phase": 2}}
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
            "repetitions": 2,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"n_flows": [2, 4], "rtt_ratio": [1, 2], "alpha": [2]},
            "repetitions": 2,
        },
        figures=_ogawa_figures,
        notes=[
            "The study leaves the grid open. ccfair sweeps 2, 4, 8 flows; equal RTTs "
            "(rtt_ratio 1) or RTTs spread linearly from 40 ms to 80 ms (rtt_ratio 2); the "
            "Harada buffers; stock BBR and BBR with a fixed PROBE_BW start phase (2), the "
            "candidate parameter of reference 6.3(b). Other knobs (min_rtt_win_sec, "
            "probe_rtt_ms, bw_rtts, cwnd_gain) can be swept with params.bbr.",
        ],
    )


# --------------------------------------------------------------------------------------------
# 6. katsumata-rtprop


def _katsumata_figures(res: Results) -> FigureList:
    figs = [
        (
            n,
            "Mean goodput of the BBR flow per variant, against CUBIC and alone, per buffer "
            "(error bars: 95% CI over repetitions).",
            f,
        )
        for n, f in plots.bars(
            res,
            value="per_flow_mbps",
            x="params.bbr",
            hue="alpha",
            panels=["ccas"],
            cca="bbr",
            ylabel="BBR goodput [Mbit/s]",
            name="bbr-goodput-by-variant",
        )
    ]
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    alphas = list(dict.fromkeys(pts["alpha"])) if "alpha" in pts.columns else []
    if not alphas:
        return figs
    deep = max(alphas, key=float)
    pts = pts[pts["alpha"] == deep]
    variants = list(dict.fromkeys(pts["params.bbr"]))

    def runs_of(ccas: str) -> list[tuple[str, str]]:
        sel = pts[pts["ccas"] == ccas]
        return [
            (f"{v} (alpha={deep})", sel[sel["params.bbr"] == v].iloc[0]["run_id"])
            for v in variants
            if (sel["params.bbr"] == v).any()
        ]

    duel, alone = runs_of("bbr-vs-cubic"), runs_of("bbr-alone")
    if duel:
        figs.append(
            (
                "goodput-over-time-bbr-vs-cubic",
                "Throughput over time of the BBR and the CUBIC flow, one row per BBR variant "
                "(repetition 0).",
                plots.timeseries_rows(res, duel, what="goodput"),
            )
        )
        figs.append(
            (
                "rtprop-over-time-bbr-vs-cubic",
                "BBR's RTprop estimate (dashed) and the flows' smoothed RTT over time, one row "
                "per BBR variant.",
                plots.timeseries_rows(res, duel, what="rtt"),
            )
        )
    if alone:
        figs.append(
            (
                "goodput-over-time-bbr-alone",
                "Throughput over time of a single BBR flow, one row per variant.",
                plots.timeseries_rows(res, alone, what="goodput"),
            )
        )
    return figs


def _katsumata() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "katsumata-rtprop",
        "bottleneck_delay": "18ms",
        "duration": "60s",
        "sample_interval": "50ms",
    }
    variants = {
        "stock": {},
        "forced-expire-2.4": {
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.4,
            "rtprop_action": "expire",
        },
        "update-a1.0": {
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.0,
            "rtprop_action": "update",
            "update_gain_a": 1.0,
        },
        "update-a0.5": {
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.0,
            "rtprop_action": "update",
            "update_gain_a": 0.5,
        },
    }
    ccas = {"bbr-vs-cubic": ["bbr", "cubic"], "bbr-alone": ["bbr"]}
    return Preset(
        name="katsumata-rtprop",
        title="BBR's RTprop against CUBIC: stock, forced expire and RTprop update",
        study="Sasaki et al. (CANDAR 2020); Katsumata, Ogawa & Yamaguchi",
        full={
            "base": base,
            "grid": {"ccas": ccas, "params.bbr": variants, "alpha": [2, 8]},
            "repetitions": 2,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"ccas": ccas, "params.bbr": variants, "alpha": [4]},
            "repetitions": 1,
        },
        figures=_katsumata_figures,
        notes=[
            "The studies' link parameters are not published: ccfair uses the Harada "
            "bottleneck (50 Mbit/s, RTT 40 ms) with buffers of 2 and 8 BDP, where CUBIC "
            "inflates the RTT past both thresholds.",
        ],
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
        2
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
        108
    """
    n = sweep_dict.get("repetitions", 1)
    for values in sweep_dict["grid"].values():
        n *= len(values)
    return n
