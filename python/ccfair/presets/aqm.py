"""The Harada dumbbell's question under active queue management (``harada-aqm``): BBR, CUBIC
and Reno in pairs on the Harada grid of delay and buffer, with fq_codel or CoDel with ECN at
the bottleneck instead of a drop-tail FIFO (docs/experiments.md).

Every figure is drawn per queue discipline: a discipline decides who wins before the
algorithms do, so results of two disciplines are never pooled in one panel or one mean.

Example:
    >>> p = harada_aqm_preset()
    >>> p.full["grid"]["bottleneck_queue"]
    ['fq_codel', {'queue': 'codel', 'ecn': True}]
"""

from __future__ import annotations

from typing import Any

from ccfair.present.curves import metric_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.style import axis_order, slug
from ccfair.presets.base import (
    ALPHAS,
    DELAYS,
    QUICK_REPETITIONS,
    REPETITIONS,
    SMOOTH_NOTE,
    FigureList,
    Preset,
    SetupRow,
    goodput_row,
    host_rows,
    reps_row,
    select_points,
    timeseries_figures,
)
from ccfair.results.directory import Results

#: The bottleneck's queue: Linux's default qdisc, and CoDel marking ECN-capable packets.
QUEUES: list[Any] = ["fq_codel", {"queue": "codel", "ecn": True}]

#: The hosts ask for ECN (``net.ipv4.tcp_ecn = 1``) exactly where the queue is CoDel with
#: ECN; with fq_codel they are stock hosts (``tcp_ecn = 2``: they accept ECN, never ask).
ECN_FILTER = "(bottleneck_queue == 'codel+ecn') == (p['tcp.ecn'] == 1)"


def _queues(res: Results) -> list[str]:
    flows = res.flows
    if "bottleneck_queue" not in flows.columns:
        return []
    return axis_order(list(flows["bottleneck_queue"]), res.axes.get("bottleneck_queue"))


def _aqm_figures(res: Results) -> FigureList:
    figs: FigureList = []
    for queue in _queues(res):
        # One discipline's runs only: a discipline decides who wins before the algorithms do.
        for name, fig in heatmaps(
            res.select(bottleneck_queue=queue), x="delay", y="alpha", by="ccas"
        ):
            figs.append(
                (
                    f"heatmap-{slug(queue)}-{name.removeprefix('heatmap-')}",
                    f"Queue {queue}: mean goodput of each flow (Mbit/s) over the repetitions, "
                    "on the grid of bottleneck one-way delay D and the queue's packet limit "
                    "(x BDP); darker is higher; small print: lowest and highest repetition.",
                    fig,
                )
            )
    figs += [
        (
            n,
            "Jain index of the two flows' goodput against the queue's limit, one line per "
            "bottleneck delay, one panel per queue discipline and algorithm pair: mean (line), "
            "each repetition (dots), 95% interval (band, clipped to [0, 1]).",
            f,
        )
        for n, f in metric_vs_buffer(
            res, metric="jain_index", lines="delay", panels=["bottleneck_queue", "ccas"]
        )
    ]
    figs += [
        (
            n.replace("sojourn_p95_ms", "sojourn-p95"),
            "95th percentile of the sojourn at the bottleneck (arrival to the end of "
            "serialisation, ms) against the queue's limit, one line per bottleneck delay, one "
            "panel per queue discipline and algorithm pair: mean, repetitions (dots), 95% "
            "interval.",
            f,
        )
        for n, f in metric_vs_buffer(
            res,
            metric="sojourn_p95_ms",
            lines="delay",
            panels=["bottleneck_queue", "ccas"],
            ylabel="sojourn p95 (ms)",
            name="sojourn_p95_ms-vs-buffer",
        )
    ]
    picks = select_points(res, {"delay": "18ms", "alpha": 2})
    picks = picks[[str(c) == "cubic-bbr" for c in picks["ccas"]]]
    figs += timeseries_figures(
        res, picks, f"CUBIC against BBR over time, one run (repetition 0) per queue; {SMOOTH_NOTE}"
    )
    return figs


def _aqm_network_rows() -> list[SetupRow]:
    """The network and its queue: the half of the setup table where this preset departs."""
    return [
        SetupRow(
            "topology",
            "dumbbell: H1, H2 -> S1 -> bottleneck -> S2 -> H3, H4; flows H1->H3, H2->H4; "
            "pairs Reno-BBR, CUBIC-BBR, Reno-CUBIC",
            "the same (node names in lower case)",
        ),
        SetupRow(
            "bottleneck",
            "50 Mbit/s, one-way delay D in {2, 18, 100} ms, drop-tail",
            "50 Mbit/s, D in {2, 18, 100} ms; the queue is fq_codel, or CoDel with ECN",
            "the study's question (who wins, by delay and buffer) under the queues Linux and "
            "home routers run: fq_codel is Linux's default qdisc; CoDel with ECN replaces the "
            "losses that Reno and CUBIC react to by marks",
        ),
        SetupRow(
            "queue options",
            "not applicable",
            "Linux's defaults: fq_codel target 5 ms, interval 100 ms, 1024 flow queues, quantum "
            "1514 B, memory 32 MiB, ECN on; CoDel target 5 ms, interval 100 ms, ECN on",
            "Linux's sch_fq_codel.c and sch_codel.c defaults; CoDel's ECN is off by default "
            "in Linux and switched on here",
        ),
        SetupRow(
            "buffer",
            "alpha x BDP, alpha in {0.5, 1, 2, 4, 8, 16}; BDP of the RTT 2 x (1 + D + 1) ms",
            "the queue discipline's packet limit (tc's limit) at alpha x BDP, rounded to whole "
            "packets",
            "an AQM keeps its queue far below a large limit, so the limit only matters where "
            "it is below what the AQM would hold; the grid shows where",
        ),
        SetupRow(
            "ECN on the hosts",
            "not applicable",
            "with CoDel: every host asks for ECN (tcp.ecn = 1, net.ipv4.tcp_ecn 1); with "
            "fq_codel: stock hosts (tcp_ecn 2, accept but never ask), so fq_codel drops",
            "the two cases the issue of ECN deployment asks about: a stock Linux path, and a "
            "path where both the hosts and the queue use ECN",
        ),
        SetupRow(
            "access links",
            "1000 Mbit/s, 1 ms",
            "1000 Mbit/s, 1 ms, drop-tail 1000 packets",
            "the study gives no access buffer; 1000 packets never fills at 50 Mbit/s",
        ),
    ]


def _aqm_run_rows() -> list[SetupRow]:
    """How each run is made and measured: the half of the setup table every point shares."""
    return [
        SetupRow("start", "all flows start together", "all at t = 0, each with a handshake"),
        SetupRow("duration", "60 s", "60 s; time series sampled every 100 ms"),
        goodput_row(),
        reps_row("2, averaged"),
        SetupRow(
            "BBR and ECN",
            "not applicable",
            "BBRv1 negotiates ECN like any flow and ignores the marks, as Linux's tcp_bbr.c "
            "does (docs/fidelity.md, ECN)",
        ),
        *host_rows(
            "linux-stock",
            "6.18",
            study_testbed="the CORE network emulator (netem links, drop-tail)",
            study_kernel="not stated",
            testbed_why="the bottleneck's queue is the discipline, not netem's: stock Linux "
            "hosts and links, the queue discipline the one change",
            kernel_why="the study names no kernel; Linux 6.18 is the kernel backend's, whose "
            "ECN (RFC 3168, tcp_ecn) and qdiscs the runs model",
        ),
    ]


def harada_aqm_preset() -> Preset:
    """``harada-aqm``: the Harada dumbbell grid with fq_codel and with CoDel+ECN.

    Example:
        >>> from ccfair.presets import count_runs
        >>> count_runs(harada_aqm_preset().full), count_runs(harada_aqm_preset().quick)
        (540, 48)
    """
    base = {
        "builder": "dumbbell",
        "name": "harada-aqm",
        "n_flows": 2,
        "bottleneck_rate": "50Mbit/s",
        "access_rate": "1Gbit/s",
        "access_delay": "1ms",
        "receiver_delay": "1ms",
        "duration": "60s",
        "sample_interval": "100ms",
    }
    pairs = [["reno", "bbr"], ["cubic", "bbr"], ["reno", "cubic"]]
    grid = {"ccas": pairs, "bottleneck_queue": QUEUES, "tcp.ecn": [2, 1]}
    return Preset(
        name="harada-aqm",
        title="The Harada dumbbell with fq_codel or CoDel+ECN at the bottleneck",
        study="Harada & Kamiyama's dumbbell grid, asked again under active queue management",
        full={
            "base": base,
            "grid": {**grid, "delay": DELAYS, "alpha": ALPHAS},
            "filters": [ECN_FILTER],
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {**grid, "delay": ["2ms", "18ms"], "alpha": [1, 4]},
            "filters": [ECN_FILTER],
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_aqm_figures,
        setup=[*_aqm_network_rows(), *_aqm_run_rows()],
        headline=("heatmap-fq_codel-cubic-bbr", "heatmap-codel-ecn-cubic-bbr"),
        testbed="linux-stock",
        kernel="6.18",
        quick_note="D in {2, 18} ms, alpha in {1, 4}, 10 s runs, 2 repetitions",
    )
