"""The Ogino study (docs/experiments.md): Copa against CUBIC and BBR over the buffer
(``ogino-copa``).

Example:
    >>> ogino_preset().name
    'ogino-copa'
"""

from __future__ import annotations

from ccfair.present.curves import metric_vs_buffer, throughput_vs_buffer
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
    reps_row,
    timeseries_figures,
)
from ccfair.results.directory import Results


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
    pts = grid_points(res)
    alphas = [a for a in res.axes.get("alpha", []) if a in set(pts["alpha"])]
    chosen = [a for a in (0.5, 1, 8, 64) if a in alphas] or alphas[:: max(1, len(alphas) // 3)]
    for n in dict.fromkeys(pts["per_cca"]) if "per_cca" in pts.columns else [None]:
        for ccas in dict.fromkeys(pts["ccas"]):
            sel = pts[(pts["ccas"] == ccas) & (pts["alpha"].isin(chosen))]
            if n is not None:
                sel = sel[sel["per_cca"] == n]
            figs += timeseries_figures(
                res,
                sel,
                "Goodput, cwnd and packets in flight, RTT of each flow, the bottleneck queue and "
                f"Copa's delta and mode over time (repetition 0); {SMOOTH_NOTE}",
            )
    return figs


def _ogino_network_rows() -> list[SetupRow]:
    """The network and the grid: the half of the setup table the figures' axes come from."""
    return [
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
        SetupRow(
            "buffer",
            "0.5 ... 64 BDP in powers of two",
            "the same, as the netem limit of the testbed's links",
            "Mininet's TCLink puts the queue limit on its netem qdisc, which also counts "
            "the packets in the delay line (docs/model.md, netem queues)",
        ),
    ]


def _ogino_run_rows() -> list[SetupRow]:
    """How each run is made and measured: the half of the setup table every point shares."""
    return [
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
            'variant "paper": the NSDI 2018 paper as published (delta 0.5, competitive mode on)',
            "Copa is not in Linux; docs/fidelity.md lists its variants",
        ),
        goodput_row(),
        reps_row("not stated"),
        *host_rows(
            "mininet-netem",
            "4.15",
            study_testbed="Mininet (hosts in network namespaces, TCLink links)",
            study_kernel="Linux 4.15.18 on every sender and receiver, with CCP",
            kernel_why="ccfair's 4.15 host was read in 4.15.11; CCP's Copa is ccfair's "
            "Copa on the 4.15 substrate (CCP's kernel module paces like BBR does)",
            tool=SetupRow(
                "measurement tool",
                "tcpdump captures analysed with tcptrace",
                "the receiving application's goodput, and ccfair's own time series",
                "tcptrace's throughput of a connection is its payload over its "
                "duration, as ccfair's goodput",
            ),
        ),
    ]


def ogino_preset() -> Preset:
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
            "repetitions": REPETITIONS,
        },
        quick={
            "base": {**base, "duration": "20s"},
            "grid": {"ccas": ccas, "per_cca": [1], "alpha": [1, 8]},
            "repetitions": QUICK_REPETITIONS,
        },
        figures=_ogino_figures,
        setup=[*_ogino_network_rows(), *_ogino_run_rows()],
        headline=("throughput-vs-buffer",),
        testbed="mininet-netem",
        kernel="4.15",
        quick_note="n = 1, alpha in {1, 8}, 20 s runs, 2 repetitions",
    )
