"""The kernel backend (docs/kernel.md): real Linux TCP in network namespaces.

Tests marked ``kernel`` create namespaces and TUN devices, so they need root, /dev/net/tun,
iproute2 and the kernel's reno, cubic and bbr. CI runs them as root with
CCFAIR_REQUIRE_KERNEL=1, where a missing capability fails the test with its name; elsewhere
such a test is skipped with the missing capability as the reason (``pytest -rs`` lists it).
Each run lasts 3 to 15 s of real time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import ccfair
import numpy as np
import pytest
from ccfair.backends.kernel import checks as kernel_checks
from ccfair.backends.kernel import host as kernel_host
from ccfair.backends.kernel import machine as kernel_machine
from ccfair.backends.kernel import run as kernel_run
from ccfair.backends.kernel import selfcheck as kernel_selfcheck
from ccfair.spec.identity import run_id_of
from ccfair.spec.scenario import Scenario
from ccfair.store import schema
from kernel_runs import SWEEP_RETRIES, reliable_run

ROOT = Path(__file__).resolve().parents[1]
#: Child processes import the package under test, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
#: Payload share of a 1500-byte packet: the goodput ceiling is rate x 1448 / 1500.
PAYLOAD = 1448 / 1500


def tag_of(sc: Scenario) -> str:
    return run_id_of(sc.resolve().normalized, "kernel")[:8]


def namespaces_of(tag: str) -> list[str]:
    return [n for n in kernel_host.list_netns() if n.startswith(f"ccf-{tag}-")]


def assert_nothing_left(tag: str) -> None:
    assert namespaces_of(tag) == []
    assert not (kernel_host.STATE_DIR / f"{tag}.json").exists()


def cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args], capture_output=True, text=True, env=ENV, **kw
    )


def one_link(duration: str = "30s", cca: str = "cubic") -> Scenario:
    """One flow over 50 Mbit/s with RTT 40 ms and a 100-packet buffer."""
    return ccfair.dumbbell(
        1, cca, bottleneck_delay="18ms", buffer_pkts=100, duration=duration, name="k-one"
    )


# --------------------------------------------------------------------------------------------
# Runs


@pytest.mark.kernel
def test_single_cubic_flow_fills_the_link(kernel_backend):
    """CUBIC over 50 Mbit/s, RTT 40 ms, 1 BDP: >= 97% of the goodput ceiling, min RTT within
    1 ms of 40 ms, samples every 10 +- 2 ms, and the simulator's tables."""
    sc = ccfair.dumbbell(1, "cubic", bottleneck_delay="18ms", buffer_bdp=1.0, duration="15s")
    r = reliable_run(sc)
    f = r.flows.iloc[0]
    ceiling = 50 * PAYLOAD
    assert f["goodput_mbps"] >= 0.97 * ceiling, f["goodput_mbps"] / ceiling
    assert abs(f["rtt_min_ms"] - 40) <= 1, f["rtt_min_ms"]
    # Sampled on the 10 ms grid, no drift, and taken within 2 ms of its time as a reliable
    # run guarantees: sampling lateness p99 (`Bounds.sampling_p99_us`) and at most 1% of points
    # missed (late by a whole interval, `Bounds.missed_samples`; docs/kernel.md).
    # A VM or kernel stall delays a real-time thread by a few ms now and then, and the
    # self-check, not this test, decides how often is too often: CI passes had 0.87% of
    # points late, one point missed but recorded late, and one missed and absent, all in
    # runs the self-checks counted reliable.
    ts = r.timeseries
    points = 1500
    bounds = kernel_selfcheck.Bounds()
    missed = int(r.runs.iloc[0]["emu_missed_samples_count"])
    assert missed <= bounds.missed_samples * points, missed
    assert points - missed <= len(ts) <= points, (len(ts), missed)
    t_ms = ts["t_ns"].to_numpy() / 1e6
    # Each sample against the grid point at or before it. One sample per point: two rows on
    # one point are a sample taken early, or a missed point's sample recorded late (it falls
    # on the next point), which only the missed count may explain.
    grid = np.floor(t_ms / 10.0)
    assert grid[0] >= 1 and grid[-1] <= points and (np.diff(t_ms) > 0).all()
    assert np.sum(np.diff(grid) == 0) <= missed, np.flatnonzero(np.diff(grid) == 0)[:5]
    late_ms = t_ms - 10.0 * grid
    on_time_ms = bounds.sampling_p99_us / 1e3
    on_time = np.sum(late_ms <= on_time_ms)
    assert on_time >= 0.99 * points, (on_time, np.quantile(late_ms, [0.5, 0.99, 1]))
    # A late or missed sample makes two gaps off (the one before it long, the one after
    # short), so 1% of such points allow 2% of gaps.
    gaps = np.diff(t_ms)
    assert np.mean(np.abs(gaps - 10.0) <= on_time_ms) >= 0.98, np.quantile(gaps, [0, 0.5, 1])
    assert abs(gaps.mean() - 10.0) < 0.05
    # Packets are conserved through the forwarder.
    assert f["data_sent_pkts"] == (
        f["data_received_pkts"] + f["data_dropped_pkts"] + f["data_in_network_pkts"]
    )
    assert f["data_dropped_pkts"] > 0  # a 1 BDP buffer overflows: the link model drops
    run = r.runs.iloc[0]
    assert run["backend"] == "kernel" and bool(run["reliable"]), run["selfcheck_flags"]
    assert run["emu_lateness_p99_us"] <= kernel_selfcheck.Bounds().lateness_p99_us
    assert run["emu_rate_ratio_min_frac"] >= 0.99
    bott = r.link_summary.query("link_name == 'bottleneck' and direction == 'ab'").iloc[0]
    assert bott["utilisation_frac"] >= 0.97
    assert ts["tcp_ca_state"].isin(["Open", "Disorder", "CWR", "Recovery", "Loss"]).all()
    # The first samples come during the handshake (40 ms), as in the simulator.
    assert ts["cca_state"].iloc[0] == "connecting"
    assert set(ts["cca_state"]) <= {"connecting", "slow_start", "cong_avoid"}
    assert "cong_avoid" in set(ts["cca_state"])
    assert_nothing_left(tag_of(sc))


@pytest.mark.kernel
def test_bbr_against_cubic_at_half_a_bdp_records_both_flows(kernel_backend):
    """BBR vs CUBIC, 50 Mbit/s, RTT 40 ms, 0.5 BDP: both flows run and are recorded; BBR's
    own model (TCP_CC_INFO) is in the simulator's columns."""
    sc = ccfair.dumbbell(2, ["bbr", "cubic"], bottleneck_delay="18ms", buffer_bdp=0.5)
    sc = Scenario.from_dict({**sc.to_dict(), "duration": "12s"})
    r = reliable_run(sc)
    f = r.flows.set_index("flow_name")
    assert (f["goodput_mbps"] > 0.5).all(), f["goodput_mbps"]
    assert f["goodput_mbps"].sum() >= 0.9 * 50 * PAYLOAD
    ts = r.timeseries
    bbr = ts[ts["flow_name"] == "flow1"]
    cubic = ts[ts["flow_name"] == "flow2"]
    assert len(bbr) == len(cubic) == 1200
    assert set(bbr["cca_state"]) <= {"connecting", "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}
    assert {"STARTUP", "PROBE_BW"} <= set(bbr["cca_state"])
    late = bbr[bbr["t_s"] > 2.0]
    assert (late["bbr_btl_bw_mbps"] > 0).all() and (late["bbr_btl_bw_mbps"] < 1.1 * 50).all()
    # RTprop: the 40 ms path, plus at most the buffer's 20 ms once the 10 s min-RTT window
    # expires and PROBE_RTT measures with CUBIC's queue present. Linux may take it from a
    # timestamp-based (1 ms granular) sample, hence the 39 ms floor.
    rtprop = late["bbr_rtprop_ms"]
    assert (rtprop >= 39).all() and (rtprop <= 61).all(), rtprop.describe()
    assert set(late["bbr_pacing_gain"]) <= {0.75, 1.0, 1.25, 2.88671875, 88 / 256}
    assert late["pacing_rate_mbps"].notna().all()
    assert cubic["bbr_btl_bw_mbps"].isna().all()
    assert set(cubic["cca_state"]) <= {"connecting", "slow_start", "cong_avoid"}
    assert bool(r.runs.iloc[0]["reliable"]), r.runs.iloc[0]["selfcheck_flags"]


@pytest.mark.kernel
def test_no_sender_is_read_ahead_of_another_by_its_host_number(kernel_backend):
    """Packets that two senders write while the forwarder sleeps or works reach it together
    and are stamped in the order it reads them. Of two flows' data packets stamped less than
    3 us apart at the first hop, flow1's comes first in about half of the pairs: the devices
    are read in turns in an order drawn at each wake-up (it was 96% when each device was
    read until empty in host order, and the higher-numbered flows lost the races for a full
    buffer's free slot: docs/validation/bbr-among-bbr). Two BBR flows: paced in 2-segment
    bursts, they write at independent times, and about 4% of the pairs fall within 3 us
    (measured: 1344 pairs, 0.49 lower first; 799 and 0.90 with the old order)."""
    sc = ccfair.dumbbell(
        2, "bbr", bottleneck_delay="18ms", buffer_bdp=0.5, duration="8s", name="k-order"
    )
    r = reliable_run(sc, trace=["flow1", "flow2"])
    t = r.trace
    first_hop = t[(t["hop"] == 0) & (t["kind"] == "data")]
    first_hop = first_hop[first_hop["event"].isin(["enqueue", "drop_queue"])]
    first_hop = first_hop.sort_values("t_ns", kind="stable")
    t_ns = first_hop["t_ns"].to_numpy()
    flow = first_hop["flow"].to_numpy()
    close = (flow[:-1] != flow[1:]) & (np.diff(t_ns) < 3_000)
    assert close.sum() >= 200, f"only {close.sum()} close pairs of the two flows' packets"
    lower_first = float((flow[:-1][close] < flow[1:][close]).mean())
    # No assertion on the self-checks: a stall of the forwarder delays reads, it does not
    # order them, so the order of close pairs is measured in a flagged run as well.
    assert 0.3 <= lower_first <= 0.7, (lower_first, int(close.sum()))


@pytest.mark.kernel
def test_flows_connect_at_their_start_and_the_hosts_turnarounds_are_measured(kernel_backend):
    """Each sender connects at its flow's start (the second one 1 s in): SYN, SYN-ACK, then
    data, as the simulator models it; the forwarder measures the hosts' reaction times."""
    sc = ccfair.dumbbell(
        2,
        ["cubic", "reno"],
        bottleneck_delay="18ms",
        buffer_bdp=1.0,
        duration="3s",
        starts=["0s", "1s"],
    )
    r = reliable_run(sc)
    f = r.flows.set_index("flow_name")
    resolved = sc.resolve()
    hs_ideal_us = resolved.flow("flow1").base_rtt_ns / 1e3
    # A full bottleneck buffer (1 BDP of 1500-byte packets) holds 20 ms of data.
    queue_us = resolved.link("bottleneck").buffer_pkts * 1500 * 8 / 50e6 * 1e6
    for name, start, most in (("flow1", 0.0, 1_000), ("flow2", 1.0, queue_us + 1_000)):
        syn = f.loc[name, "syn_sent_s"]
        assert start < syn < start + 0.002, (name, syn)
        assert hs_ideal_us < 1e3 * f.loc[name, "handshake_rtt_ms"] < hs_ideal_us + most, name
        synack = syn + f.loc[name, "handshake_rtt_ms"] / 1e3
        assert synack < f.loc[name, "first_data_sent_s"] < synack + 0.002
        assert f.loc[name, "syn_retrans_pkts"] == 0
    # The late flow's handshake crosses the first flow's queue: a higher first RTT sample.
    assert f.loc["flow2", "handshake_rtt_ms"] > f.loc["flow1", "handshake_rtt_ms"] + 1
    check = json.loads(r.runs.iloc[0]["selfcheck_json"])
    for side in ("receiver_turnaround", "sender_turnaround"):
        q = check["forwarder"][side]
        assert q["count"] > 1000 and 1 < q["us"][q["probs"].index(0.5)] < 1000, (side, q)
    assert bool(r.runs.iloc[0]["reliable"]), r.runs.iloc[0]["selfcheck_flags"]


@pytest.mark.kernel
def test_the_send_buffer_caps_the_data_in_flight_as_under_iperf(kernel_backend):
    """With tcp_wmem's maximum at 512 KiB a CUBIC flow into a deep buffer reaches the send
    buffer's cap within seconds and stays under it, as the simulator's model has it: the
    sender writes only when poll() says the socket is writable, as iperf does. A sender
    that retried its writes regardless kept topping up the unsent tail skb, which
    tcp_sendmsg_locked extends without checking the buffer, and its data in flight grew
    with cwnd past the cap (with it, the stock 4 MiB let 14,483 packets, about 21 MB, into
    flight at 10 Mbit/s and 204 ms: docs/validation/rmem)."""
    wmem_max_bytes = 512 << 10
    sc = ccfair.dumbbell(
        1,
        "cubic",
        bottleneck_rate="10Mbit/s",
        bottleneck_delay="100ms",
        buffer_bdp=64,
        duration="12s",
        tcp={"wmem": [4096, 16384, wmem_max_bytes]},
    )
    r = reliable_run(sc)
    inflight = r.timeseries["inflight_pkts"]
    cap_pkts = wmem_max_bytes / 1448
    assert inflight.max() >= 0.6 * cap_pkts, inflight.describe()  # the cap was reached
    assert inflight.max() <= 1.1 * cap_pkts, inflight.describe()
    # The simulator's sender, woken when a third of its buffer is free, stays under it too.
    assert ccfair.run(sc).timeseries["inflight_pkts"].max() <= 1.1 * cap_pkts


@pytest.mark.kernel
def test_a_kernel_trace_has_the_simulators_columns_and_counts(kernel_backend):
    """The forwarder traces a flow's packets hop by hop, with the simulator's columns:
    positions in bytes from the ISN on, drops that match the flows table."""
    sc = ccfair.parking_lot(2, "cubic", "reno", buffer_bdp=0.5, duration="3s")
    r = reliable_run(sc, trace=["main"])
    s = ccfair.run(sc, trace=["main"])
    assert list(r.trace.columns) == list(s.trace.columns)
    t = r.trace
    main = r.flows.set_index("flow_name").loc["main"]
    data = t[t["kind"] == "data"]
    assert data["event"].str.startswith("drop").sum() == main["data_dropped_pkts"]
    assert ((data["event"] == "enqueue") & (data["hop"] == 0)).sum() == main["data_sent_pkts"]
    assert t.iloc[0]["kind"] == "syn" and t.iloc[0]["t_s"] == pytest.approx(main["syn_sent_s"])
    first = data[data["hop"] == 0]["seq_bytes"]
    assert first.iloc[0] == 0 and (first.diff().dropna() != 0).any()
    # Cumulative ACKs leave the receiver in order.
    acks = t[(t["kind"] == "ack") & (t["event"] == "arrive") & (t["hop"] == 0)]["seq_bytes"]
    assert acks.max() <= data["seq_bytes"].max() + 1448 and acks.is_monotonic_increasing
    # The receive window, as Linux 6.18 advertises it and the simulator models it: 65160 B
    # in the SYN-ACK, then growing with the receive buffer in slow start, ACKs carrying it.
    for trace in (t, s.trace):
        first = trace[(trace["hop"] == 0) & trace["event"].eq("enqueue")]
        assert first[first["kind"] == "synack"]["window_bytes"].iloc[0] == 65_160
        windows = first[first["kind"] == "ack"]["window_bytes"]
        assert windows.iloc[0] > 60_000 and windows.max() > 2 * windows.iloc[0]


@pytest.mark.kernel
def test_kernel_tables_have_the_simulators_columns(kernel_backend, tmp_path):
    """Same tables and columns (and dtypes) as the simulator; Parquet round trip."""
    sc = one_link("3s")
    k = reliable_run(sc)
    s = ccfair.run(sc, backend="sim")
    # The algorithm's own counters and internals are the simulator's model, not Linux's.
    internals = ("cubic_", "bbr_", "copa_")
    counters = {c["name"] for c in schema.columns("flows") if c["name"].startswith(internals)}
    for table in ("runs", "flows", "timeseries", "links", "link_summary"):
        kf, sf = getattr(k, table), getattr(s, table)
        common = [c for c in sf.columns if c not in counters and not c.startswith("cubic_")]
        missing = set(common) - set(kf.columns)
        assert not missing, (table, missing)
        for c in common:
            assert kf[c].dtype.kind == sf[c].dtype.kind, (table, c, kf[c].dtype, sf[c].dtype)
    k.save(tmp_path)
    s.save(tmp_path)
    runs = ccfair.load_table(tmp_path, "runs")
    assert sorted(runs["backend"]) == ["kernel", "sim"]
    assert runs["reliable"].all()


@pytest.mark.kernel
def test_two_hop_parking_lot_routes_every_flow(kernel_backend):
    """Multi-hop routing: each flow's min RTT is its own path's, each bottleneck is shared
    by the flows that cross it. D = 18 ms (RTT 40 ms for the cross flows): the routing does
    not depend on it, and the lateness bound is a tenth of the smallest RTT, so a shorter one
    would make the run fail on a VM's ordinary 2-3 ms stalls rather than on routing."""
    sc = ccfair.parking_lot(2, "cubic", "cubic", delay="18ms", buffer_bdp=1.0, duration="8s")
    r = reliable_run(sc)
    f = r.flows.set_index("flow_name")
    resolved = sc.resolve()
    for name in ("main", "cross1", "cross2"):
        base_us = resolved.flow(name).base_rtt_ns / 1e3
        # + serialisation of the handshake and up to the 500 us handshake bound
        # (docs/kernel.md)
        assert base_us <= 1e3 * f.loc[name, "rtt_min_ms"] <= base_us + 1_500, name
        assert f.loc[name, "goodput_mbps"] > 1, name
    ceiling = 50 * PAYLOAD
    for cross in ("cross1", "cross2"):
        shared = f.loc["main", "goodput_mbps"] + f.loc[cross, "goodput_mbps"]
        assert 0.85 * ceiling <= shared <= 1.001 * ceiling, (cross, shared / ceiling)
    assert bool(r.runs.iloc[0]["reliable"]), r.runs.iloc[0]["selfcheck_flags"]


@pytest.mark.kernel
def test_ten_hop_parking_lot_runs_every_flow_on_its_path(kernel_backend):
    """22 hosts, 10 bottlenecks in series: the main flow's handshake and data cross all ten
    (its 364 ms path), each cross flow only its own link. At 10 Mbit/s per link,
    because at 50 Mbit/s (0.5 Gbit/s through one forwarder) a 2-vCPU machine exceeds the
    lateness bounds (docs/kernel.md)."""
    sc = ccfair.parking_lot(
        10, "cubic", "cubic", rate="10Mbit/s", delay="18ms", buffer_bdp=1.0, duration="8s"
    )
    r = reliable_run(sc)
    f = r.flows.set_index("flow_name")
    resolved = sc.resolve()
    assert len(f) == 11
    for name in f.index:
        base_us = resolved.flow(name).base_rtt_ns / 1e3
        # Every flow connects at t = 0: a cross flow's handshake meets empty queues, the main
        # flow's meets, hop after hop, the queues the cross flows are building, and its min
        # RTT is at most that first sample.
        most = 2_000 if name != "main" else 1e3 * f.loc[name, "handshake_rtt_ms"] - base_us + 2_000
        assert base_us <= 1e3 * f.loc[name, "rtt_min_ms"] <= base_us + most, name
    cross = f.drop(index="main")["goodput_mbps"]
    assert (cross > 0.85 * 10 * PAYLOAD).all(), cross
    assert f.loc["main", "goodput_mbps"] > 0
    assert bool(r.runs.iloc[0]["reliable"]), r.runs.iloc[0]["selfcheck_flags"]


# --------------------------------------------------------------------------------------------
# What the kernel cannot run, and who may run it


def test_rejects_an_algorithm_the_kernel_lacks_before_anything_starts():
    before = kernel_host.list_netns()
    with pytest.raises(ccfair.SpecError) as e:
        kernel_checks.check_scenario(ccfair.dumbbell(1, "cubic").resolve(), offered=["reno"])
    assert e.value.path == "flows[0].cca"
    assert "this kernel offers: reno (and ccfair's BPF programs: bbr, copa)" in str(e.value)
    # A modification of an algorithm without a BPF program: rejected before anything runs.
    with pytest.raises(ccfair.SpecError) as e:
        ccfair.run(
            ccfair.dumbbell(1, "cubic", cca_params={"beta": 700}, duration="2s"),
            backend="kernel",
        )
    assert e.value.path == "flows[0].cca_params.beta"
    assert kernel_host.list_netns() == before


def test_cli_rejects_an_unsupported_algorithm_in_one_line(tmp_path):
    f = tmp_path / "cubic.toml"
    sc = ccfair.dumbbell(2, "cubic", cca_params=[None, {"beta": 700}], duration="2s")
    f.write_text(sc.to_toml())
    p = cli("run", str(f), "--backend", "kernel")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: flows[1].cca_params.beta: 700 is a modification"), lines
    assert "BPF programs (bbr, copa)" in lines[0] and "Traceback" not in p.stderr
    assert p.stdout == ""  # nothing claimed to run


def test_rejects_a_modified_algorithm_and_unsettable_tcp_options():
    with pytest.raises(ccfair.SpecError) as e:
        kernel_checks.check_scenario(
            ccfair.dumbbell(1, "cubic", cca_params={"beta": 700}).resolve(),
            offered=["reno", "cubic", "bbr"],
        )
    assert e.value.path == "flows[0].cca_params.beta"
    assert "modification of cubic" in str(e.value) and "BPF programs (bbr, copa)" in str(e.value)
    with pytest.raises(ccfair.SpecError) as e:
        kernel_checks.check_scenario(
            ccfair.dumbbell(1, "cubic", tcp={"delack_ms": 10}).resolve(), offered=["cubic"]
        )
    assert e.value.path == "tcp.delack_ms" and "settable:" in str(e.value)
    # Options Linux sets per namespace are accepted ...
    kernel_checks.check_scenario(
        ccfair.dumbbell(1, "cubic", tcp={"init_cwnd": 20, "sack": False}).resolve(),
        offered=["cubic"],
    )
    # ... unless two flows sending from one host disagree.
    sc = Scenario.from_dict(
        {
            "duration": "2s",
            "links": [{"between": ["a", "b"], "rate": "10Mbit/s", "delay": "5ms"}],
            "flows": [
                {"src": "a", "dst": "b", "cca": "cubic", "tcp": {"frto": False}},
                {"src": "a", "dst": "b", "cca": "cubic", "tcp": {"frto": True}},
            ],
        }
    )
    with pytest.raises(ccfair.SpecError) as e:
        kernel_checks.check_scenario(sc.resolve(), offered=["cubic"])
    assert e.value.path == "flows[1].tcp.frto"
    assert 'differs from flows[0].tcp.frto = false on host "a"' in str(e.value)


def test_without_root_the_error_names_the_missing_capability(tmp_path):
    f = tmp_path / "one.toml"
    f.write_text(one_link("2s").to_toml())
    cmd = [sys.executable, "-m", "ccfair", "run", str(f), "--backend", "kernel"]
    if not kernel_host.missing_capabilities():
        if shutil.which("setpriv") is None:
            pytest.fail("this test drops root's capabilities with setpriv (util-linux)")
        drop = "-net_admin,-sys_admin"
        cmd = ["setpriv", "--bounding-set", drop, "--inh-caps", drop, *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "needs root" in lines[0] and "CAP_NET_ADMIN" in lines[0], lines[0]


# --------------------------------------------------------------------------------------------
# Cleanup: normal exit, SIGINT, SIGTERM, SIGKILL


def start_run(sc: Scenario, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """Start `ccfair run` on the kernel backend; return once its forwarder runs."""
    f = tmp_path / "run.toml"
    f.write_text(sc.to_toml())
    tag = tag_of(sc)
    p = subprocess.Popen(
        [sys.executable, "-m", "ccfair", "run", str(f), "--backend", "kernel"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        # As from a terminal: a shell that starts a job in the background (`cmd &`) without
        # job control hands it SIGINT ignored, and this test sends SIGINT.
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if p.poll() is not None:
            pytest.fail(f"the run ended early: {p.communicate()}")
        if f"ccf{tag}-s0" in thread_names(p.pid):
            return p, tag
        time.sleep(0.05)
    p.kill()
    pytest.fail("the run's sender thread did not appear within 15 s")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def thread_names(pid: int) -> set[str]:
    names = set()
    for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
        try:
            names.add(comm.read_text().strip())
        except OSError:
            pass
    return names


def netns_read(ns: str, path: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.kernel
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_the_run_and_removes_everything(kernel_backend, tmp_path, sig):
    p, tag = start_run(one_link("30s"), tmp_path)
    # While it runs: everything it made carries the prefix and the tag, and is set up.
    names = namespaces_of(tag)
    assert len(names) == 2 and all(kernel_host.NETNS_RE.match(n) for n in names)
    assert {f"ccf{tag}-fw", f"ccf{tag}-s0", f"ccf{tag}-r0"} <= thread_names(p.pid)
    for ns in names:
        links = subprocess.run(
            ["ip", "-n", ns, "-j", "link"], capture_output=True, text=True, check=True
        )
        devs = {d["ifname"] for d in json.loads(links.stdout)} - {"lo"}
        assert len(devs) == 1 and devs.pop().startswith(f"ccf{tag}-")
        assert netns_read(ns, "/proc/sys/net/ipv4/tcp_no_metrics_save") == "1"
        assert netns_read(ns, "/proc/sys/net/ipv6/conf/all/disable_ipv6") == "1"
    state = json.loads((kernel_host.STATE_DIR / f"{tag}.json").read_text())
    assert state["pid"] == p.pid and sorted(state["netns"]) == sorted(names)
    t = time.monotonic()
    p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    assert time.monotonic() - t < 5
    assert p.returncode == 128 + sig, (p.returncode, err)
    assert "interrupted" in err and "Traceback" not in err
    assert_nothing_left(tag)


def kill_a_run(tmp_path: Path, sc: Scenario) -> str:
    p, tag = start_run(sc, tmp_path)
    p.kill()
    p.wait(timeout=10)
    left = namespaces_of(tag)
    assert len(left) == 2, left  # SIGKILL: no chance to clean up
    assert (kernel_host.STATE_DIR / f"{tag}.json").exists()
    for ns in left:  # ... but the TUN devices died with the process's fds
        links = subprocess.run(
            ["ip", "-n", ns, "-j", "link"], capture_output=True, text=True, check=True
        )
        assert {d["ifname"] for d in json.loads(links.stdout)} == {"lo"}
    return tag


@pytest.fixture
def decoys():
    """Namespaces ccfair did not create (one with a similar name) and one of a live run."""
    live_tag = "0123abcd"
    names = ["ccf-decoy-1", "ccfair-not-ours", f"ccf-{live_tag}-0-h1"]
    for n in names:
        subprocess.run(["ip", "netns", "add", n], check=True)
    kernel_host.STATE_DIR.mkdir(parents=True, exist_ok=True)
    live_state = kernel_host.STATE_DIR / f"{live_tag}.json"
    live_state.write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "start_time": kernel_host.proc_start_time(os.getpid()),
                "netns": [names[2]],
            }
        )
    )
    yield names
    for n in names:
        subprocess.run(["ip", "netns", "del", n], check=False)
    live_state.unlink(missing_ok=True)


@pytest.mark.kernel
def test_cleanup_after_sigkill_removes_only_what_ccfair_left(kernel_backend, tmp_path, decoys):
    tag = kill_a_run(tmp_path, one_link("30s"))
    p = cli("cleanup")
    assert p.returncode == 0, p.stderr
    assert f"ccf-{tag}-0-h1" in p.stdout
    assert_nothing_left(tag)
    assert set(decoys) <= set(kernel_host.list_netns())


@pytest.mark.kernel
def test_the_next_run_removes_what_a_crash_left(kernel_backend, tmp_path, decoys):
    tag = kill_a_run(tmp_path, one_link("30s"))
    r = ccfair.run(one_link("2s", cca="reno"), backend="kernel")
    assert r.flows.iloc[0]["goodput_mbps"] > 0
    assert_nothing_left(tag)
    assert set(decoys) <= set(kernel_host.list_netns())


# --------------------------------------------------------------------------------------------
# Pieces that need no privileges


def test_plan_names_carry_the_prefix_and_tag():
    sc = ccfair.parking_lot(10, "cubic", "reno", tcp={"init_cwnd": 20})
    resolved = sc.resolve()
    plan = kernel_run._plan(resolved, "abcdef0123456789")
    hosts = plan.config["hosts"]
    assert len(hosts) == 22
    assert all(kernel_host.NETNS_RE.match(n) and n.startswith("ccf-abcdef01-") for n in plan.netns)
    assert all(len(h["dev"]) <= 15 and h["dev"].startswith("ccfabcdef01-") for h in hosts)
    assert len({h["addr"] for h in hosts}) == 22
    senders = {f["src"] for f in resolved.engine_spec["flows"]}
    for h in hosts:
        sysctl = dict(h["sysctls"])
        assert sysctl["net/ipv4/tcp_no_metrics_save"] == "1"
        assert sysctl["net/ipv6/conf/all/disable_ipv6"] == "1"
        # Stock Linux hosts (the default testbed) have Linux's own socket buffers.
        assert sysctl["net/ipv4/tcp_wmem"] == "4096 16384 4194304"
        assert sysctl["net/ipv4/tcp_rmem"] == "4096 131072 33554432"
        assert (h["route_options"] == ["initcwnd", "20"]) == (h["node"] in senders)
    assert [f["kernel_cca"] for f in plan.config["flows"]] == ["cubic"] + ["reno"] * 10


def test_deep_buffers_get_large_socket_buffers_on_idealised_hosts_only():
    def sender_wmem(testbed: str) -> int:
        sc = ccfair.dumbbell(1, "cubic", bottleneck_delay="100ms", buffer_bdp=16.0, testbed=testbed)
        h = kernel_run._plan(sc.resolve(), "0" * 16).config["hosts"][0]
        return int(dict(h["sysctls"])["net/ipv4/tcp_wmem"].split()[2])

    # 50 Mbit/s x 204 ms = 1.3 MB BDP; 16 BDP of buffer: socket buffers of 4 x ~22 MB.
    assert sender_wmem("ideal") > 80e6
    # A stock Linux host keeps its 4 MiB, which then caps the flow as on a real testbed.
    assert sender_wmem("linux-stock") == 4 << 20


def test_receive_buffers_follow_tcp_rmem_on_the_receiving_host():
    """tcp.rmem sets the receiver's namespace as it sets the simulator's receiver: "linux"
    is the stock 6.18 setting; the sender's host keeps buffers that fit."""
    sc = ccfair.dumbbell(1, "cubic", bottleneck_delay="18ms", buffer_bdp=2.0, testbed="ideal")
    sc = Scenario.from_dict({**sc.to_dict(), "tcp": {"rmem": "linux"}})
    plan = kernel_run._plan(sc.resolve(), "0" * 16).config["hosts"]
    by_node = {h["node"]: dict(h["sysctls"]) for h in plan}
    flow = sc.resolve().engine_spec["flows"][0]
    assert by_node[flow["dst"]]["net/ipv4/tcp_rmem"] == "4096 131072 33554432"
    assert int(by_node[flow["src"]]["net/ipv4/tcp_rmem"].split()[2]) >= 8 << 20
    # Two flows into one host must agree on its tcp_rmem.
    d = ccfair.dumbbell(2, "cubic", bottleneck_delay="18ms").to_dict()
    d["flows"][1]["dst"] = d["flows"][0]["dst"]
    d["flows"][1]["tcp"] = {"rmem": [4096, 131072, 1 << 20]}
    with pytest.raises(ccfair.SpecError, match=r"flows\[1\]\.tcp\.rmem"):
        kernel_checks.check_scenario(Scenario.from_dict(d).resolve(), offered=["cubic"])


def test_assess_flags_each_bound():
    ok = {
        "forwarder": {
            "lateness": {"p99_us": 40.0, "p999_us": 100.0},
            "cpu_frac": 0.3,
            "rates": [{"achieved_bps": 49.9e6, "rate_bps": 50e6, "busy_s": 9.0}],
            "write_errors": 0,
        },
        "missed_samples": 0,
        "expected_samples": 3000,
        "sampling_lateness": {"p99_us": 100.0},
        "host_tx_drops": 0,
    }
    assert kernel_selfcheck.assess(ok) == []
    bad = json.loads(json.dumps(ok))
    bad["forwarder"]["lateness"] = {"p99_us": 800.0, "p999_us": 5000.0}
    bad["forwarder"]["cpu_frac"] = 0.95
    bad["forwarder"]["rates"][0]["achieved_bps"] = 45e6
    bad["missed_samples"] = 100
    bad["host_tx_drops"] = 3
    bad["sampling_lateness"]["p99_us"] = 3000.0
    flags = kernel_selfcheck.assess(bad)
    assert len(flags) == 7, flags
    assert any("p99 800 us" in f for f in flags) and any("CPU 95%" in f for f in flags)
    # A stall beyond a tenth of the smallest base RTT (4 ms of 40 ms) is flagged, one below
    # it is not; so is a handshake packet beyond its bound.
    stall = json.loads(json.dumps(ok))
    stall["min_base_rtt_us"] = 40_000.0
    stall["forwarder"].update(stalls=2, stall_threshold_us=1000.0)
    stall["forwarder"]["lateness"]["max_us"] = 3_900.0
    assert kernel_selfcheck.assess(stall) == []
    stall["forwarder"]["lateness"]["max_us"] = 9_000.0
    stall["forwarder"]["handshake_lateness"] = {"max_us": 700.0}
    flags = kernel_selfcheck.assess(stall)
    assert len(flags) == 2 and any("stall" in f and "9.0 ms" in f for f in flags), flags
    assert any("handshake packet was 700 us late" in f for f in flags), flags
    assert not any("hypervisor" in f for f in flags)  # no steal time recorded: none said
    # On a VM whose host took CPU meanwhile, the stall says so (the run's steal time).
    stall["steal_ms"] = 80.0
    assert any(
        "the hypervisor took 80 ms of CPU (steal time)" in f for f in kernel_selfcheck.assess(stall)
    )
    # A link busy too briefly is not judged.
    brief = json.loads(json.dumps(ok))
    brief["forwarder"]["rates"][0].update(achieved_bps=10e6, busy_s=0.1)
    assert kernel_selfcheck.assess(brief) == []


def test_steal_time_is_read_from_proc_stat():
    assert kernel_machine.steal_ms("cpu  1 2 3 4 5 6 7 250 0 0\n") == 250 * 1000.0 / os.sysconf(
        "SC_CLK_TCK"
    )
    assert (
        kernel_machine.steal_ms("cpu  1 2 3\n") is None
        and kernel_machine.steal_ms("intr 5\n") is None
    )
    here = kernel_machine.steal_ms()  # this machine's, if it has /proc/stat
    assert here is None or here >= 0


def test_capabilities_and_hz_parsing():
    assert kernel_host.missing_capabilities("CapEff:\t000001ffffffffff\n") == []
    assert kernel_host.missing_capabilities("CapEff:\t0000000000000000\n") == [
        "CAP_NET_ADMIN",
        "CAP_SYS_ADMIN",
    ]
    assert kernel_host.kernel_hz() in (None, 100, 250, 300, 1000)


def test_cleanup_spares_a_run_that_starts_while_it_looks(tmp_path, monkeypatch):
    """A run writes its record, then creates namespaces; a cleanup that read the records
    just before must still not delete them. Dead runs' namespaces and unrecorded ones go."""
    monkeypatch.setattr(kernel_host, "STATE_DIR", tmp_path)
    me = {"pid": os.getpid(), "start_time": kernel_host.proc_start_time(os.getpid())}
    dead = {"pid": 2**22 + 1, "start_time": 1, "netns": ["ccf-deadbeef-0-h1"]}
    (tmp_path / "deadbeef.json").write_text(json.dumps(dead))
    names = ["ccf-deadbeef-0-h1", "ccf-0badcafe-0-h1", "ccf-12345678-0-h1", "ccf-decoy-1"]

    def listing() -> list[str]:
        # The new run 12345678 records itself after cleanup read the records.
        (tmp_path / "12345678.json").write_text(json.dumps({**me, "netns": [names[2]]}))
        return [n for n in names if n not in deleted]

    deleted: list[str] = []
    monkeypatch.setattr(kernel_host, "list_netns", listing)
    monkeypatch.setattr(kernel_host, "delete_netns", deleted.append)
    removed = kernel_host.cleanup()
    assert sorted(removed) == ["ccf-0badcafe-0-h1", "ccf-deadbeef-0-h1"]
    assert sorted(deleted) == sorted(removed)
    assert not (tmp_path / "deadbeef.json").exists()
    assert (tmp_path / "12345678.json").exists()


@pytest.mark.kernel
def test_parallel_kernel_runs_warn_exactly_when_lateness_is_flagged(kernel_backend):
    from ccfair.execution.runs import run_many

    scs = [one_link("3s", cca="cubic"), one_link("3s", cca="bbr")]
    warnings: list[str] = []
    done: list[int] = []
    rs = run_many(
        scs,
        backend="kernel",
        jobs=2,
        on_result=lambda i, r: done.append(i),
        warn=warnings.append,
    )
    assert [r.flows.iloc[0]["cca"] for r in rs] == ["cubic", "bbr"]
    assert sorted(done) == [0, 1]
    assert all(r.flows.iloc[0]["goodput_mbps"] > 10 for r in rs)
    late = [
        r
        for r in rs
        if any(k in r.runs.iloc[0]["selfcheck_flags"] for k in kernel_selfcheck.LATENESS_FLAGS)
    ]
    assert bool(warnings) == bool(late), (warnings, [r.runs.iloc[0]["selfcheck_flags"] for r in rs])
    for sc in scs:
        assert_nothing_left(tag_of(sc))
    with pytest.raises(ccfair.SpecError, match="jobs"):
        run_many(scs, backend="kernel", jobs=0)


@pytest.mark.kernel
def test_a_kernel_sweep_runs_one_point_at_a_time_by_default(kernel_backend, tmp_path):
    from ccfair.execution.sweeps import run_sweep
    from ccfair.spec.sweep import Sweep

    sw = Sweep.from_dict(
        {
            "name": "ksweep",
            "backend": "kernel",
            "base": {"builder": "dumbbell", "n_flows": 1, "ccas": ["cubic"], "duration": "3s"},
            "grid": {"alpha": [0.5, 2]},
        }
    )
    said: list[str] = []
    outcome = run_sweep(
        sw, tmp_path / "res", progress=False, log=said.append, retries=SWEEP_RETRIES
    )
    assert sorted(outcome.executed) == sorted({p.run_id for p in sw.expand()})
    assert any("1 local worker(s)" in m for m in said), said
    runs = ccfair.load_table(tmp_path / "res", "runs")
    assert (runs["backend"] == "kernel").all() and runs["reliable"].all()
    started = sorted(pd_times(runs))
    # One at a time: the second run started after the first had run its 3 s.
    assert started[1] - started[0] >= 3.0
    assert [n for n in kernel_host.list_netns() if n.startswith("ccf-")] == []


def pd_times(runs) -> list[float]:
    import pandas as pd

    return [pd.Timestamp(t).timestamp() for t in runs["started_at"]]


def test_kernel_runs_of_different_processes_take_turns(tmp_path, monkeypatch):
    """A second process waits for the first one's turn and says whom it waits for; threads
    of one driver share its turn."""
    monkeypatch.setattr(kernel_machine, "STATE_DIR", tmp_path)
    monkeypatch.setattr(kernel_machine, "TURN_PATH", tmp_path / "kernel.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(tmp_path / 'kernel.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode())\n"
            "print('held', flush=True); time.sleep(1.0)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    said: list[str] = []
    t = time.monotonic()
    with kernel_machine.machine_turn(said.append):
        waited = time.monotonic() - t
        # A second entry from this process (a parallel run of the same driver) does not wait.
        with kernel_machine.machine_turn(said.append):
            pass
    holder.wait(timeout=10)
    assert waited > 0.3, waited
    assert len(said) == 1 and f"process {holder.pid}" in said[0]
    # Released: the next turn is immediate and silent.
    with kernel_machine.machine_turn(said.append):
        pass
    assert len(said) == 1


def test_a_busy_machine_is_reported_before_kernel_runs():
    """A process spinning on a core is named in the warning; without it, when the machine is
    quiet, nothing is said (the quiet case only asserts what the load allows)."""
    spinner = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        said: list[str] = []
        assert kernel_machine.warn_if_busy(said.append, window_s=0.5)
        assert len(said) == 1 and "sh " in said[0] and "busy" in said[0], said
        load = dict(kernel_machine.machine_load(0.3))
        assert load.get("sh", 0) > 0.5, load
    finally:
        spinner.kill()
        spinner.wait()
