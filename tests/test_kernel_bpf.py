"""ccfair's BPF congestion controls on the kernel backend (docs/kernel.md, "BPF congestion
controls"): the simulator's BBR with its variants and Copa, registered as struct_ops for a
run's lifetime and selected per socket.

Tests marked ``kernel`` need root and BPF struct_ops (Linux 6.4+ with BTF), plus the BPF
programs in this build (clang and libbpf-dev when ccfair was installed; scripts/test.sh
installs them). In CI (CCFAIR_REQUIRE_KERNEL=1) a missing piece fails the test by name.
"""

from __future__ import annotations

import json
import os
import signal
import time

import ccfair
import numpy as np
import pandas as pd
import pytest
from ccfair.backends.kernel import checks as kernel_checks
from ccfair.backends.kernel import host as kernel_host
from ccfair.backends.kernel import machine as kernel_machine
from ccfair.backends.kernel import run as kernel_run
from kernel_runs import reliable_run
from test_kernel import ENV, assert_nothing_left, cli, start_run, tag_of

OFFERED = ["reno", "cubic", "bbr"]


@pytest.fixture
def bpf_backend(kernel_backend) -> None:
    """The kernel backend plus BPF congestion controls; fail (CI) or skip naming what lacks."""
    missing = kernel_host.bpf_unavailable()
    if missing is not None:
        if os.environ.get("CCFAIR_REQUIRE_KERNEL") == "1":
            pytest.fail(f"BPF congestion controls: {missing}")
        pytest.skip(f"BPF congestion controls: {missing}")


def bpf_names() -> list[str]:
    return [n for n in kernel_host.available_ccas() if kernel_host.BPF_NAME_RE.match(n)]


# --------------------------------------------------------------------------------------------
# Which program a flow runs (no privileges needed)


def test_the_kernel_module_runs_unless_modified_or_missing():
    assert kernel_checks.flow_program("bbr", {}, OFFERED) == "kernel"
    assert kernel_checks.flow_program("bbr", {"probe_rtt_ms": 200}, OFFERED) == "kernel"  # default
    assert kernel_checks.flow_program("bbr", {"probe_rtt_ms": 100}, OFFERED) == "bpf"
    assert kernel_checks.flow_program("bbr", {}, ["reno", "cubic"]) == "bpf"  # kernel without bbr
    assert kernel_checks.flow_program("bbr", {}, OFFERED, force_bpf=True) == "bpf"
    assert kernel_checks.flow_program("copa", {}, OFFERED) == "bpf"
    assert kernel_checks.flow_program("cubic", {}, OFFERED, force_bpf=True) == "kernel"
    assert kernel_checks.flow_program("cubic", {"beta": 700}, OFFERED) == "none"


def test_a_run_registers_one_program_per_algorithm_under_its_tag(monkeypatch):
    monkeypatch.setattr(kernel_run, "available_ccas", lambda: OFFERED)
    sc = ccfair.dumbbell(
        4,
        ["bbr", "bbr", "copa", "bbr"],
        cca_params=[None, {"rtprop_trigger": "rtt_ratio"}, None, {"bw_rtts": 8}],
    )
    plan = kernel_run._plan(sc.resolve(), "abcdef0123456789")
    names = [f["kernel_cca"] for f in plan.config["flows"]]
    assert names == ["bbr", "ccfabcdef01bbr", "ccfabcdef01copa", "ccfabcdef01bbr"]
    assert plan.config["bpf"] == [
        {"algorithm": "bbr", "name": "ccfabcdef01bbr"},
        {"algorithm": "copa", "name": "ccfabcdef01copa"},
    ]
    assert all(
        kernel_host.BPF_NAME_RE.match(b["name"]) and len(b["name"]) <= 15
        for b in plan.config["bpf"]
    )
    forced = kernel_run._plan(
        ccfair.dumbbell(1, "bbr").resolve(), "abcdef0123456789", force_bpf=True
    )
    assert forced.config["flows"][0]["kernel_cca"] == "ccfabcdef01bbr"


def test_without_bpf_support_a_run_that_needs_it_fails_in_one_line_before_starting(monkeypatch):
    missing = "libbpf.so.1 cannot be loaded (Debian: apt-get install libbpf1)"
    monkeypatch.setattr(kernel_checks, "bpf_unavailable", lambda: missing)
    before = kernel_host.list_netns()
    with pytest.raises(kernel_host.KernelError) as e:
        ccfair.run(ccfair.dumbbell(2, ["cubic", "copa"], duration="2s"), backend="kernel")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == (
        "flows[1] (copa) needs ccfair's BPF congestion control on the kernel backend, and "
        + missing
    )
    assert kernel_host.list_netns() == before
    # Flows the kernel's own modules run need nothing of it.
    kernel_checks.check_scenario(ccfair.dumbbell(2, ["cubic", "bbr"]).resolve(), offered=OFFERED)


# --------------------------------------------------------------------------------------------
# Runs


@pytest.mark.kernel
def test_programs_live_for_the_run_and_vanish_with_a_killed_process(bpf_backend, tmp_path):
    """Registered while the run executes; gone as soon as its process dies (SIGKILL closes
    the BPF link that holds the registration); the next start removes the namespaces."""
    sc = ccfair.dumbbell(1, "copa", bottleneck_rate="20Mbit/s", buffer_bdp=1.0, duration="30s")
    # Hold the machine's turn here and lend it to the child (as a sweep driver lends it to
    # its workers), so that the child starts at once even on a machine with other kernel
    # runs waiting.
    with kernel_machine.machine_turn():
        ENV[kernel_machine.TURN_ENV] = str(os.getpid())
        try:
            p, tag = start_run(sc, tmp_path)
            _check_registered_then_kill(p, tag)
        finally:
            ENV.pop(kernel_machine.TURN_ENV, None)
    assert cli("cleanup").returncode == 0
    assert_nothing_left(tag)


def _check_registered_then_kill(p, tag: str) -> None:
    assert f"ccf{tag}copa" in bpf_names()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    deadline = time.monotonic() + 5
    while f"ccf{tag}copa" in kernel_host.available_ccas() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"ccf{tag}copa" not in kernel_host.available_ccas()


@pytest.mark.kernel
def test_each_socket_runs_its_own_program_and_parameters(bpf_backend, tmp_path):
    """Three flows, three programs: the kernel's bbr, ccfair's BBR with a fixed start phase,
    ccfair's Copa. The BPF flows fill the simulator's internals and counters columns (in
    the schema's units, read back with plain pandas); nothing stays registered after the
    run."""
    sc = ccfair.dumbbell(
        3,
        ["bbr", "bbr", "copa"],
        bottleneck_rate="30Mbit/s",
        buffer_bdp=2.0,
        cca_params=[None, {"fixed_start_phase": 2}, None],
        duration="6s",
    )
    r = reliable_run(sc)
    ts = r.timeseries[r.timeseries["cca_state"] != "connecting"]
    by = {name: g for name, g in ts.groupby("flow_name")}
    # flow1: Linux's bbr, its model from TCP_CC_INFO (no round count there).
    assert by["flow1"]["bbr_btl_bw_mbps"].notna().all()
    assert by["flow1"]["bbr_round_count"].isna().all()
    # flow2: ccfair's BBR, every internal from its socket storage.
    f2 = by["flow2"]
    assert f2["bbr_round_count"].notna().all() and f2["bbr_round_count"].is_monotonic_increasing
    assert f2["bbr_rtprop_ms"].between(40.0, 42.0).all()
    # Mbit/s of payload over a 30 Mbit/s link (0 until the first delivery-rate sample).
    assert f2["bbr_btl_bw_mbps"].between(0.0, 35.0).all() and f2["bbr_btl_bw_mbps"].max() > 5
    probe_bw = f2[f2["cca_state"] == "PROBE_BW"]
    assert len(probe_bw) > 100
    assert probe_bw["bbr_cycle_idx"].iloc[0] in (2, 3)  # starts in phase 2, never 0.75's 1
    assert f2["copa_delta"].isna().all()
    # flow3: ccfair's Copa.
    f3 = by["flow3"]
    assert f3["copa_delta"].between(0.0, 0.5).all()
    assert set(f3["cca_state"]) <= {"slow_start", "default", "competitive"}
    assert f3["bbr_round_count"].isna().all()
    assert f3["copa_rtt_min_ms"].dropna().between(40.0, 80.0).all()  # ms; base RTT 40 ms
    # The algorithms' counters, as the simulator's flows table has them, plus the BPF
    # program's own; columns of every run's file, read back with plain pandas.
    r.save(tmp_path)
    flows = pd.read_parquet(tmp_path / "flows").set_index("flow_name")
    assert flows.loc["flow2", "bbr_round_count"] > 50
    assert np.isnan(flows.loc["flow1", "bbr_round_count"])
    assert flows.loc["flow2", "bbr_probe_rtt_entry_count"] >= 0
    assert flows.loc["flow3", "copa_time_default_s"] > 0
    assert flows.loc["flow3", "bpf_copa_filter_overflow_count"] == 0
    assert flows[["bpf_copa_filter_overflow_count"]].drop("flow3").isna().all().all()
    assert all(flows["goodput_mbps"] > 1)
    programs = json.loads(r.runs.iloc[0]["selfcheck_json"])["kernel_cca"]
    assert programs[0] == "bbr" and programs[1:] == [f"ccf{tag_of(sc)}bbr", f"ccf{tag_of(sc)}copa"]
    assert not [n for n in bpf_names() if tag_of(sc) in n]
    assert_nothing_left(tag_of(sc))


def _probe_rtt_starts(ts) -> np.ndarray:
    """Times (s) at which the flow entered PROBE_RTT, after its first second: for Linux's
    bbr the mode is inferred from the gains TCP_CC_INFO reports (crates/ccfair-emu/src/
    tcpinfo.rs), which right after the handshake can read as PROBE_RTT's (1, 1) once."""
    s = (ts["cca_state"] == "PROBE_RTT").to_numpy()
    t = ts["t_s"].to_numpy()
    starts = t[1:][s[1:] & ~s[:-1]]
    return starts[starts > 1.0]


@pytest.mark.kernel
def test_stock_bpf_bbr_matches_the_kernels_bbr_on_one_point(bpf_backend):
    """One flow, 50 Mbit/s, RTT 40 ms, 1 BDP, 12 s: ccfair's BBR with stock parameters and
    Linux's bbr agree on goodput, the bandwidth model, the pacing rate in PROBE_BW and when
    PROBE_RTT comes (10 s after the min RTT was last set)."""
    sc = ccfair.dumbbell(1, "bbr", bottleneck_delay="18ms", buffer_bdp=1.0, duration="12s")
    linux = reliable_run(sc)
    bpf = reliable_run(sc, force_bpf=True)
    assert linux.runs.iloc[0]["run_id"] != bpf.runs.iloc[0]["run_id"]
    # Never repetitions of one point: the program is not the module.
    assert linux.runs.iloc[0]["point_key"] != bpf.runs.iloc[0]["point_key"]
    g_linux, g_bpf = linux.flows.iloc[0]["goodput_mbps"], bpf.flows.iloc[0]["goodput_mbps"]
    assert abs(g_bpf / g_linux - 1) < 0.02, (g_linux, g_bpf)
    stats = {}
    for name, r in (("linux", linux), ("bpf", bpf)):
        ts = r.timeseries
        pbw = ts[ts["cca_state"] == "PROBE_BW"]
        stats[name] = {
            "pacing": pbw["pacing_rate_mbps"].median(),
            "btl_bw": pbw["bbr_btl_bw_mbps"].median(),
            "rtprop": pbw["bbr_rtprop_ms"].min(),
            "probe_bw_at": pbw["t_s"].iloc[0],
            "probe_rtt": _probe_rtt_starts(ts),
        }
    a, b = stats["linux"], stats["bpf"]
    assert abs(b["pacing"] / a["pacing"] - 1) < 0.02, stats
    assert abs(b["btl_bw"] / a["btl_bw"] - 1) < 0.02, stats
    assert abs(b["rtprop"] - a["rtprop"]) < 1.0, stats  # ms
    assert abs(b["probe_bw_at"] - a["probe_bw_at"]) < 0.2, stats
    # PROBE_RTT comes min_rtt_win_sec (10 s) after the min RTT was last lowered, which
    # happens within the first second or so (when varies from run to run).
    assert len(a["probe_rtt"]) == len(b["probe_rtt"]) == 1, stats
    assert 10.0 <= a["probe_rtt"][0] <= 11.2 and 10.0 <= b["probe_rtt"][0] <= 11.2, stats


@pytest.mark.kernel
def test_copa_samples_its_mode_and_delta(bpf_backend):
    """Copa against CUBIC in a deep buffer switches to competitive mode and lowers delta
    (AIMD on 1/delta); alone, its internals are sampled and its queue stays far below the
    buffer. (How often a lone Copa visits competitive mode on Linux is a validation question,
    docs/validation/bpf/, not an invariant.)"""
    sc = ccfair.dumbbell(
        2, ["copa", "cubic"], bottleneck_rate="20Mbit/s", buffer_bdp=4.0, duration="15s"
    )
    r = reliable_run(sc)
    # After the handshake the internals are there; the delays once the first RTT sample
    # came (NaN before, as in the simulator).
    copa = r.timeseries.query("flow_name == 'flow1' and cca_state != 'connecting'")
    assert copa["copa_delta"].notna().all()
    copa = copa[copa["t_s"] > 0.5]
    for col in ("copa_mode_competitive", "copa_delta", "copa_velocity", "copa_dq_ms"):
        assert copa[col].notna().all(), col
    assert copa["copa_mode_competitive"].mean() > 0.3
    assert copa["copa_delta"].min() < 0.5 and copa["copa_delta"].max() <= 0.5
    assert r.flows.iloc[0]["copa_mode_switch_count"] >= 1

    alone = reliable_run(
        ccfair.dumbbell(1, "copa", bottleneck_rate="20Mbit/s", buffer_bdp=2.0, duration="8s")
    )
    ts = alone.timeseries.query("cca_state != 'connecting' and t_s > 0.5")
    assert set(ts["cca_state"]) <= {"slow_start", "default", "competitive"}
    assert ts["copa_delta"].between(0.0, 0.5).all() and ts["copa_dq_ms"].notna().all()
    assert ts["copa_dq_ms"].median() < 40.0  # below the 2 BDP (80 ms) buffer's delay
    assert alone.flows.iloc[0]["goodput_mbps"] > 0.8 * 20 * 1448 / 1500
