"""The kernel backend's veth data path (python/ccfair/backends/kernel/veth.py, docs/kernel.md).

The plan (namespaces, devices, routes, qdiscs) is tested without root. Runs are marked
``kernel``: they need root and network namespaces, like the TUN path's. Links with a delay,
random loss or a netem queue need the netem qdisc; on a kernel without it (the project's
CI machine) those tests are skipped with ``ccfair.backends.kernel.veth.NETEM_MISSING`` as the
reason, and ``docs/kernel.md`` says how to run them where netem exists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import ccfair
import pytest
from ccfair.backends.kernel import host as kernel_host
from ccfair.backends.kernel import run as kernel_run
from ccfair.backends.kernel import veth
from ccfair.backends.veth import netem_available
from ccfair.errors import SpecError
from ccfair.spec.identity import run_id_of
from ccfair.spec.scenario import Scenario
from kernel_runs import reliable_run

#: Payload share of a 1500-byte packet: the goodput ceiling is rate x 1448 / 1500.
PAYLOAD = 1448 / 1500


def zero_delay(n: int = 2, cca: str = "cubic", buffer_pkts: int = 30, **kw) -> Scenario:
    """A dumbbell without propagation delay: the veth path runs it without netem."""
    return ccfair.dumbbell(
        n,
        cca,
        bottleneck_rate="20Mbit/s",
        bottleneck_delay="0ms",
        access_delay="0ms",
        receiver_delay="0ms",
        buffer_pkts=buffer_pkts,
        duration=kw.pop("duration", "6s"),
        **kw,
    )


def planned(sc: Scenario, tag: str = "0a1b2c3d") -> veth.VethPlan:
    resolved = sc.resolve()
    hosts = kernel_run._plan(resolved, tag + "00000000").hosts
    return veth.plan(resolved.engine_spec, tag, hosts)


# --------------------------------------------------------------------------------------------
# The plan


def test_every_node_is_a_namespace_and_every_link_a_veth_pair_within_name_limits():
    sc = ccfair.dumbbell(3, "cubic")
    p = planned(sc)
    nodes = sc.resolve().engine_spec["nodes"]
    assert sorted(p.netns) == list(range(len(nodes)))
    assert all(kernel_host.NETNS_RE.match(ns) for ns in p.netns.values())
    assert len(p.routers) == 2 and all(ns.endswith(("-s1", "-s2")) for ns in p.routers)
    assert len(p.pairs) == len(sc.resolve().engine_spec["links"])
    assert all(len(d) <= 15 for a, _, b, _ in p.pairs for d in (a, b))
    assert len(p.channels) == 2 * len(p.pairs)


def test_routes_follow_each_flows_data_and_ack_paths_by_destination_host():
    sc = ccfair.dumbbell(2, "cubic")
    p = planned(sc)
    spec = sc.resolve().engine_spec
    s1 = p.netns[spec["nodes"].index("s1")]
    routes = [line for line in p.ip[s1] if line.startswith("route add")]
    # s1 reaches both receivers over the bottleneck (link 2, end a -> b at 10.201.0.5) and
    # both senders directly.
    assert "route add 10.200.0.3/32 via 10.201.0.5 dev cv0a1b2c3d2a" in routes
    assert "route add 10.200.0.4/32 via 10.201.0.5 dev cv0a1b2c3d2a" in routes
    assert len(routes) == 4
    # Only the routers forward.
    assert ("net/ipv4/ip_forward", "1") in p.sysctls[s1]
    h1 = p.netns[spec["nodes"].index("h1")]
    assert ("net/ipv4/ip_forward", "1") not in p.sysctls[h1]


def test_a_route_option_of_the_spec_goes_on_the_senders_routes():
    sc = ccfair.dumbbell(1, "cubic", tcp={"init_cwnd": 20})
    p = planned(sc)
    h1 = p.netns[sc.resolve().engine_spec["nodes"].index("h1")]
    (route,) = [line for line in p.ip[h1] if line.startswith("route add")]
    assert route.endswith("initcwnd 20"), route


def test_droptail_links_are_htb_with_a_pfifo_and_a_delay_stage_above_only_with_delay():
    p = planned(zero_delay())
    tc = [line for lines in p.tc.values() for line in lines]
    assert not any("netem" in line for line in tc)
    assert any("pfifo limit 30" in line for line in tc)
    p = planned(ccfair.dumbbell(2, "cubic", bottleneck_delay="18ms", buffer_pkts=40))
    bott = [line for lines in p.tc.values() for line in lines if "cv0a1b2c3d2a" in line]
    assert bott[0].startswith("qdisc add dev cv0a1b2c3d2a root handle 5: stab overhead -14 netem")
    assert "delay 18000us limit 1000000" in bott[0]
    assert "rate 50000000bit" in bott[2] and bott[3].endswith("pfifo limit 40")


def test_a_netem_queue_is_mininets_tclink_htb_then_netem_holding_delay_and_limit():
    sc = Scenario.from_dict(
        {
            **ccfair.dumbbell(2, "cubic", bottleneck_delay="30ms", buffer_pkts=25).to_dict(),
            "testbed": "mininet-netem",
        }
    )
    p = planned(sc)
    bott = [line for lines in p.tc.values() for line in lines if "cv0a1b2c3d2a" in line]
    assert bott == [
        "qdisc add dev cv0a1b2c3d2a root handle 1: stab overhead -14 htb default 1",
        "class add dev cv0a1b2c3d2a parent 1: classid 1:1 htb rate 50000000bit ceil "
        "50000000bit quantum 1514",
        "qdisc add dev cv0a1b2c3d2a parent 1:1 handle 10: netem delay 30000us limit 25",
    ]


def test_the_veth_path_refuses_what_it_cannot_run_naming_the_field():
    with pytest.raises(SpecError, match=r'links\[0\]\.delay: "1ms" needs netem'):
        veth.check_scenario(ccfair.dumbbell(1, "reno").resolve(), netem=False)
    lossy = ccfair.dumbbell(1, "reno", bottleneck_loss=0.01).resolve()
    with pytest.raises(SpecError, match=r"links\[1\]\.loss: 0.01 random loss on a drop-tail"):
        veth.check_scenario(lossy, netem=True)
    plain = zero_delay(1).resolve()
    traced = {**plain.engine_spec, "trace_flows": [0]}
    with pytest.raises(SpecError, match="trace.*not available on the veth data path"):
        veth.check_scenario(plain, netem=False, engine_spec=traced)
    veth.check_scenario(zero_delay().resolve(), netem=False)  # nothing to refuse


def bottleneck_lines(sc: Scenario) -> list[str]:
    p = planned(sc)
    return [line for lines in p.tc.values() for line in lines if "cv0a1b2c3d2a" in line]


def test_a_queue_discipline_is_linuxs_own_qdisc_with_the_links_options():
    sc = ccfair.dumbbell(
        2,
        "cubic",
        bottleneck_delay="18ms",
        bottleneck_queue={"queue": "codel", "ecn": True, "target": "4ms"},
    )
    bott = bottleneck_lines(sc)
    assert bott[0].startswith("qdisc add dev cv0a1b2c3d2a root handle 5: stab overhead -14 netem")
    assert bott[3] == (
        "qdisc add dev cv0a1b2c3d2a parent 1:1 handle 10: codel limit 1000 target 4000us "
        "interval 100000us ecn"
    )
    fq = bottleneck_lines(
        zero_delay(bottleneck_queue={"queue": "fq_codel", "ce_threshold": "1ms", "flows": 64})
    )
    assert fq[-1].endswith(
        "handle 10: fq_codel limit 30 flows 64 target 5000us interval 100000us quantum 1514 "
        "memory_limit 33554432 drop_batch 64 ecn ce_threshold 1000us"
    )
    pie = bottleneck_lines(zero_delay(bottleneck_queue={"queue": "pie", "alpha": 4}))
    assert pie[-1].endswith(
        "handle 10: pie limit 30 target 15000us tupdate 15000us alpha 4 beta 20 noecn "
        "nobytemode no_dq_rate_estimator"
    )
    # RED: tc's byte limit from the buffer, the link's rate as its bandwidth, the
    # thresholds left to tc unless set (it computes the simulator's defaults).
    red = bottleneck_lines(zero_delay(bottleneck_queue={"queue": "red", "ecn": True}))
    assert red[-1].endswith(
        "handle 10: red limit 45000 avpkt 1000 probability 0.02 bandwidth 20000000bit ecn"
    )
    red = bottleneck_lines(
        zero_delay(bottleneck_queue={"queue": "red", "min": "9kB", "max": "27kB", "burst": 20})
    )
    assert "red limit 45000 min 9000 max 27000 avpkt 1000 burst 20 probability" in red[-1]


def test_a_queue_discipline_the_kernel_lacks_is_refused_by_name():
    sc = zero_delay(bottleneck_queue="fq_codel").resolve()
    with pytest.raises(SpecError) as e:
        veth.check_scenario(sc, netem=False, have_qdisc=lambda kind: kind != "fq_codel")
    assert e.value.path == "links[2].queue"
    assert "this kernel has no fq_codel qdisc (CONFIG_NET_SCH_FQ_CODEL)" in str(e.value)
    assert 'backend = "kernel"' in str(e.value)
    veth.check_scenario(sc, netem=False, have_qdisc=lambda kind: True)
    # Options of ccfair's disciplines that tc cannot set.
    for queue, bad, path in (
        ({"queue": "fq_codel", "hash": "per_flow"}, "per_flow", "links[2].qdisc.hash"),
        ({"queue": "codel", "mtu": 9014}, 9014, "links[2].qdisc.mtu"),
        ({"queue": "pie", "burst_allowance": "0s"}, 0, "links[2].qdisc.burst_allowance"),
    ):
        with pytest.raises(SpecError) as e:
            veth.check_scenario(zero_delay(bottleneck_queue=queue).resolve(), netem=False)
        assert e.value.path == path and e.value.value == bad, str(e.value)
        assert "cannot be set on Linux's" in str(e.value)
    lossy = zero_delay(bottleneck_queue="codel", bottleneck_loss=0.01).resolve()
    with pytest.raises(SpecError, match=r"links\[2\]\.loss: 0.01 random loss on a codel link"):
        veth.check_scenario(lossy, netem=True)


def test_a_queue_disciplines_statistics_split_its_drops_and_count_its_marks():
    # tc -s -j qdisc show: fq_codel at handle 10: under HTB (tc's q_fq_codel.c xstats).
    qdiscs = [
        {
            "kind": "htb",
            "handle": "1:",
            "root": True,
            "packets": 900,
            "bytes": 1350000,
            "drops": 0,
            "qlen": 0,
        },
        {
            "kind": "fq_codel",
            "handle": "10:",
            "parent": "1:1",
            "packets": 900,
            "bytes": 1350000,
            "drops": 30,
            "qlen": 2,
            "maxpacket": 1514,
            "drop_overlimit": 4,
            "new_flow_count": 7,
            "ecn_mark": 12,
            "ce_mark": 3,
            "drop_overmemory": 1,
        },
    ]
    c = veth.counts_of(qdiscs)
    assert (c["drops"], c["limit_drops"], c["marks"], c["ce_marks"]) == (30, 4, 12, 3)
    assert (c["new_flows"], c["overmemory_drops"]) == (7, 1)
    red = veth.counts_of(
        [
            {
                "kind": "red",
                "handle": "10:",
                "root": True,
                "packets": 10,
                "bytes": 1,
                "drops": 5,
                "qlen": 0,
                "marked": 6,
                "early": 3,
                "pdrop": 2,
            }
        ]
    )
    assert (red["limit_drops"], red["marks"], red["new_flows"]) == (2, 6, -1)
    spec = zero_delay(1, bottleneck_queue="fq_codel").resolve().engine_spec
    counts = [veth.counts_of([])] * 6
    counts[2] = c
    raw: dict = {}
    veth.fill_link_summary(raw, counts, spec)
    import numpy as np

    def col(name: str, dtype: str) -> list:
        return list(np.frombuffer(raw[name][1], dtype=dtype))

    assert col("drop_queue_pkts", "<u8")[2] == 4
    assert col("drop_aqm_pkts", "<u8")[2] == 26
    assert col("mark_aqm_pkts", "<u8")[2] == 12
    assert col("mark_ce_threshold_pkts", "<u8")[2] == 3
    assert col("fq_new_flow_count", "<f8")[2] == 7
    assert col("fq_drop_overmemory_pkts", "<f8")[2] == 1
    assert np.isnan(col("fq_new_flow_count", "<f8")[0])  # an access link: drop-tail
    assert col("arrival_pkts", "<u8")[2] == 900 + 30 + 2


def test_flows_needing_two_routes_to_one_host_from_one_node_are_refused():
    spec = zero_delay(1).resolve().engine_spec
    # A second flow to the same receiver whose data path leaves h1 over another link:
    # give flow 1 a copy of flow 0 whose path starts on link 1 (h2's access link) reversed.
    f = dict(spec["flows"][0])
    f["path"] = [3] + f["path"][1:]  # channel 3 = link 1 b -> a: leaves s1 towards h2
    bad = {**spec, "flows": [spec["flows"][0], f]}
    with pytest.raises(SpecError, match=r"flows\[1\]\.path.*routes by destination host"):
        veth._routes(bad)


def test_a_zero_delay_path_with_a_bdp_buffer_is_a_clear_error_and_packets_still_work():
    with pytest.raises(SpecError, match=r"buffer.*BDP, which is 0 packets.*in packets"):
        ccfair.dumbbell(
            1,
            "reno",
            bottleneck_delay="0ms",
            access_delay="0ms",
            receiver_delay="0ms",
            buffer_bdp=1.0,
        )
    assert zero_delay().resolve().links[2].buffer_bdp is None


def test_qdisc_counts_fill_the_link_summary_over_the_run():
    raw: dict = {}
    spec = zero_delay(1).resolve().engine_spec
    counts = [{"tx_pkts": 10, "tx_bytes": 15000, "drops": 0, "backlog_pkts": 0}] * 6
    # Channel 2: link 1 (the bottleneck) a -> b.
    counts[2] = {"tx_pkts": 90, "tx_bytes": 135000, "drops": 10, "backlog_pkts": 0}
    veth.fill_link_summary(raw, counts, spec)
    import numpy as np

    loss = np.frombuffer(raw["loss_frac"][1], dtype="<f8")
    assert loss[2] == pytest.approx(0.1) and loss[0] == 0
    util = np.frombuffer(raw["utilisation_frac"][1], dtype="<f8")
    assert util[2] == pytest.approx(135000 * 8 / (20e6 * 6))
    assert util[0] == pytest.approx(15000 * 8 / (1e9 * 6))
    assert list(np.frombuffer(raw["arrival_pkts"][1], dtype="<u8")) == [10, 10, 100, 10, 10, 10]


# --------------------------------------------------------------------------------------------
# Runs (root)


def assert_nothing_left(sc: Scenario) -> None:
    tag = run_id_of(sc.resolve().normalized, "veth")[:8]
    assert [n for n in kernel_host.list_netns() if n.startswith(f"ccf-{tag}-")] == []
    assert not (kernel_host.STATE_DIR / f"{tag}.json").exists()


@pytest.mark.kernel
def test_two_flows_over_veth_share_the_htb_rate_and_the_pfifo_drops(kernel_backend):
    """Two CUBIC flows, 20 Mbit/s, a 30-packet pfifo, no delay: the goodput ceiling is
    reached, the bottleneck's queue drops, its byte counts are of IP packets, every
    namespace is removed."""
    sc = zero_delay()
    r = reliable_run(sc, backend="veth")
    run = r.runs.iloc[0]
    assert run["backend"] == "veth" and bool(run["reliable"]), run["selfcheck_flags"]
    assert r.format_selfcheck().startswith("self-check ok: kernel-forwarded packets")
    total = r.flows["goodput_mbps"].sum()
    assert total >= 0.9 * 20 * PAYLOAD, total
    assert total <= 1.01 * 20 * PAYLOAD, total
    bott = r.link_summary.query("link_name == 'bottleneck' and direction == 'ab'").iloc[0]
    assert bott["drop_queue_pkts"] > 0
    # IP bytes (the size table removes the Ethernet header); the SYN and FIN are smaller.
    assert 1490 <= bott["tx_bytes"] / bott["tx_pkts"] <= 1500
    assert bott["utilisation_frac"] >= 0.85
    # What both ends' tcp_info counted: every data segment sent was received or dropped.
    f = r.flows
    assert (f["data_received_pkts"] <= f["data_sent_pkts"]).all()
    assert (f["retrans_pkts"] > 0).all()  # a 30-packet queue overflows
    # Sampled every 10 ms (a busy machine may skip a point; the self-checks count it).
    assert len(r.timeseries) >= 0.99 * 2 * 600
    # The queue is the only delay: srtt well above the ~0.1 ms of the empty path. The flow
    # whose handshake meets the empty path measures that path; the other's SYN can queue
    # behind the first one's initial burst if it leaves a few ms later (one CI run's flow
    # measured 7.6 ms), and with no BDP to speak of the queue never drains below it again.
    assert r.flows["rtt_min_ms"].min() < 1.0
    assert r.flows["rtt_mean_ms"].min() > 5.0
    assert_nothing_left(sc)


@pytest.fixture
def needs_netem(kernel_backend) -> None:
    """Skip, naming what is missing, on a kernel without netem. A fixture, not a mark: the
    probe creates a namespace, which only tests that run the kernel backend may do."""
    if not netem_available():
        pytest.skip(f"{veth.NETEM_MISSING}: run on a kernel with netem")


@pytest.mark.kernel
def test_a_netem_limit_counts_the_delay_line_closed_form(kernel_backend, needs_netem):
    """netem holding delay and queue (Mininet's TCLink): with a limit of 10 packets and a
    one-way delay of 40 ms at 20 Mbit/s (66.7 packets in the delay line), at most 10
    packets are ever held, so one flow's goodput is capped at 10 x 1448 B / 40 ms =
    2.9 Mbit/s, whatever the rate; the simulator's netem queue gives the same cap."""
    base = ccfair.dumbbell(
        1,
        "cubic",
        bottleneck_rate="20Mbit/s",
        bottleneck_delay="40ms",
        access_delay="0ms",
        receiver_delay="0ms",
        buffer_pkts=10,
        duration="20s",
    ).to_dict()
    links = [dict(link) for link in base["links"]]
    for link in links:
        if link["name"] == "bottleneck":
            link["queue"] = "netem"
    sc = Scenario.from_dict({**base, "links": links})
    cap = 10 * 1448 * 8 / 0.040 / 1e6
    sim = ccfair.run(sc).flows.iloc[0]["goodput_mbps"]
    real = reliable_run(sc, backend="veth").flows.iloc[0]["goodput_mbps"]
    assert sim <= cap * 1.02 and real <= cap * 1.05, (sim, real, cap)
    assert real >= 0.5 * cap, (real, cap)
    assert_nothing_left(sc)


@pytest.mark.kernel
def test_droptail_with_delay_matches_the_simulator_on_one_flow(kernel_backend, needs_netem):
    """A drop-tail link with a netem delay stage: one CUBIC flow at 20 Mbit/s, RTT 40 ms,
    1 BDP fills the link and sees the propagation RTT, as on the simulator."""
    sc = ccfair.dumbbell(
        1,
        "cubic",
        bottleneck_rate="20Mbit/s",
        bottleneck_delay="18ms",
        buffer_bdp=1.0,
        duration="15s",
    )
    r = reliable_run(sc, backend="veth")
    f = r.flows.iloc[0]
    assert f["goodput_mbps"] >= 0.95 * 20 * PAYLOAD
    assert abs(f["rtt_min_ms"] - 40) <= 1.5, f["rtt_min_ms"]
    assert_nothing_left(sc)


def start_veth_run(sc: Scenario, tmp_path) -> tuple[subprocess.Popen[str], str]:
    """Start `ccfair run --backend veth`; return once its first sender thread runs."""
    f = tmp_path / "run.toml"
    f.write_text(sc.to_toml())
    tag = run_id_of(sc.resolve().normalized, "veth")[:8]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    p = subprocess.Popen(
        [sys.executable, "-m", "ccfair", "run", str(f), "--backend", "veth"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # As from a terminal (a background job of a shell without job control has SIGINT
        # ignored, and this test sends SIGINT).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if p.poll() is not None:
            pytest.fail(f"the run ended early: {p.communicate()}")
        names = {c.read_text().strip() for c in Path(f"/proc/{p.pid}/task").glob("*/comm")}
        if f"ccf{tag}-s0" in names:
            return p, tag
        time.sleep(0.05)
    p.kill()
    pytest.fail("the run's sender thread did not appear within 15 s")


@pytest.mark.kernel
def test_ctrl_c_and_a_crash_leave_no_router_namespace_or_veth_behind(kernel_backend, tmp_path):
    """While a veth run runs, its hosts and routers are ccfair namespaces recorded in its
    state file, with veth devices and qdiscs; Ctrl-C removes them all; after SIGKILL
    `ccfair cleanup` does (the veth devices die with their namespaces)."""
    sc = zero_delay(duration="30s")
    p, tag = start_veth_run(sc, tmp_path)
    names = [n for n in kernel_host.list_netns() if n.startswith(f"ccf-{tag}-")]
    assert len(names) == 6 and all(kernel_host.NETNS_RE.match(n) for n in names)
    state = json.loads((kernel_host.STATE_DIR / f"{tag}.json").read_text())
    assert sorted(state["netns"]) == sorted(names)
    router = next(n for n in names if n.endswith("-s1"))
    links = subprocess.run(["ip", "-n", router, "-j", "link"], capture_output=True, text=True)
    devs = {d["ifname"] for d in json.loads(links.stdout)} - {"lo"}
    assert len(devs) == 3 and all(d.startswith(f"cv{tag}") for d in devs)
    qd = subprocess.run(["tc", "-n", router, "qdisc"], capture_output=True, text=True).stdout
    assert "pfifo" in qd and "htb" in qd
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGINT and "Traceback" not in err, err
    assert_nothing_left(sc)

    p, tag = start_veth_run(sc, tmp_path)
    p.kill()
    p.wait(timeout=10)
    assert len([n for n in kernel_host.list_netns() if n.startswith(f"ccf-{tag}-")]) == 6
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "cleanup"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")},
    )
    assert out.returncode == 0 and f"ccf-{tag}-5-s2" in out.stdout, out
    assert_nothing_left(sc)
