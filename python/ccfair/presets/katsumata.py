"""The Katsumata and Sasaki studies (docs/experiments.md): BBR's RTprop against CUBIC, stock
and modified (``katsumata-rtprop``).

Example:
    >>> sorted(katsumata_preset().full["grid"]["params.bbr"])[:2]
    ['forced-expire-2.4', 'forced-expire-2.4-loss']
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ccfair.present.curves import dots
from ccfair.present.style import slug
from ccfair.present.timeseries import timeseries_rows
from ccfair.presets.base import (
    QUICK_REPETITIONS,
    REPETITIONS,
    SMOOTH_NOTE,
    FigureList,
    Preset,
    SetupRow,
    goodput_row,
    grid_points,
    host_rows,
    iperf_row,
    reps_row,
)
from ccfair.results.directory import Results


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
    pts = grid_points(res)
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
                f"(repetition 0, {where}); {SMOOTH_NOTE}.",
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
                f"{where}); {SMOOTH_NOTE}.",
                timeseries_rows(res, alone, what="goodput", title=where),
            )
        )
    return figs


def _katsumata_variants() -> dict[str, dict[str, Any]]:
    """The BBR variants of the study: stock, forced RTprop expiry (on the RTT ratio, or also
    on loss) and the RTprop update with two gains."""
    return {
        "stock": {},
        "forced-expire-2.4": {
            "rtprop_trigger": "rtt_ratio",
            "rate_th": 2.4,
            "rtprop_action": "expire",
        },
        "forced-expire-2.4-loss": {
            "rtprop_trigger": "rtt_ratio_or_loss",
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
        goodput_row(),
        reps_row("not stated"),
        *host_rows(
            "linux-stock",
            "4.13",
            study_testbed="physical machines: Sender1, Sender2 and a Queue machine (Celeron "
            "G530), a Receiver (Celeron G1101); how the queue machine emulates the link is "
            "not stated",
            study_kernel="Linux 4.13.2 on the senders and the queue machine, 3.10.0 on the "
            "receiver",
            testbed_why="stock Linux hosts on drop-tail links: nothing says the queue machine "
            "ran netem",
            kernel_why="ccfair's 4.13 host was read in 4.13.9; a flow's two ends share one "
            "kernel in ccfair, so the 3.10 receiver is a 4.13 receiver (both have no SACK "
            "compression, quick ACKs after out-of-order data and a 6 MiB receive buffer "
            "with half of it as window)",
            tool=iperf_row("iperf 3.5"),
        ),
    ]


def katsumata_preset() -> Preset:
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
        testbed="linux-stock",
        kernel="4.13",
        quick_note="alpha = 4 only, 20 s runs, 2 repetitions",
    )
