"""Queue disciplines and ECN on the kernel backend (docs/kernel.md, "Queue disciplines and
ECN").

Without root: each host's ``net.ipv4.tcp_ecn`` serves every flow it sends and receives,
and only real conflicts are refused, naming both flows; the plan writes the sysctls.

Marked ``kernel`` (root, network namespaces, real time; the lead runs them on a quiet
machine): CoDel and fq_codel in ccfair's forwarder on the TUN path, with and without ECN,
and Linux's own qdiscs on the veth path (skipped, naming the qdisc and its CONFIG_ option,
on a kernel without them). Each run lasts 20 s of real time.
"""

from __future__ import annotations

import ccfair
import numpy as np
import pytest
from ccfair.backends.kernel import checks as kernel_checks
from ccfair.backends.kernel import run as kernel_run
from ccfair.backends.kernel import veth
from ccfair.backends.veth import qdisc_available
from ccfair.errors import SpecError
from ccfair.spec.scenario import Scenario

OFFERED = ["reno", "cubic", "bbr"]


def star(flows: list[dict]) -> Scenario:
    """Hosts a, b, c around router r; ``flows`` between them."""
    return Scenario.from_dict(
        {
            "duration": "5s",
            "links": [{"between": [h, "r"], "rate": "100Mbit/s", "delay": "2ms"} for h in "abc"],
            "flows": flows,
        }
    )


def flow(src: str, dst: str, **tcp: int) -> dict:
    return {"src": src, "dst": dst, "cca": "cubic", **({"tcp": tcp} if tcp else {})}


def sysctls_of(sc: Scenario) -> dict[str, dict[str, str]]:
    plan = kernel_run._plan(sc.resolve(), "0" * 16)
    names = sc.resolve().engine_spec["nodes"]
    return {names[h["node"]]: dict(h["sysctls"]) for h in plan.config["hosts"]}


# --------------------------------------------------------------------------------------------
# Each host's net.ipv4.tcp_ecn


def test_each_host_gets_one_tcp_ecn_that_serves_its_flows():
    # a asks (sender ecn = 1) and receives with the default (accept): 1 serves both.
    sc = star([flow("a", "b", ecn=1), flow("c", "a")])
    got = sysctls_of(sc)
    assert got["a"]["net/ipv4/tcp_ecn"] == "1"
    assert got["b"]["net/ipv4/tcp_ecn"] == "2"  # accepts, as Linux's default
    assert got["c"]["net/ipv4/tcp_ecn"] == "2"
    # The sender's fallback follows tcp.ecn_fallback.
    assert got["a"]["net/ipv4/tcp_ecn_fallback"] == "1"
    off = sysctls_of(star([flow("a", "b", ecn=1, ecn_fallback=False)]))
    assert off["a"]["net/ipv4/tcp_ecn_fallback"] == "0"
    # A receiver that refuses, a sender that writes 0: Linux's 0 on both.
    got = sysctls_of(star([flow("a", "b", ecn=0, ecn_receiver=0)]))
    assert (got["a"]["net/ipv4/tcp_ecn"], got["b"]["net/ipv4/tcp_ecn"]) == ("0", "0")
    # A receiver that asks for nothing itself but accepts with 1: 1 (it sends nothing).
    assert sysctls_of(star([flow("a", "b", ecn_receiver=1)]))["b"]["net/ipv4/tcp_ecn"] == "1"
    # A default scenario: every host Linux's default 2.
    assert {v["net/ipv4/tcp_ecn"] for v in sysctls_of(star([flow("a", "b")])).values()} == {"2"}


def test_scenario_level_ecn_is_accepted_on_the_kernel_backend():
    sc = ccfair.dumbbell(
        2, "cubic", bottleneck_queue={"queue": "codel", "ecn": True}, tcp={"ecn": 1}
    )
    kernel_checks.check_scenario(sc.resolve(), offered=OFFERED)
    assert kernel_checks.host_ecn(sc.resolve()) == {0: 1, 1: 1, 4: 2, 5: 2}


@pytest.mark.parametrize(
    ("flows", "path", "words"),
    [
        # One host sends a flow that asks and one that does not.
        (
            [flow("a", "b", ecn=1), flow("a", "c")],
            "flows[1].tcp.ecn",
            ['2 does not ask for ECN on host "a"', "flows[0] asks for ECN"],
        ),
        # One host asks as a sender and refuses as a receiver.
        (
            [flow("a", "b", ecn=1), flow("c", "a", ecn_receiver=0)],
            "flows[1].tcp.ecn_receiver",
            ['0 refuses ECN on host "a"', "flows[0] asks for ECN (flows[0].tcp.ecn = 1)"],
        ),
        # Two flows into one host, one refusing and one accepting.
        (
            [flow("a", "b", ecn_receiver=0), flow("c", "b", ecn_receiver=2)],
            "flows[1].tcp.ecn_receiver",
            ['2 accepts ECN on host "b"', "flows[0] refuses ECN"],
        ),
    ],
)
def test_real_conflicts_are_refused_naming_both_flows(flows, path, words):
    with pytest.raises(SpecError) as e:
        kernel_checks.check_scenario(star(flows).resolve(), offered=OFFERED)
    assert e.value.path == path, str(e.value)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert "net.ipv4.tcp_ecn" in str(e.value)


def test_values_that_serve_together_are_not_conflicts():
    # 0 and 2 both leave a sender without ECN; 1 and 2 both let a receiver accept.
    for flows in (
        [flow("a", "b", ecn=0), flow("a", "c", ecn=2)],
        [flow("a", "b", ecn_receiver=1), flow("c", "b", ecn_receiver=2)],
        [flow("a", "b", ecn=1), flow("b", "a", ecn=1)],
    ):
        kernel_checks.check_scenario(star(flows).resolve(), offered=OFFERED)


def test_queue_disciplines_are_accepted_on_the_tun_path():
    for queue in ("codel", "fq_codel", "pie", "red"):
        sc = ccfair.dumbbell(2, ["bbr", "cubic"], bottleneck_queue=queue)
        kernel_checks.check_scenario(sc.resolve(), offered=OFFERED)
        link = kernel_run._plan(sc.resolve(), "0" * 16).config["spec"]["links"][2]
        assert link["queue"] == queue and link["qdisc"]


# --------------------------------------------------------------------------------------------
# Runs (root, real time)


def run_kernel(sc: Scenario, backend: str = "kernel", attempts: int = 6) -> ccfair.RunResult:
    """A kernel run, run again while its self-checks flag it (as tests/test_kernel.py)."""
    for _ in range(attempts):
        r = ccfair.run(sc, backend=backend)
        if bool(r.runs.iloc[0]["reliable"]):
            break
    return r


def bottleneck(r: ccfair.RunResult):
    ls = r.link_summary
    return ls[(ls.link_name == "bottleneck") & (ls.direction == "ab")].iloc[0]


def codel_dumbbell(ecn: bool, hosts_ecn: bool, duration: str = "20s") -> Scenario:
    return ccfair.dumbbell(
        2,
        "cubic",
        bottleneck_queue={"queue": "codel", "ecn": ecn},
        tcp={"ecn": 1} if hosts_ecn else None,
        duration=duration,
        name="k-codel",
    )


@pytest.mark.kernel
def test_codel_with_ecn_marks_reach_the_receivers_through_the_forwarder(kernel_backend):
    """Two CUBIC flows whose hosts ask for ECN, CoDel with ecn at the bottleneck in ccfair's
    forwarder: the forwarder marks CE in the IP header (checksum updated), the receivers'
    kernels see the marks and echo them, the senders reduce without losses. A mark with a
    bad header checksum would be discarded by the receiver and retransmitted: no
    retransmissions beyond a few means the marked packets arrived whole."""
    sc = codel_dumbbell(ecn=True, hosts_ecn=True)
    r = run_kernel(sc)
    f = r.flows
    bn = bottleneck(r)
    assert bn.queue == "codel" and bn.buffer_pkts == 1000
    assert (f.ecn_negotiated == 1).all(), f.ecn_negotiated.tolist()
    assert bn.mark_aqm_pkts > 10, bn.mark_aqm_pkts
    assert bn.drop_aqm_pkts == 0 and bn.drop_queue_pkts == 0
    # Linux 6.18 counts the CE marks a socket received (tcpi_received_ce); older kernels
    # leave the column NaN.
    ce = f.ce_received_pkts.to_numpy()
    assert np.isnan(ce).all() or ((ce > 0).all() and ce.sum() <= bn.mark_aqm_pkts * 1.05), ce
    assert (f.retrans_pkts <= 2 + 0.05 * bn.mark_aqm_pkts).all(), f.retrans_pkts.tolist()
    assert f.goodput_mbps.sum() > 0.9 * 50 * 1448 / 1500
    # CoDel holds the standing queue near its 5 ms target, as on the simulator.
    sim = bottleneck(ccfair.run(sc))
    assert 3.0 < bn.sojourn_p95_ms < 12.0, bn.sojourn_p95_ms
    assert abs(bn.sojourn_p95_ms - sim.sojourn_p95_ms) <= 0.3 * sim.sojourn_p95_ms, (
        bn.sojourn_p95_ms,
        sim.sojourn_p95_ms,
    )


@pytest.mark.kernel
def test_codel_without_ecn_on_the_hosts_drops(kernel_backend):
    """The same CoDel (ecn on) with stock hosts (tcp_ecn 2 on both: nobody asks): no ECN
    is negotiated, CoDel drops and the flows retransmit."""
    r = run_kernel(codel_dumbbell(ecn=True, hosts_ecn=False))
    f = r.flows
    bn = bottleneck(r)
    assert (f.ecn_negotiated == 0).all()
    assert bn.mark_aqm_pkts == 0 and bn.drop_aqm_pkts > 10
    assert (f.retrans_pkts > 0).all()
    ce = f.ce_received_pkts.to_numpy()
    assert np.isnan(ce).all() or (ce == 0).all()


@pytest.mark.parametrize("ecn", [False, True], ids=["drops", "ecn"])
@pytest.mark.kernel
def test_fq_codel_in_the_forwarder_isolates_bbr_from_cubic(kernel_backend, ecn):
    """BBR against CUBIC at one BDP: fq_codel gives each about half, as on the simulator
    (where a drop-tail queue gives BBR more than 0.75); with ECN on the hosts fq_codel's
    CoDel marks CUBIC's packets instead of dropping them."""
    sc = ccfair.dumbbell(
        2,
        ["bbr", "cubic"],
        bottleneck_queue="fq_codel",
        buffer_bdp=1.0,
        tcp={"ecn": 1} if ecn else None,
        duration="20s",
        name="k-fq",
    )
    r = run_kernel(sc)
    shares = r.flows.set_index("cca").share_frac
    assert abs(shares["bbr"] - 0.5) < 0.1, shares.to_dict()
    bn = bottleneck(r)
    assert bn.queue == "fq_codel" and bn.fq_new_flow_count >= 2
    assert np.isfinite(bn.sojourn_p95_ms)
    if ecn:
        assert (r.flows.ecn_negotiated == 1).all()
        assert bn.mark_aqm_pkts > 0
        cubic = r.flows.set_index("cca").loc["cubic"]
        assert cubic.retrans_pkts <= 2 + 0.05 * bn.mark_aqm_pkts
    else:
        assert (r.flows.ecn_negotiated == 0).all() and bn.mark_aqm_pkts == 0


@pytest.fixture
def needs_qdisc(kernel_backend):
    """Skip, naming the qdisc and its CONFIG_ option, on a kernel without it (the probe
    creates a namespace, so only a test that runs the kernel backend asks)."""

    def need(*kinds: str) -> None:
        for kind in kinds:
            if not qdisc_available(kind):
                pytest.skip(f"{veth.qdisc_missing(kind)}: run on a kernel with {kind}")

    return need


@pytest.mark.kernel
def test_linuxs_codel_with_ecn_on_the_veth_path(kernel_backend, needs_qdisc):
    """Linux's own codel (tc) on the veth path, with ECN on the hosts: marks, no drops,
    tc's counters in the link summary, and the sojourn left NaN (tc keeps none)."""
    needs_qdisc("netem", "codel")
    r = run_kernel(codel_dumbbell(ecn=True, hosts_ecn=True), backend="veth")
    bn = bottleneck(r)
    assert (r.flows.ecn_negotiated == 1).all()
    assert bn.mark_aqm_pkts > 10 and bn.drop_aqm_pkts == 0
    assert np.isnan(bn.sojourn_p95_ms)
    assert (r.flows.retrans_pkts <= 2 + 0.05 * bn.mark_aqm_pkts).all()


@pytest.mark.kernel
def test_linuxs_fq_codel_isolates_bbr_from_cubic_on_the_veth_path(kernel_backend, needs_qdisc):
    needs_qdisc("netem", "fq_codel")
    sc = ccfair.dumbbell(
        2, ["bbr", "cubic"], bottleneck_queue="fq_codel", buffer_bdp=1.0, duration="20s"
    )
    r = run_kernel(sc, backend="veth")
    shares = r.flows.set_index("cca").share_frac
    assert abs(shares["bbr"] - 0.5) < 0.1, shares.to_dict()
    bn = bottleneck(r)
    assert bn.queue == "fq_codel" and bn.fq_new_flow_count >= 2
