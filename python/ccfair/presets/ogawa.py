"""The Ogawa study (docs/experiments.md): BBR's fairness among many flows
(``ogawa-bbr-fairness``).

Example:
    >>> ogawa_preset().name
    'ogawa-bbr-fairness'
"""

from __future__ import annotations

from ccfair.present.curves import flow_distribution, metric_vs_buffer
from ccfair.presets.base import (
    ALPHAS,
    QUICK_REPETITIONS,
    REPETITIONS,
    SMOOTH_NOTE,
    FigureList,
    Preset,
    SetupRow,
    host_rows,
    jain_over_time_figures,
    reps_row,
    select_points,
    timeseries_figures,
)
from ccfair.results.directory import Results


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
    picks = select_points(res, {"n_flows": 4, "alpha": 2, "rtt_ratio": 1})
    figs += jain_over_time_figures(res, picks, "params.bbr")
    figs += timeseries_figures(res, picks, f"One run (repetition 0) over time; {SMOOTH_NOTE}")
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
        reps_row("not stated"),
        *host_rows(
            "linux-stock",
            "6.18",
            study_testbed="not stated in the abstract",
            study_kernel="Linux's BBR implementation, version not stated",
            testbed_why="stock Linux hosts on drop-tail links, ccfair's default",
            kernel_why="ccfair's default, the kernel backend's own: the preset validates here",
        ),
    ]


def ogawa_preset() -> Preset:
    base = {
        "builder": "dumbbell",
        "name": "ogawa-bbr-fairness",
        "ccas": "bbr",
        "bottleneck_delay": "18ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    variants = {
        "stock": {},
        "fixed-phase": {"fixed_start_phase": 2},
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
                "params.bbr": {"stock": {}},
            },
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_ogawa_figures,
        setup=_ogawa_setup(),
        headline=("jain_index-vs-alpha", "flow-distribution"),
        quick_note="n in {2, 4}, alpha = 2, stock BBR only, 20 s runs, 2 repetitions",
        testbed="linux-stock",
        kernel="6.18",
    )
