"""Queue disciplines and ECN end to end on the simulator, through the Python API: what a
scenario with an AQM at the bottleneck produces, in the flows and link tables.

Each test asserts a behaviour that the model's mechanisms produce (marks replace drops when
both ends negotiate ECN; flow queueing isolates a model-based flow from a loss-based one;
the same spec and seed give the same tables bit for bit), not numbers tuned to a figure.
"""

from __future__ import annotations

import ccfair
import numpy as np
import pandas as pd
import pytest
from ccfair.spec.shapes import dumbbell


def bottleneck_ab(run: ccfair.RunResult) -> pd.Series:
    ls = run.link_summary
    return ls[(ls.link_name == "bottleneck") & (ls.direction == "ab")].iloc[0]


def test_codel_with_ecn_marks_instead_of_dropping():
    """Two CUBIC flows whose hosts ask for ECN (tcp.ecn = 1) through CoDel with ecn on, at
    Linux's default limit of 1000 packets: CoDel's decisions become CE marks, the receivers
    see them, the senders reduce once per window of marks, and nothing is lost."""
    sc = dumbbell(
        2, "cubic", bottleneck_queue={"queue": "codel", "ecn": True}, tcp={"ecn": 1}, duration="20s"
    )
    run = ccfair.run(sc)
    f = run.flows
    bn = bottleneck_ab(run)
    assert bn.queue == "codel" and bn.buffer_pkts == 1000
    assert bn.mark_aqm_pkts > 10
    assert bn.drop_aqm_pkts == 0 and bn.drop_queue_pkts == 0
    assert (f.ecn_negotiated == 1).all()
    assert (f.ce_received_pkts > 0).all()
    assert (f.ece_received_pkts > 0).all()
    assert (f.ecn_reduction_count > 0).all()
    # Every CE mark the receivers saw was put there by the bottleneck.
    assert f.ce_received_pkts.sum() <= bn.mark_aqm_pkts
    assert (f.retrans_pkts <= 2).all()
    assert f.goodput_mbps.sum() > 0.9 * 50
    # CoDel holds the standing queue near its 5 ms target (95th percentile of the sojourn).
    assert 4.0 < bn.sojourn_p95_ms < 10.0

    # The same queue without ECN on the hosts: CoDel drops, the flows retransmit.
    plain = ccfair.run(
        dumbbell(2, "cubic", bottleneck_queue={"queue": "codel", "ecn": True}, duration="20s")
    )
    pf = plain.flows
    pbn = bottleneck_ab(plain)
    assert (pf.ecn_negotiated == 0).all() and (pf.ce_received_pkts == 0).all()
    assert pbn.mark_aqm_pkts == 0 and pbn.drop_aqm_pkts > 10
    assert (pf.retrans_pkts > 5).all()


def test_ecn_needs_both_the_queue_and_the_hosts():
    """Hosts that negotiate ECN behind a CoDel without ecn: drops, no marks."""
    run = ccfair.run(dumbbell(2, "cubic", bottleneck_queue="codel", tcp={"ecn": 1}, duration="20s"))
    bn = bottleneck_ab(run)
    assert (run.flows.ecn_negotiated == 1).all()
    assert bn.mark_aqm_pkts == 0 and bn.drop_aqm_pkts > 10
    assert (run.flows.ce_received_pkts == 0).all()


def test_fq_codel_isolates_bbr_from_cubic():
    """At one BDP of drop-tail buffer BBR takes most of the link from CUBIC; fq_codel's flow
    queues with deficit round robin give each about half, whatever the limit."""
    shares = {}
    for queue in ("droptail", "fq_codel"):
        run = ccfair.run(
            dumbbell(2, ["bbr", "cubic"], bottleneck_queue=queue, buffer_bdp=1.0, duration="30s")
        )
        shares[queue] = run.flows.set_index("cca").share_frac
    assert shares["droptail"]["bbr"] > 0.75
    assert abs(shares["fq_codel"]["bbr"] - 0.5) < 0.05
    assert abs(shares["fq_codel"]["cubic"] - 0.5) < 0.05


def test_fq_codel_reports_its_flows_and_pie_its_sojourn():
    run = ccfair.run(dumbbell(4, ["bbr", "cubic"] * 2, bottleneck_queue="fq_codel", duration="10s"))
    bn = bottleneck_ab(run)
    assert bn.queue == "fq_codel" and bn.buffer_pkts == 10240
    assert bn.fq_new_flow_count >= 4
    assert 0 <= bn.fq_shared_flows <= 4
    assert bn.sojourn_p50_ms <= bn.sojourn_p95_ms <= bn.sojourn_p99_ms
    pie = bottleneck_ab(ccfair.run(dumbbell(2, "cubic", bottleneck_queue="pie", duration="20s")))
    # PIE aims at 15 ms of queueing delay: the median sojourn stays well below the 1000
    # packets (240 ms at 50 Mbit/s) a drop-tail queue of that size would hold.
    assert pie.drop_aqm_pkts > 0 and pie.sojourn_p50_ms < 40
    droptail = bottleneck_ab(ccfair.run(dumbbell(2, "cubic", duration="5s")))
    assert np.isnan(droptail.sojourn_p95_ms) and droptail.queue == "droptail"


def test_red_marks_with_ecn_hosts():
    run = ccfair.run(
        dumbbell(
            2,
            "reno",
            bottleneck_queue={"queue": "red", "ecn": True, "min": "30kB", "max": "90kB"},
            buffer_pkts=400,
            tcp={"ecn": 1},
            duration="20s",
        )
    )
    bn = bottleneck_ab(run)
    assert bn.mark_aqm_pkts > 0
    assert (run.flows.ce_received_pkts > 0).all()


@pytest.mark.parametrize(
    "queue",
    [{"queue": "codel", "ecn": True}, "fq_codel", "pie", {"queue": "red", "ecn": True}],
)
def test_same_spec_same_tables_bit_for_bit(queue):
    sc = dumbbell(
        3, ["bbr", "cubic", "reno"], bottleneck_queue=queue, tcp={"ecn": 1}, duration="8s"
    )
    a, b = ccfair.run(sc), ccfair.run(sc)
    for table in ("flows", "link_summary", "timeseries", "links"):
        ta, tb = getattr(a, table), getattr(b, table)
        pd.testing.assert_frame_equal(ta, tb, check_exact=True)


def test_fq_codel_hash_depends_on_the_seed_only():
    """The perturbed hash is drawn from the link's seeded stream: another seed may map flows
    to other queues; the same seed always to the same."""
    sc = dumbbell(8, "cubic", bottleneck_queue={"queue": "fq_codel", "flows": 4}, duration="3s")
    shared = {
        seed: bottleneck_ab(ccfair.run(sc.model_copy(update={"seed": seed}))).fq_shared_flows
        for seed in (1, 2, 3)
    }
    again = bottleneck_ab(ccfair.run(sc.model_copy(update={"seed": 1}))).fq_shared_flows
    assert again == shared[1]
    # Eight flows in four queues: some share, always.
    assert all(v > 0 for v in shared.values())
