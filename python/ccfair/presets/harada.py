"""The Harada studies (docs/experiments.md): BBR against CUBIC and Reno on a dumbbell over a
grid of delay and buffer (``harada-dumbbell``), and on parking lots of 2 and 10 hops
(``harada-2hop``, ``harada-10hop``).

Example:
    >>> harada_dumbbell_preset().full["repetitions"]
    5
"""

from __future__ import annotations

from ccfair.present.curves import metric_vs_buffer
from ccfair.present.heatmaps import parking_lot_groups
from ccfair.present.timeseries import timeseries_rows
from ccfair.presets.base import (
    ALPHAS,
    CCAS3,
    DELAYS,
    QUICK_REPETITIONS,
    REPETITIONS,
    SMOOTH_NOTE,
    FigureList,
    Preset,
    SetupRow,
    goodput_row,
    heatmap_figures,
    host_rows,
    iperf_row,
    jain_over_time_figures,
    model_figures,
    reps_row,
    row_label,
    select_points,
    timeseries_figures,
)
from ccfair.results.directory import Results


def _harada_dumbbell_figures(res: Results) -> FigureList:
    figs = heatmap_figures(
        res,
        "Mean goodput of each flow (Mbit/s) over the repetitions, on the grid of bottleneck "
        "one-way delay D and buffer (x BDP); darker is higher; small print: lowest and highest "
        "repetition.",
        x="delay",
        y="alpha",
        by="ccas",
    )
    figs += model_figures(res, "ccas")
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
    picks = select_points(res, {"delay": "18ms", "alpha": 2})
    figs += jain_over_time_figures(res, picks, "ccas")
    figs += timeseries_figures(res, picks, f"One run (repetition 0) over time; {SMOOTH_NOTE}")
    return figs


def _harada_setup(topology: str, study_reps: str) -> list[SetupRow]:
    return [
        SetupRow("topology", topology, "the same (node names in lower case)"),
        SetupRow(
            "bottleneck",
            "50 Mbit/s, one-way delay D in {2, 18, 100} ms",
            "the same, with netem's queue (CORE's link emulation)",
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
            "the same, rounded to whole packets (at least 1), as the netem limit of the "
            "testbed's links",
            "CORE sets a link's buffer as netem's limit, which also counts the packets in the "
            "delay line (docs/model.md, netem queues)",
        ),
        SetupRow(
            "start",
            "all flows start together",
            "all at t = 0, each opening with a TCP handshake",
        ),
        SetupRow("duration", "60 s", "60 s; time series sampled every 100 ms"),
        goodput_row(),
        reps_row(study_reps),
        *host_rows(
            "core-netem",
            "6.18",
            study_testbed="the CORE network emulator: nodes are Linux network namespaces, "
            "links veth pairs shaped by netem",
            study_kernel="not stated",
            kernel_why="the study names no kernel. CORE of its time ran on Ubuntu 20.04 or "
            "22.04 (Linux 5.4, 5.15), whose BBR is ccfair's linux-6.18 version (ACK "
            "aggregation, EDT, strict min_rtt refresh all predate 5.15) and whose sender "
            "(EDT pacer, RACK, SACK compression, HyStart of 5.6) is 6.18's; ccfair models no "
            "5.x host, whose receive buffer maximum (6 MiB, half of it window) binds only "
            "at D = 100 ms with 16 BDP. 6.18 is also the kernel backend's, so the preset "
            "validates here",
            tool=iperf_row("iPerf"),
        ),
    ]


def harada_dumbbell_preset() -> Preset:
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
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": pairs, "delay": ["2ms", "18ms"], "alpha": [1, 4]},
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
        testbed="core-netem",
        kernel="6.18",
        quick_note="D in {2, 18} ms, alpha in {1, 4}, 10 s runs, 2 repetitions",
    )


def _parking_figures(res: Results) -> FigureList:
    ten = any("cross10" in str(n) for n in res.table("flows")["flow_name"].unique())
    figs = heatmap_figures(
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
    pts = select_points(res, {"delay": "18ms", "alpha": 2})
    mains = list(dict.fromkeys(str(c).split("-")[0] for c in pts["ccas"]))
    for main in mains:
        mine = pts[[str(c).split("-")[0] == main for c in pts["ccas"]]]
        runs = [
            (f"cross flows {str(c).split('-')[1]}", rid)
            for c, rid in zip(mine["ccas"], mine["run_id"], strict=True)
        ]
        where = row_label(res, mine.iloc[0], ["delay", "alpha"])
        figs.append(
            (
                f"goodput-over-time-main-{main}",
                f"Goodput over time of the {main} main flow and of each cross flow, one row per "
                f"cross-flow algorithm (repetition 0; {where}); {SMOOTH_NOTE}.",
                timeseries_rows(res, runs, what="goodput", title=f"main flow {main}, {where}"),
            )
        )
    figs += jain_over_time_figures(res, pts, "ccas")
    cubic_cross = pts[[str(c).endswith("-cubic") for c in pts["ccas"]]]
    figs += timeseries_figures(
        res,
        cubic_cross if len(cubic_cross) else pts.head(3),
        f"One run (repetition 0) over time, every main-flow algorithm against CUBIC cross "
        f"flows; {SMOOTH_NOTE}",
    )
    return figs


def _parking_topology(hops: int) -> str:
    """The study's own node names for a parking lot of 2 or 10 hops, as its setup table reads."""
    if hops == 2:
        return (
            "routers R1 -> R2 -> R3, bottlenecks L1, L2; main flow H1 -> H6 over both, cross "
            "flows H2 -> H3 over L1 and H4 -> H5 over L2"
        )
    return (
        "routers R1 ... R11, bottlenecks L1 ... L10; main flow H1 -> H22 over all ten, "
        "cross flows H2 -> H3, ..., H20 -> H21, each over one Li"
    )


def _parking_setup(hops: int) -> list[SetupRow]:
    """The dumbbell's setup table, with the parking lot's algorithm assignments and its buffer
    per bottleneck: the two rows where the studies differ."""
    setup = _harada_setup(_parking_topology(hops), "2")
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
        "the same on every Li, with cross flow i as the reference path, as the netem limit "
        "of the testbed's links",
        "CORE sets a link's buffer as netem's limit, which also counts the packets in the "
        "delay line (docs/model.md, netem queues)",
    )
    return setup


def harada_parking_preset(hops: int) -> Preset:
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
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "10s"},
            "grid": {"ccas": quick_assign, "delay": ["18ms"], "alpha": [1, 4]},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_parking_figures,
        setup=_parking_setup(hops),
        headline=("heatmap-bbr-cubic", "heatmap-cubic-bbr"),
        testbed="core-netem",
        kernel="6.18",
        quick_note=(
            ("[BBR, CUBIC] and [CUBIC, BBR]" if hops == 2 else "[BBR, CUBIC]")
            + ", D = 18 ms, alpha in {1, 4}, 10 s runs, 2 repetitions"
        ),
    )
