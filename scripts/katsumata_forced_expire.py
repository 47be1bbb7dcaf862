"""Tables and figures of docs/validation/katsumata-forced-expire/README.md.

Katsumata's "forced-expire-2.4-loss" BBR (forced min-RTT expiry when RTT / RTprop > 2.4 or on
any ACK that marks packets lost) alone on the 50 Mbit/s dumbbell at 1 BDP gets about
45 Mbit/s on the ideal host and about 18 Mbit/s on the stock-Linux host. This script shows
why, from ccfair's own results:

    ccfair sweep scenarios/katsumata-forced-expire.toml --out results/katsumata-fe
    python3 scripts/katsumata_forced_expire.py figures results/katsumata-fe \
        --out docs/validation/katsumata-forced-expire/figures

`figures` prints the study's tables (Markdown) and writes its PNG figures; it also runs the
two packet-traced runs it needs (the sweep's seed-1 runs of the variant at 1 BDP on the ideal
and the stock-Linux host, the same runs, with `trace=["flow1"]`).

    sudo ccfair validate scenarios/validate/katsumata-forced-expire.toml \
        --out validation/katsumata-forced-expire
    python3 scripts/katsumata_forced_expire.py kernel validation/katsumata-forced-expire

    sudo ccfair run scenarios/katsumata-forced-expire-1bdp.toml --backend kernel \
        --trace flow1 --out validation/katsumata-forced-expire-trace
    python3 scripts/katsumata_forced_expire.py bursts validation/katsumata-forced-expire-trace

`bursts` prints, for each traced run, every exit from PROBE_RTT: the state BBR went to, its
cwnd, the retransmissions offered to the bottleneck in the next 100 ms, how many of them were
dropped, and the position in the burst of the first drop.

`kernel` prints, per backend and point, what decides the question on real Linux: goodput,
PROBE_RTT entries, forced expiries, retransmissions, the first time in PROBE_BW and the share
of time spent in each BBR state.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import ccfair  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

VARIANT = "forced-expire-2.4-loss"
#: The variant's parameters, as in the katsumata-rtprop preset.
VARIANT_PARAMS = {
    "version": "linux-4.13",
    "rtprop_trigger": "rtt_ratio_or_loss",
    "rate_th": 2.4,
    "rtprop_action": "expire",
}
HOSTS = {"ideal": {}, "linux-stock": {"tso": "linux", "rmem": "linux"}}
STATE_COLOURS = {
    "STARTUP": "#f4a582",
    "DRAIN": "#fddbc7",
    "PROBE_BW": "#d1e5f0",
    "PROBE_RTT": "#b2182b",
}
COUNTERS = [
    "goodput_mbps",
    "bbr_probe_rtt_entry_count",
    "bbr_forced_probe_rtt_entry_count",
    "bbr_forced_expiry_count",
    "retrans_pkts",
]


class ScriptError(Exception):
    """A problem with the arguments or the directories: one line, exit status 2."""


def state_times(ts: pd.DataFrame) -> pd.DataFrame:
    """Per run: the first time in PROBE_BW (NaN if never), the share of samples per state and
    the largest bandwidth estimate (BBR's max filter)."""
    rows = []
    for run_id, g in ts.groupby("run_id"):
        pbw = g.loc[g.cca_state == "PROBE_BW", "t_s"]
        share = g.cca_state.value_counts(normalize=True)
        rows.append(
            {
                "run_id": run_id,
                "first_probe_bw_s": pbw.min() if len(pbw) else np.nan,
                "probe_bw_frac": share.get("PROBE_BW", 0.0),
                "startup_frac": share.get("STARTUP", 0.0),
                "probe_rtt_frac": share.get("PROBE_RTT", 0.0),
                "max_bw_mbps": g.bbr_max_bw_mbps.max(),
            }
        )
    return pd.DataFrame(rows)


def labels_from_spec(spec_json: str) -> pd.Series:
    """The buffer (BDP) and the BBR variant of a run, read from its normalised scenario (for
    results directories without grid labels, such as those of `ccfair validate`)."""
    spec = json.loads(spec_json)
    bottleneck = next(link for link in spec["links"] if link["name"] == "bottleneck")
    trigger = spec["flows"][0].get("cca_params", {}).get("rtprop_trigger", "off")
    variant = {"off": "stock", "rtt_ratio": "forced-expire-2.4"}.get(trigger, VARIANT)
    return pd.Series({"alpha": bottleneck["buffer_bdp"], "params.bbr": variant})


def per_run(results_dir: Path) -> pd.DataFrame:
    """One row per run: grid labels, the flow's counters and its state times."""
    if not (results_dir / "runs").is_dir():
        raise ScriptError(f"{results_dir}: not a results directory (no runs/)")
    res = ccfair.Results(results_dir)
    flows = res.flows
    if "alpha" not in flows.columns or "params.bbr" not in flows.columns:
        runs = res.table("runs")[["run_id", "spec_json"]]
        labels = runs.spec_json.apply(labels_from_spec)
        labels["run_id"] = runs.run_id
        flows = flows.drop(columns=["alpha", "params.bbr"], errors="ignore")
        flows = flows.merge(labels, on="run_id")
    ts = res.table("timeseries")[["run_id", "t_s", "cca_state", "bbr_max_bw_mbps"]]
    return flows.merge(state_times(ts), on="run_id")


def spread(x: pd.Series, fmt: str = "{:.1f}") -> str:
    """Median and range of a column over repetitions."""
    x = x.dropna()
    if x.empty:
        return "never"
    lo, mid, hi = (fmt.format(v) for v in (x.min(), x.median(), x.max()))
    return mid if lo == hi else f"{mid} ({lo}-{hi})"


def hosts_table(runs: pd.DataFrame) -> str:
    """Markdown: every variant on every host at 1 BDP."""
    at1 = runs[runs.alpha == 1]
    lines = [
        "| variant | host | goodput (Mbit/s) | PROBE_RTT entries | of them forced "
        "| forced expiries (ACKs) | retransmissions | first PROBE_BW (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (variant, host), g in at1.groupby(["params.bbr", "tcp"], sort=False):
        lines.append(
            f"| {variant} | {host} | {spread(g.goodput_mbps)} "
            f"| {spread(g.bbr_probe_rtt_entry_count, '{:.0f}')} "
            f"| {spread(g.bbr_forced_probe_rtt_entry_count, '{:.0f}')} "
            f"| {spread(g.bbr_forced_expiry_count, '{:.0f}')} "
            f"| {spread(g.retrans_pkts, '{:.0f}')} "
            f"| {spread(g.first_probe_bw_s, '{:.2f}')} |"
        )
    return "\n".join(lines)


def buffer_table(runs: pd.DataFrame) -> str:
    """Markdown: the variant over buffers on the ideal and the stock-Linux host."""
    v = runs[(runs["params.bbr"] == VARIANT) & runs.tcp.isin(list(HOSTS))]
    lines = [
        "| buffer (BDP) | host | goodput (Mbit/s) | runs that reached PROBE_BW "
        "| first PROBE_BW (s) | PROBE_RTT entries |",
        "|---|---|---|---|---|---|",
    ]
    for (alpha, host), g in v.groupby(["alpha", "tcp"]):
        reached = int(g.first_probe_bw_s.notna().sum())
        lines.append(
            f"| {alpha:g} | {host} | {spread(g.goodput_mbps)} | {reached} of {len(g)} "
            f"| {spread(g.first_probe_bw_s, '{:.1f}')} "
            f"| {spread(g.bbr_probe_rtt_entry_count, '{:.0f}')} |"
        )
    return "\n".join(lines)


def traced_run(host: str) -> ccfair.RunResult:
    """The sweep's seed-1 run of the variant at 1 BDP on `host`, with its packets traced."""
    scenario = ccfair.dumbbell(
        1,
        "bbr",
        bottleneck_delay="18ms",
        buffer_bdp=1,
        duration="60s",
        sample_interval="10ms",
        seed=1,
        cca_params=VARIANT_PARAMS,
        tcp=HOSTS[host] or None,
        testbed="ideal",  # as the sweep: Linux's features added one at a time (HOSTS)
    )
    return ccfair.run(scenario, trace=["flow1"])


def bottleneck_arrivals(trace: pd.DataFrame) -> pd.DataFrame:
    """Data packets offered to the bottleneck (accepted or dropped), with `retx` True for
    every transmission of a sequence number after its first."""
    d = trace[
        (trace.kind == "data")
        & (trace.link_name == "bottleneck")
        & trace.event.isin(["enqueue", "drop_queue"])
    ].sort_values("t_ns")
    d = d.assign(retx=d.groupby("seq_bytes").cumcount() > 0, dropped=d.event == "drop_queue")
    return d[["t_s", "seq_bytes", "retx", "dropped"]]


def probe_rtt_exits(ts: pd.DataFrame) -> np.ndarray:
    """Times of the samples at which BBR has just left PROBE_RTT."""
    st = ts.cca_state.to_numpy()
    t = ts.t_s.to_numpy()
    left = (st[:-1] == "PROBE_RTT") & (st[1:] != "PROBE_RTT")
    return t[1:][left]


def shade_states(ax: plt.Axes, ts: pd.DataFrame, t0: float, t1: float) -> None:
    """Colour the background of `ax` by BBR's state over [t0, t1]."""
    w = ts[(ts.t_s >= t0) & (ts.t_s <= t1)]
    change = w.cca_state != w.cca_state.shift()
    starts = w.t_s[change].to_list() + [t1]
    states = w.cca_state[change].to_list()
    for a, b, s in zip(starts[:-1], starts[1:], states, strict=True):
        if s in STATE_COLOURS:
            ax.axvspan(a, b, color=STATE_COLOURS[s], alpha=0.5, lw=0)


def state_legend(fig: plt.Figure) -> None:
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.5) for c in STATE_COLOURS.values()]
    fig.legend(handles, list(STATE_COLOURS), loc="lower center", ncol=4, fontsize=7, frameon=False)


def figure_loop_vs_escape(ts: dict[str, pd.DataFrame], out: Path) -> None:
    """Goodput, cwnd and RTT over the first 8 s on both hosts, shaded by BBR's state."""
    t1 = 8.0
    fig, axes = plt.subplots(3, 2, figsize=(8, 5.2), sharex=True, sharey="row")
    for col, host in enumerate(HOSTS):
        w = ts[host][ts[host].t_s <= t1]
        good = w.goodput_mbps.rolling(10, min_periods=1).mean()
        ax = axes[0, col]
        shade_states(ax, ts[host], 0, t1)
        ax.plot(w.t_s, good, color="k", lw=0.8)
        ax.set_title(f"host {host}", fontsize=9)
        ax = axes[1, col]
        shade_states(ax, ts[host], 0, t1)
        ax.plot(w.t_s, w.cwnd_pkts, lw=0.8, label="cwnd")
        ax.plot(w.t_s, w.inflight_pkts, lw=0.8, label="in flight")
        ax.axhline(334, color="grey", ls=":", lw=0.8)
        ax = axes[2, col]
        shade_states(ax, ts[host], 0, t1)
        ax.plot(w.t_s, w.srtt_ms, lw=0.8, label="srtt")
        ax.plot(w.t_s, w.bbr_rtprop_ms, lw=0.8, label="RTprop")
        ax.set_xlabel("time (s)", fontsize=8)
    axes[0, 0].set_ylabel("goodput (Mbit/s,\n100 ms mean)", fontsize=8)
    axes[1, 0].set_ylabel("packets", fontsize=8)
    axes[2, 0].set_ylabel("ms", fontsize=8)
    axes[1, 1].legend(fontsize=7, loc="upper right")
    axes[2, 1].legend(fontsize=7, loc="upper right")
    for ax in axes.flat:
        ax.tick_params(labelsize=7)
    state_legend(fig)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out / "loop-vs-escape.png", dpi=100)
    plt.close(fig)


def figure_one_cycle(ts: pd.DataFrame, arr: pd.DataFrame, out: Path) -> tuple[float, float]:
    """One cycle of the loop on the stock-Linux host: cwnd, RTT and what the bottleneck
    accepted and dropped per 5 ms. Returns the window shown."""
    exits = probe_rtt_exits(ts)
    k = int(np.searchsorted(exits, 4.0))
    t0, t1 = exits[k] - 0.03, exits[k + 1] + 0.01
    w = ts[(ts.t_s >= t0) & (ts.t_s <= t1)]
    fig, axes = plt.subplots(3, 1, figsize=(7, 5.2), sharex=True)
    ax = axes[0]
    shade_states(ax, ts, t0, t1)
    ax.plot(w.t_s, w.cwnd_pkts, lw=0.9, label="cwnd")
    ax.plot(w.t_s, w.inflight_pkts, lw=0.9, label="in flight")
    ax.axhline(334, color="grey", ls=":", lw=0.8, label="BDP + buffer")
    ax.set_ylabel("packets", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ax = axes[1]
    shade_states(ax, ts, t0, t1)
    ax.plot(w.t_s, w.srtt_ms, lw=0.9, label="srtt")
    ax.plot(w.t_s, w.bbr_rtprop_ms, lw=0.9, label="RTprop")
    ax.set_ylabel("ms", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ax = axes[2]
    a = arr[(arr.t_s >= t0) & (arr.t_s <= t1)]
    bins = np.arange(t0, t1 + 0.005, 0.005)
    kinds = {
        "new data, accepted": a[~a.retx & ~a.dropped],
        "retransmission, accepted": a[a.retx & ~a.dropped],
        "dropped": a[a.dropped],
    }
    bottom = np.zeros(len(bins) - 1)
    for label, part in kinds.items():
        n, _ = np.histogram(part.t_s, bins)
        ax.bar(bins[:-1], n, width=0.005, align="edge", bottom=bottom, label=label)
        bottom += n
    ax.set_ylabel("packets offered to\nthe bottleneck / 5 ms", fontsize=8)
    ax.set_xlabel("time (s)", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    for ax in axes:
        ax.tick_params(labelsize=7)
    state_legend(fig)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out / "one-cycle.png", dpi=100)
    plt.close(fig)
    return t0, t1


def exit_bursts(ts: pd.DataFrame, arr: pd.DataFrame, t_end: float) -> pd.DataFrame:
    """Per PROBE_RTT exit before `t_end`: cwnd at the exit, retransmissions offered to the
    bottleneck in the next 100 ms, how many of them it dropped, and the state BBR went to."""
    rows = []
    st = ts.set_index("t_s")
    for t in probe_rtt_exits(ts):
        if t > t_end:
            break
        a = arr[(arr.t_s >= t - 0.01) & (arr.t_s < t + 0.1)]
        rows.append(
            {
                "exit_s": t,
                "to": st.cca_state.loc[t],
                "cwnd_pkts": st.cwnd_pkts.loc[t],
                "retx": int(a.retx.sum()),
                "retx_dropped": int((a.retx & a.dropped).sum()),
                "first_drop_at": int(np.argmax(a.dropped.to_numpy()))
                if a.dropped.any()
                else np.nan,
            }
        )
    return pd.DataFrame(rows)


def figure_exit_bursts(bursts: dict[str, pd.DataFrame], out: Path) -> None:
    """Retransmissions at the head of each burst after PROBE_RTT, and how many the
    bottleneck dropped, on both hosts."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 2.8), sharey=True)
    for ax, host in zip(axes, HOSTS, strict=True):
        b = bursts[host]
        x = np.arange(len(b))
        ax.bar(x, b.retx, color="#4393c3", label="retransmissions in the burst")
        ax.bar(x, b.retx_dropped, color="#b2182b", label="of them dropped")
        ax.plot(x, b.first_drop_at, "k_", ms=8, label="first drop: packet # of the burst")
        for i, (to, cwnd, retx) in enumerate(zip(b.to, b.cwnd_pkts, b.retx, strict=True)):
            if retx < 100:
                continue  # no room for the label
            label = f"cwnd {cwnd:.0f}" + (", to PROBE_BW" if to == "PROBE_BW" else "")
            ax.annotate(label, (i, 8), rotation=90, fontsize=6, ha="center", color="white")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{t:.1f}" for t in b.exit_s], rotation=90, fontsize=6)
        ax.set_title(f"host {host}", fontsize=9)
        ax.set_xlabel("PROBE_RTT exit (s)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("packets", fontsize=8)
    axes[1].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "exit-bursts.png", dpi=100)
    plt.close(fig)


def figure_buffer_scan(runs: pd.DataFrame, out: Path) -> None:
    """Goodput of the variant against the buffer, each repetition a dot."""
    v = runs[(runs["params.bbr"] == VARIANT) & runs.tcp.isin(list(HOSTS))]
    fig, ax = plt.subplots(figsize=(5, 3))
    for i, (host, g) in enumerate(v.groupby("tcp")):
        jitter = (i - 0.5) * 0.03
        ax.plot(g.alpha + jitter, g.goodput_mbps, "o", ms=4, alpha=0.7, label=f"host {host}")
    ax.set_xlabel("bottleneck buffer (BDP)", fontsize=8)
    ax.set_ylabel("goodput, 60 s (Mbit/s)", fontsize=8)
    ax.set_ylim(0, 50)
    ax.legend(fontsize=7)
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(out / "buffer-scan.png", dpi=100)
    plt.close(fig)


def cmd_figures(args: argparse.Namespace) -> None:
    runs = per_run(Path(args.results))
    needed = {"alpha", "tcp", "params.bbr"}
    if (
        not needed <= set(runs.columns)
        or not ((runs["params.bbr"] == VARIANT) & (runs.alpha == 1) & (runs.seed == 1)).any()
    ):
        raise ScriptError(
            f"{args.results}: not the results of scenarios/katsumata-forced-expire.toml "
            "(no seed-1 run of the loss variant at 1 BDP)"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("## Every variant on every host, 1 BDP\n")
    print(hosts_table(runs))
    print("\n## The loss-triggered variant over buffers\n")
    print(buffer_table(runs))

    ts, bursts = {}, {}
    for host in HOSTS:
        r = traced_run(host)
        sweep_goodput = runs[
            (runs["params.bbr"] == VARIANT)
            & (runs.tcp == host)
            & (runs.alpha == 1)
            & (runs.seed == 1)
        ].goodput_mbps
        if not np.isclose(sweep_goodput.iloc[0], r.flows.goodput_mbps.iloc[0]):
            raise ScriptError(f"the traced run on host {host} differs from the sweep's run")
        ts[host] = r.timeseries
        arr = bottleneck_arrivals(r.trace)
        bursts[host] = exit_bursts(r.timeseries, arr, 6.0)
        print(f"\n## PROBE_RTT exits before 6 s, host {host}\n")
        print(bursts[host].to_string(index=False))
        total = arr.groupby("retx").dropped.agg(["size", "sum"])
        print(
            "\nwhole run, packets offered to (size) and dropped by (sum) the bottleneck,"
            f" first transmissions (False) and retransmissions (True):\n{total}"
        )
        if host == "linux-stock":
            t0, t1 = figure_one_cycle(r.timeseries, arr, out)
            print(f"\none-cycle.png shows {t0:.3f}-{t1:.3f} s")
    figure_loop_vs_escape(ts, out)
    figure_exit_bursts(bursts, out)
    figure_buffer_scan(runs, out)


def cmd_kernel(args: argparse.Namespace) -> None:
    results = Path(args.validate_dir) / "results"
    if not results.is_dir():
        raise ScriptError(f"{results}: no such directory (the --out of ccfair validate)")
    runs = per_run(results)
    grid = [c for c in ("alpha", "params.bbr") if c in runs.columns]
    cols = [
        "backend",
        *grid,
        "seed",
        *COUNTERS,
        "first_probe_bw_s",
        "probe_bw_frac",
        "startup_frac",
        "probe_rtt_frac",
        "max_bw_mbps",
    ]
    pd.set_option("display.width", 250)
    print(
        runs[cols]
        .sort_values([*grid, "backend", "seed"])
        .to_string(index=False, float_format="{:.3g}".format)
    )


def cmd_bursts(args: argparse.Namespace) -> None:
    """Per traced run of a results directory (either backend): the bursts after PROBE_RTT."""
    root = Path(args.results)
    traces = sorted((root / "trace").glob("*.parquet"))
    if not traces:
        raise ScriptError(f"{root / 'trace'}: no traces (run with --trace flow1)")
    for path in traces:
        r = ccfair.load(root, run_id=path.stem)
        backend = r.runs.backend.iloc[0]
        ts = r.timeseries[r.timeseries.flow_name == "flow1"]
        b = exit_bursts(ts, bottleneck_arrivals(pd.read_parquet(path)), float("inf"))
        f = r.flows.iloc[0]
        print(
            f"run {path.stem} ({backend}): goodput {f.goodput_mbps:.1f} Mbit/s, "
            f"{len(b)} PROBE_RTT exits, {int((b.to == 'PROBE_BW').sum())} of them to PROBE_BW"
        )
        print(b.head(args.rows).to_string(index=False))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("figures", help="tables and figures from the simulator's sweep")
    f.add_argument("results", help="results directory of scenarios/katsumata-forced-expire.toml")
    f.add_argument("--out", required=True, help="directory for the PNG figures")
    k = sub.add_parser("kernel", help="both backends of the kernel validation, run by run")
    k.add_argument("validate_dir", help="the --out directory of ccfair validate")
    b = sub.add_parser("bursts", help="the bursts after PROBE_RTT of traced runs")
    b.add_argument("results", help="results directory of runs made with --trace flow1")
    b.add_argument("--rows", type=int, default=20, help="exits shown per run (default 20)")
    args = p.parse_args(argv)
    try:
        {"figures": cmd_figures, "kernel": cmd_kernel, "bursts": cmd_bursts}[args.cmd](args)
    except (ScriptError, ccfair.CcfairError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
