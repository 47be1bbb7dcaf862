"""The run path end to end: scenario -> engine -> tables -> Parquet -> CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ccfair
import pandas as pd
import pytest
from ccfair.backends.kernel import checks as kernel_checks
from ccfair.store.directory import finished_run_ids

ROOT = Path(__file__).resolve().parents[1]


def small(**kw):
    args = dict(bottleneck_delay="5ms", buffer_bdp=1.0, duration="4s")
    args.update(kw)
    return ccfair.dumbbell(2, "reno", **args)


def test_result_tables_have_the_documented_columns():
    r = ccfair.run(small())
    for col in [
        "run_id",
        "flow",
        "flow_name",
        "cca",
        "goodput_mbps",
        "goodput_mbps",
        "share_frac",
        "retrans_pkts",
        "rtt_mean_ms",
        "rtt_min_ms",
        "window_delivered_bytes",
    ]:
        assert col in r.flows.columns, col
    for col in [
        "t_s",
        "flow",
        "flow_name",
        "cwnd_pkts",
        "inflight_pkts",
        "srtt_ms",
        "min_rtt_ms",
        "pacing_rate_mbps",
        "delivery_rate_mbps",
        "goodput_mbps",
        "tcp_ca_state",
        "cca_state",
    ]:
        assert col in r.timeseries.columns, col
    for col in [
        "t_s",
        "link",
        "link_name",
        "direction",
        "queue_pkts",
        "queue_bytes",
        "drop_pkts",
        "utilisation_frac",
    ]:
        assert col in r.links.columns, col
    assert r.flows["share_frac"].sum() == pytest.approx(1.0)
    # Samples every 10 ms for 4 s, per flow.
    assert len(r.timeseries) == 2 * 400
    assert r.runs.loc[0, "git_revision"]
    assert json.loads(r.runs.loc[0, "spec_json"])["duration"] == "4s"


def test_goodput_matches_bytes_over_window():
    r = ccfair.run(small(measure=("1s", "4s")))
    f = r.flows
    assert (f["goodput_mbps"] == f["window_delivered_bytes"] * 8e3 / 3e9).all()
    # The window excludes the first second: fewer bytes than delivered in total.
    assert (f["window_delivered_bytes"] < f["delivered_bytes"]).all()


def test_same_spec_and_seed_give_identical_tables():
    a, b = ccfair.run(small(bottleneck_loss=0.01)), ccfair.run(small(bottleneck_loss=0.01))
    assert a.run_id == b.run_id
    pd.testing.assert_frame_equal(a.flows, b.flows)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.links, b.links)
    c = ccfair.run(small(bottleneck_loss=0.01, seed=2))
    assert c.run_id != a.run_id
    assert not c.flows["retrans_pkts"].equals(a.flows["retrans_pkts"])


def test_start_jitter_makes_seeds_differ_and_is_reported():
    sc = dict(start_jitter="20ms", starts="1s")
    a = ccfair.run(small(**sc))
    b = ccfair.run(small(seed=2, **sc))
    assert ((a.flows["start_s"] >= 1.0) & (a.flows["start_s"] <= 1.02)).all()
    assert not a.flows["start_s"].equals(b.flows["start_s"])
    assert not a.flows["goodput_mbps"].equals(b.flows["goodput_mbps"])
    # Without jitter, the hosts' measured latency still makes seeds differ (launch offsets,
    # turnarounds); with ideal hosts this scenario has no randomness left.
    c, d = ccfair.run(small(starts="1s")), ccfair.run(small(starts="1s", seed=2))
    assert not c.flows["goodput_mbps"].equals(d.flows["goodput_mbps"])
    assert (c.flows["start_s"] == 1.0).all()
    assert (c.flows["syn_sent_s"] > 1.0).all() and not c.flows["syn_sent_s"].equals(
        d.flows["syn_sent_s"]
    )
    ideal = {"app_latency": "none", "host_latency": "none"}
    e = ccfair.run(small(starts="1s", tcp=ideal))
    f = ccfair.run(small(starts="1s", seed=2, tcp=ideal))
    assert e.flows["goodput_mbps"].equals(f.flows["goodput_mbps"])
    assert (e.flows["syn_sent_s"] == 1.0).all()


def test_measured_host_latency_tables_set_the_turnaround():
    """A testbed's measured turnaround tables (tcp.host_latency = {measured = ...}) are
    used by the simulator and recorded in the spec: slower hosts lengthen every RTT
    sample; a bad table is refused naming the option; the kernel backend refuses it."""
    slow = {"measured": {"receiver_us": [400.0] * 17, "sender_us": [300.0] * 17}}
    fast = {"measured": {"receiver_us": [1.0] * 17, "sender_us": [1.0] * 17}}
    a = ccfair.run(small(tcp={"host_latency": slow}), trace=["flow1"])
    b = ccfair.run(small(tcp={"host_latency": fast}), trace=["flow1"])
    # The SYN-ACK is the receiving host's reaction: 399 us later.
    gap_ms = a.flows["handshake_rtt_ms"] - b.flows["handshake_rtt_ms"]
    assert ((gap_ms > 0.39) & (gap_ms < 0.41)).all(), gap_ms.tolist()

    def handshake_ack_turnaround_us(r):
        # The client's final handshake ACK is its reaction to the SYN-ACK.
        t = r.trace
        synack = t[(t.kind == "synack") & (t.event == "arrive")]
        synack = synack[synack.hop == synack.hop.max()].t_ns.iloc[0]
        ack = t[(t.kind == "handshake_ack") & (t.hop == 0) & (t.event == "enqueue")]
        return (ack.t_ns.iloc[0] - synack) / 1e3

    assert handshake_ack_turnaround_us(a) == 300
    assert handshake_ack_turnaround_us(b) == 1
    assert json.loads(a.runs["spec_json"].iloc[0])["tcp"]["host_latency"] == slow
    with pytest.raises(ccfair.SpecError, match="host_latency.*must not decrease"):
        ccfair.run(
            small(
                tcp={
                    "host_latency": {
                        "measured": {"receiver_us": list(range(17, 0, -1)), "sender_us": [1.0] * 17}
                    }
                }
            )
        )
    with pytest.raises(ccfair.SpecError, match="app_latency"):
        ccfair.run(small(tcp={"app_latency": slow}))
    with pytest.raises(ccfair.SpecError, match="host_latency.*kernel backend"):
        kernel_checks.check_scenario(small(tcp={"host_latency": slow}).resolve(), offered=["reno"])


def test_save_and_load_round_trip(tmp_path):
    r = ccfair.run(small())
    r.save(tmp_path)
    assert finished_run_ids(tmp_path) == [r.run_id]
    back = ccfair.load(tmp_path)
    pd.testing.assert_frame_equal(back.flows, r.flows)
    pd.testing.assert_frame_equal(back.timeseries, r.timeseries, check_categorical=False)
    assert not list(tmp_path.rglob("*.tmp")), "no temporary files left behind"
    # One call loads a table of the whole directory.
    assert len(pd.read_parquet(tmp_path / "flows")) == 2


def test_load_rejects_a_directory_without_runs(tmp_path):
    with pytest.raises(ccfair.errors.ResultsError, match="no finished runs"):
        ccfair.load(tmp_path)


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ccfair.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_cli_runs_a_toml_and_writes_parquet(tmp_path):
    out = tmp_path / "res"
    p = cli("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--duration", "3s", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "Jain index" in p.stdout and "goodput_mbps" in p.stdout
    assert len(finished_run_ids(out)) == 1


@pytest.mark.parametrize(
    "toml, path",
    [
        ('duration = "1s"\nbogus = 1\n', "bogus"),
        ('duration = "1s"\n[[links]]\nbetween = ["a", "b"]\nrate = 0\n', "links[0].rate"),
    ],
)
def test_cli_bad_spec_exits_2_with_one_line(tmp_path, toml, path):
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    p = cli("run", str(f))
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and path in lines[0], p.stderr


def test_cli_saves_results_by_default(tmp_path):
    p = cli("run", "--duration", "2s", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert len(finished_run_ids(tmp_path / "results")) == 1
    assert "results/" in p.stdout
    p = cli("run", "--duration", "2s", "--no-save", "--seed", "5", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert len(finished_run_ids(tmp_path / "results")) == 1


def test_cli_bad_argument_exits_2():
    p = cli("run", "--seed", "notanumber")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_cli_check_reports_buffers_in_packets_and_bdp():
    p = cli("check", str(ROOT / "scenarios" / "dumbbell.toml"))
    assert p.returncode == 0, p.stderr
    assert "x BDP" in p.stdout and "pkt" in p.stdout


@pytest.mark.parametrize(
    "module",
    [
        "ccfair",
        "ccfair.execution.runs",
        "ccfair.execution.threads",
        "ccfair.execution.outcome",
        "ccfair.results.run",
        "ccfair.store.directory",
        "ccfair.store.files",
        "ccfair.store.read",
        "ccfair.store.sweep_record",
        "ccfair.spec.sweep",
        "ccfair.spec.grid",
        "ccfair.spec.identity",
        "ccfair.execution.sweeps",
        "ccfair.analysis.stats",
        "ccfair.analysis.models",
        "ccfair.present.style",
        "ccfair.present.timeseries",
        "ccfair.present.views",
        "ccfair.presets",
        "ccfair.limits",
        "ccfair.spec.toml",
        "ccfair.spec.filters",
    ],
)
def test_docstring_examples_run(module, monkeypatch, tmp_path):
    import doctest
    import importlib

    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, extraglobs={"ccfair": ccfair})
    assert result.failed == 0
    assert result.attempted > 0


def test_a_trace_follows_every_packet_of_the_chosen_flows():
    sc = ccfair.parking_lot(2, "cubic", "reno", buffer_bdp=0.5, duration="3s")
    r = ccfair.run(sc, trace=["main"])
    plain = ccfair.run(sc)
    pd.testing.assert_frame_equal(r.flows, plain.flows)  # a trace changes no result
    assert plain.trace is None
    t = r.trace
    assert set(t["flow_name"]) == {"main"}
    main = r.flows.set_index("flow_name").loc["main"]
    data = t[t["kind"] == "data"]
    assert ((data["event"] == "enqueue") & (data["hop"] == 0)).sum() == main["data_sent_pkts"]
    assert data["event"].str.startswith("drop").sum() == main["data_dropped_pkts"]
    # The handshake comes first: SYN at the first hop, at the flow's SYN time.
    first = t.iloc[0]
    assert (first["kind"], first["event"], first["hop"]) == ("syn", "enqueue", 0)
    assert first["t_s"] == main["syn_sent_s"]
    # Positions are bytes of the flow's data, in MSS steps.
    assert (data["seq_bytes"] % 1448 == 0).all() and data["seq_bytes"].min() == 0
    with pytest.raises(ccfair.SpecError, match=r"trace: \"nope\" is not a flow"):
        ccfair.run(sc, trace=["nope"])


def test_a_run_leaves_the_cycle_collector_as_it_found_it(monkeypatch):
    """`ccfair.run` turns Python's cycle collector off while it resolves the spec and builds
    the tables (execution/runs.py, `_gc_paused`), and back on after, also when the spec is
    refused; a collector the caller turned off stays off."""
    import gc

    seen = []
    real_resolve = ccfair.Scenario.resolve
    refuse = False

    def resolve(self, *a, **kw):
        seen.append(gc.isenabled())
        if refuse:
            raise ccfair.SpecError("duration", "1s", "is refused by this test")
        return real_resolve(self, *a, **kw)

    monkeypatch.setattr(ccfair.Scenario, "resolve", resolve)
    assert gc.isenabled()
    ccfair.run(small(duration="1s"))
    assert seen == [False] and gc.isenabled()
    refuse = True
    with pytest.raises(ccfair.SpecError, match="refused by this test"):
        ccfair.run(small(duration="1s"))
    assert seen == [False, False] and gc.isenabled()
    refuse = False
    gc.disable()
    try:
        ccfair.run(small(duration="1s"))
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("scenario", "run_ids", "point"),
    [
        (
            lambda: ccfair.dumbbell(2, "cubic", duration="5s"),
            {"sim": "de9f5b678e52bb7f", "kernel": "0ff309ec628c7645"},
            "02b07f5033f44973",
        ),
        (
            lambda: ccfair.dumbbell(
                3, ["bbr", "cubic", "copa"], duration="5s", tcp={"sack": False}, seed=7
            ),
            {"sim": "01c64501d0612201", "kernel": "ecef47de1b4f6229"},
            "05aef413b21b9a8e",
        ),
    ],
)
def test_run_ids_and_point_keys_stay_what_they_were(scenario, run_ids, point):
    """Finished runs are found by their run id: a change in how it is computed would run
    every finished point again (and lose the kernel's). The values are those since every
    record names its testbed and host kernel (stock Linux hosts became the default; the
    ids of the first computation, e966cb5, held until then: CHANGELOG.md)."""
    from ccfair.spec.identity import point_key, run_id_of

    resolved = scenario().resolve()
    for backend, rid in run_ids.items():
        assert run_id_of(resolved.normalized, backend) == rid
        assert resolved.identity_json.run_id(backend) == rid
    assert point_key(resolved.normalized, "sim") == point
    assert point_key({**resolved.normalized, "seed": 99}, "sim") == point
    row = ccfair.run(resolved.scenario).runs.iloc[0]
    assert (row["run_id"], row["point_key"]) == (run_ids["sim"], point)


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"seed": 1},
        {1: "a", 2: {"b": [1, 2.0, True]}},
        {"seed": 2, "z": {"é": "\u2603", "a": [None, float("inf")]}, "flows": []},
        {"a": {"b": {"c": {"d": [[[]]]}}}, "seed": 0},
    ],
)
def test_run_id_hashes_the_json_it_always_hashed(record):
    """IdentityJson assembles the hashed text field by field; on odd records (no fields,
    integer keys, non-ASCII, infinity, deep nesting) it is still exactly the whole
    `json.dumps(..., sort_keys=True)` of the identity."""
    import hashlib
    import json

    from ccfair.spec.identity import IdentityJson, spec_identity

    ident = spec_identity(record)
    for backend, without in (("sim", None), ("kernel-bpf", "seed")):
        spec = {k: v for k, v in ident.items() if k != without}
        blob = json.dumps({"spec": spec, "backend": backend}, sort_keys=True)
        want = hashlib.sha256(blob.encode()).hexdigest()[:16]
        got = IdentityJson(record)
        assert (got.point_key(backend) if without else got.run_id(backend)) == want
