"""Scenario specs: units, BDP arithmetic, routing, round trips, builders, engine JSON."""

from __future__ import annotations

import copy
import doctest
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import ccfair.errors
import ccfair.spec.parts
import ccfair.spec.resolve
import ccfair.spec.resolved
import ccfair.spec.scenario
import ccfair.spec.shapes
import ccfair.spec.topology
import ccfair.units
import pytest
from ccfair import _core
from ccfair.errors import SpecError
from ccfair.spec.scenario import Scenario
from ccfair.spec.shapes import dumbbell, parking_lot
from ccfair.spec.topology import Graph, ack_channels, bdp_packets, buffer_packets
from ccfair.units import (
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
SPEC_RS = ROOT / "crates" / "ccfair-sim" / "src" / "spec.rs"

# Always in the Rust registry; other algorithms (cubic, bbr, copa) arrive concurrently.
CCA = "reno"
KNOWN = set(_core.known_ccas())


def small(**overrides):
    """A valid three-link line h1 - s1 - s2 - h2 with one flow, as a dict."""
    d = {
        "duration": "10s",
        "links": [
            {"between": ["h1", "s1"], "rate": "1Gbit/s", "delay": "1ms"},
            {
                "name": "bn",
                "between": ["s1", "s2"],
                "rate": "50Mbit/s",
                "delay": "2ms",
                "buffer": {"bdp": 2.0, "reference": "flow1"},
            },
            {"between": ["s2", "h2"], "rate": "1Gbit/s", "delay": "1ms"},
        ],
        "flows": [{"src": "h1", "dst": "h2", "cca": CCA}],
    }
    d.update(overrides)
    return d


def with_known_ccas(data: dict) -> dict:
    """Replace CCAs this build does not know (yet) by reno, dropping their parameters."""
    data = copy.deepcopy(data)
    for flow in data["flows"]:
        if flow["cca"] not in KNOWN:
            flow["cca"] = CCA
            flow.pop("cca_params", None)
    return data


# ---- units -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, ns",
    [
        ("18ms", 18_000_000),
        ("0.5s", 500_000_000),
        ("2us", 2_000),
        ("2µs", 2_000),
        ("100ns", 100),
        ("1.5 s", 1_500_000_000),
        ("1e-3s", 1_000_000),
        ("2min", 120_000_000_000),
        (60, 60_000_000_000),
        (0.1, 100_000_000),
        ("0.1", 100_000_000),
        ("0s", 0),
    ],
)
def test_parse_duration(text, ns):
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    "text, bps",
    [
        ("50Mbit/s", 50_000_000),
        ("50Mbps", 50_000_000),
        ("1Gbit/s", 1_000_000_000),
        ("100kbit/s", 100_000),
        ("1e6bit/s", 1_000_000),
        ("2.5 Gbps", 2_500_000_000),
        (10_000_000, 10_000_000),
        (1e6, 1_000_000),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    "text, n",
    [("10MB", 10_000_000), ("1MiB", 1_048_576), ("1.5kB", 1500), (1448, 1448), ("3GiB", 3 << 30)],
)
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["", "fast", "5 parsecs", "ms", True, None, [1], "1e", "5Mb/s"])
def test_unparseable_quantities(bad):
    assert parse_duration(bad) is None
    assert parse_rate(bad) is None


@pytest.mark.parametrize("ns", [0, 1, 999, 1000, 1_500_000, 18_000_000, 60 * 10**9, 1_234_567_891])
def test_duration_format_round_trip(ns):
    assert parse_duration(format_duration(ns)) == ns


@pytest.mark.parametrize("bps", [1, 1234, 100_000, 50_000_000, 10**9, 2_500_000_000, 10**12])
def test_rate_format_round_trip(bps):
    assert parse_rate(format_rate(bps)) == bps


@pytest.mark.parametrize("n", [1, 1448, 1500, 10**6, 10**7, 2**20, 3 * 2**30, 10**9 + 1])
def test_size_format_round_trip(n):
    assert parse_size(format_size(n)) == n


def test_formats_are_readable():
    assert format_duration(18_000_000) == "18ms"
    assert format_rate(50_000_000) == "50Mbit/s"
    assert format_size(10_000_000) == "10MB"


# ---- BDP and buffers (docs/experiments.md conventions) ---------------------------------------


def test_bdp_example_of_experiments_md():
    # 50 Mbit/s, D = 2 ms, 1 ms access links: RTT = 2 x (1 + 2 + 1) = 8 ms,
    # BDP = 50e6 x 0.008 / 8 = 50,000 B = 33.33 packets.
    r = dumbbell(2, CCA, bottleneck_delay="2ms", buffer_bdp=1.0).resolve()
    flow1 = r.flow("flow1")
    assert flow1.base_rtt_ns == 8_000_000
    assert flow1.bottleneck_rate_bps == 50_000_000
    assert flow1.bdp_pkts * 1500 == pytest.approx(50_000)
    bn = r.link("bottleneck")
    assert bn.bdp_pkts == pytest.approx(33.333333, rel=1e-6)
    assert bn.buffer_pkts == 33


# alpha x BDP rounded to the nearest packet, over the harada grid.
# D = 2 ms: BDP 33.33; D = 18 ms: RTT 40 ms, BDP 166.67; D = 100 ms: RTT 204 ms, BDP 850.
@pytest.mark.parametrize(
    "delay, alpha, packets",
    [
        ("2ms", 0.5, 17),
        ("2ms", 1.0, 33),
        ("2ms", 2.0, 67),
        ("2ms", 4.0, 133),
        ("2ms", 8.0, 267),
        ("2ms", 16.0, 533),
        ("18ms", 0.5, 83),
        ("18ms", 1.0, 167),
        ("18ms", 2.0, 333),
        ("18ms", 4.0, 667),
        ("18ms", 16.0, 2667),
        ("100ms", 0.5, 425),
        ("100ms", 1.0, 850),
        ("100ms", 16.0, 13600),
    ],
)
def test_dumbbell_buffer_alpha_bdp(delay, alpha, packets):
    r = dumbbell(2, CCA, bottleneck_delay=delay, buffer_bdp=alpha).resolve()
    bn = r.link("bottleneck")
    assert bn.buffer_pkts == packets
    assert bn.buffer_bdp == alpha
    assert r.engine_spec["links"][2]["buffer_pkts"] == packets
    rec = r.normalized["links"][2]
    assert (rec["buffer_pkts"], rec["buffer_bdp"]) == (packets, alpha)
    assert rec["bdp_pkts"] == pytest.approx(bn.bdp_pkts)


def test_ogino_bdp_is_250kB():
    # 50 Mbit/s, round trip 40 ms -> 1 BDP = 250 KB.
    assert float(bdp_packets(50_000_000, 40_000_000)) * 1500 == pytest.approx(250_000)


def test_buffer_rounds_half_up_and_is_at_least_one_packet():
    assert buffer_packets(0.5, bdp_packets(12_000, 10**9)) == 1  # 0.5 -> 1
    assert buffer_packets(1.5, bdp_packets(12_000, 10**9)) == 2  # 1.5 -> 2
    assert buffer_packets(0.001, bdp_packets(50_000_000, 8_000_000)) == 1
    r = Scenario.from_dict(
        small(links=[{**small()["links"][1], "buffer": {"bdp": 1e-6, "reference": "flow1"}}])
        | {"flows": [{"src": "s1", "dst": "s2", "cca": CCA}]}
    ).resolve()
    assert r.links[0].buffer_pkts == 1


def test_packet_buffer_with_reference_records_alpha():
    d = small()
    d["links"][1]["buffer"] = {"packets": 100, "reference": "flow1"}
    r = Scenario.from_dict(d).resolve()
    bn = r.link("bn")
    assert bn.buffer_pkts == 100
    assert bn.buffer_bdp == pytest.approx(3.0)  # 100 / 33.33
    d["links"][1]["buffer"] = 100
    bn = Scenario.from_dict(d).resolve().link("bn")
    assert (bn.buffer_pkts, bn.buffer_bdp, bn.bdp_pkts) == (100, None, None)


def test_default_buffer_is_txqueuelen():
    d = small()
    del d["links"][1]["buffer"]
    assert Scenario.from_dict(d).resolve().link("bn").buffer_pkts == 1000


def test_bdp_uses_min_rate_and_both_directions():
    # Reference flow over an asymmetric path: a slower access link is the bottleneck.
    d = small()
    d["links"][0]["rate"] = "10Mbit/s"
    d["links"][0]["delay"] = "3ms"
    r = Scenario.from_dict(d).resolve()
    f = r.flow("flow1")
    assert f.bottleneck_rate_bps == 10_000_000
    assert f.base_rtt_ns == 2 * (3 + 2 + 1) * 1_000_000
    assert r.link("bn").bdp_pkts == pytest.approx(10e6 * 0.012 / 12000)


# ---- routing --------------------------------------------------------------------------


def test_shortest_path_by_hops_not_delay():
    # a-d is one hop but slow; a-b-c-d is three hops.
    d = {
        "duration": "5s",
        "links": [
            {"between": ["a", "b"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["b", "c"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["c", "d"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["a", "d"], "rate": "1Mbps", "delay": "100ms"},
        ],
        "flows": [{"src": "a", "dst": "d", "cca": CCA}],
    }
    r = Scenario.from_dict(d).resolve()
    assert r.flows[0].node_path == ["a", "d"]
    assert r.flows[0].path == [6]
    assert r.flows[0].ack_path == [7]


def test_shortest_path_ties_follow_link_declaration_order():
    # A square: a-b-d and a-c-d are both two hops.
    links = [
        {"between": ["a", "b"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["a", "c"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["b", "d"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["c", "d"], "rate": "1Gbps", "delay": "1ms"},
    ]
    flows = [{"src": "a", "dst": "d", "cca": CCA}]
    r = Scenario.from_dict({"duration": "5s", "links": links, "flows": flows}).resolve()
    assert r.flows[0].node_path == ["a", "b", "d"]
    swapped = [links[1], links[0], links[3], links[2]]
    r = Scenario.from_dict({"duration": "5s", "links": swapped, "flows": flows}).resolve()
    assert r.flows[0].node_path == ["a", "c", "d"]


def test_explicit_path_overrides_shortest():
    d = {
        "duration": "5s",
        "links": [
            {"between": ["a", "b"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["b", "d"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["a", "d"], "rate": "1Gbps", "delay": "1ms"},
        ],
        "flows": [
            {"src": "a", "dst": "d", "cca": CCA},
            {"src": "a", "dst": "d", "cca": CCA, "path": ["a", "b", "d"]},
            {"src": "d", "dst": "a", "cca": CCA, "path": ["d", "b", "a"]},
        ],
    }
    r = Scenario.from_dict(d).resolve()
    assert r.flows[0].path == [4]
    assert r.flows[1].path == [0, 2]
    assert r.flows[1].ack_path == [3, 1]
    assert r.flows[2].path == [3, 1]  # against the links' a->b orientation
    assert r.flows[2].ack_path == [0, 2]
    assert r.normalized["flows"][1]["path"] == ["a", "b", "d"]


def test_ack_path_is_reversed_channels():
    assert ack_channels([0, 4, 6]) == [7, 5, 1]
    for flow in dumbbell(3, CCA).resolve().flows:
        assert flow.ack_path == [c ^ 1 for c in reversed(flow.path)]


def test_graph_unreachable():
    g = Graph(4, [(0, 1), (2, 3)])
    assert g.shortest_path(0, 3) is None
    assert g.shortest_path(3, 2) == [3, 2]


def test_dumbbell_channels():
    r = dumbbell(2, CCA).resolve()
    # links: 0 h1-s1, 1 h2-s1, 2 bottleneck, 3 s2-h3, 4 s2-h4
    assert r.flow("flow1").path == [0, 4, 6]
    assert r.flow("flow1").ack_path == [7, 5, 1]
    assert r.flow("flow2").path == [2, 4, 8]
    assert r.flow("flow2").ack_path == [9, 5, 3]


def test_parking_lot_2hop_paths_and_channels():
    r = parking_lot(2, CCA, CCA, delay="2ms").resolve()
    names = [link.name for link in r.links]
    assert names == ["L1", "L2", "h1-r1", "h2-r1", "r2-h3", "h4-r2", "r3-h5", "r3-h6"]
    main = r.flow("main")
    assert main.node_path == ["h1", "r1", "r2", "r3", "h6"]
    assert main.path == [4, 0, 2, 14]
    assert main.ack_path == [15, 3, 1, 5]
    c1, c2 = r.flow("cross1"), r.flow("cross2")
    assert c1.node_path == ["h2", "r1", "r2", "h3"] and c1.path == [6, 0, 8]
    assert c2.node_path == ["h4", "r2", "r3", "h5"] and c2.path == [10, 2, 12]
    assert c1.ack_path == [9, 1, 7]
    # each Li's BDP reference is its one-hop cross flow: RTT 8 ms -> 33.33 packets
    for i in (1, 2):
        link = r.link(f"L{i}")
        assert link.reference == f"cross{i}"
        assert link.bdp_pkts == pytest.approx(33.3333333)
        assert link.buffer_pkts == 67
    assert main.base_rtt_ns == 2 * (1 + 2 + 2 + 1) * 1_000_000


def test_parking_lot_10hop_matches_harada():
    r = parking_lot(10, CCA, CCA).resolve()
    assert r.nodes[:22] == [f"h{i}" for i in range(1, 23)]
    assert r.nodes[22:] == [f"r{i}" for i in range(1, 12)]
    main = r.flow("main")
    assert (main.src, main.dst) == ("h1", "h22")
    assert main.node_path == ["h1", *[f"r{i}" for i in range(1, 12)], "h22"]
    bottlenecks = {2 * i for i in range(10)}  # L1..L10 = links 0..9, a->b channels
    assert [c for c in main.path if c < 20] == sorted(bottlenecks)
    assert len(r.flows) == 11
    for i in range(1, 11):
        f = r.flow(f"cross{i}")
        assert (f.src, f.dst) == (f"h{2 * i}", f"h{2 * i + 1}")
        assert [c for c in f.path if c < 20] == [2 * (i - 1)]  # crosses exactly Li
        link = r.link(f"L{i}")
        assert (link.a, link.b) == (f"r{i}", f"r{i + 1}")
        assert link.rate_bps == 50_000_000 and link.delay_ns == 18_000_000
        assert link.buffer_pkts == 333  # 2 x 166.67
    for link in r.links[10:]:
        assert link.rate_bps == 10**9 and link.delay_ns == 10**6


# ---- builders ---------------------------------------------------------------------------


def test_dumbbell_matches_experiments_md():
    sc = dumbbell(2, [CCA, CCA], bottleneck_delay="18ms")
    r = sc.resolve()
    assert r.nodes == ["h1", "h2", "s1", "s2", "h3", "h4"]
    assert [(f.name, f.src, f.dst) for f in r.flows] == [
        ("flow1", "h1", "h3"),
        ("flow2", "h2", "h4"),
    ]
    bn = r.link("bottleneck")
    assert (bn.a, bn.b, bn.rate_bps, bn.delay_ns) == ("s1", "s2", 50_000_000, 18_000_000)
    assert bn.reference == "flow1" and bn.buffer_bdp == 2.0
    for link in r.links:
        if link.name != "bottleneck":
            assert (link.rate_bps, link.delay_ns) == (10**9, 10**6)
    assert sc.duration == 60 * 10**9 and sc.seed == 1
    assert r.engine_spec["measure_start_ns"] == 0
    assert r.engine_spec["measure_end_ns"] == 60 * 10**9


def test_dumbbell_per_flow_arguments():
    sc = dumbbell(
        3,
        CCA,
        access_delay=["1ms", "5ms", "10ms"],
        receiver_delay="2ms",
        starts=[0, "1s", 2.5],
        stops=[None, "50s", None],
        sizes=[None, None, "10MB"],
        buffer_pkts=100,
        seed=4,
        duration="60s",
    )
    r = sc.resolve()
    assert [f.base_rtt_ns for f in r.flows] == [
        2 * (1 + 18 + 2) * 10**6,
        2 * (5 + 18 + 2) * 10**6,
        2 * (10 + 18 + 2) * 10**6,
    ]
    flows = r.engine_spec["flows"]
    assert [f["start_ns"] for f in flows] == [0, 10**9, 2_500_000_000]
    assert [f["stop_ns"] for f in flows] == [None, 50 * 10**9, None]
    assert [f["size_bytes"] for f in flows] == [None, None, 10_000_000]
    bn = r.link("bottleneck")
    assert bn.buffer_pkts == 100
    assert bn.buffer_bdp == pytest.approx(100 / bn.bdp_pkts)
    assert r.engine_spec["seed"] == 4


def test_dumbbell_reference_can_be_changed():
    r = dumbbell(2, CCA, access_delay=["1ms", "9ms"], buffer_reference="flow2").resolve()
    assert r.link("bottleneck").bdp_pkts == pytest.approx(r.flow("flow2").bdp_pkts)


def test_parking_lot_per_hop_ccas_and_starts():
    sc = parking_lot(3, CCA, [CCA, CCA, CCA], cross_starts=["0s", "1s", "2s"], main_start="3s")
    assert [f.start for f in sc.flows] == [3 * 10**9, 0, 10**9, 2 * 10**9]


@pytest.mark.skipif(not {"cubic"} <= KNOWN, reason="cubic not in this build's registry yet")
def test_builder_defaults_use_cubic():
    assert {f.cca for f in dumbbell().flows} == {"cubic"}
    assert {f.cca for f in parking_lot().flows} == {"cubic"}


def test_builder_argument_errors():
    with pytest.raises(SpecError) as e:
        dumbbell(2, [CCA])
    assert e.value.path == "ccas"
    with pytest.raises(SpecError) as e:
        dumbbell(0, CCA)
    assert e.value.path == "n_flows"
    with pytest.raises(SpecError) as e:
        dumbbell(2, CCA, bottleneck_rate="-5Mbit/s")
    assert e.value.path == "bottleneck_rate" and "-5Mbit/s" in str(e.value)
    with pytest.raises(SpecError) as e:
        dumbbell(2, CCA, buffer_bdp=2.0, buffer_pkts=10)
    assert e.value.path == "buffer_pkts"
    with pytest.raises(SpecError) as e:
        parking_lot(2, CCA, [CCA, CCA, CCA])
    assert e.value.path == "cross_cca"
    with pytest.raises(SpecError) as e:
        parking_lot(0)
    assert e.value.path == "hops"


# ---- round trips ------------------------------------------------------------------------


def custom_text():
    return (SCENARIOS / "custom_graph.toml").read_text()


def round_trip_cases():
    return [
        Scenario.from_dict(small()),
        dumbbell(3, CCA, access_delay=["1ms", "2ms", "3ms"], starts=[0, "0.5s", "1s"]),
        parking_lot(2, CCA, CCA, buffer_pkts=50, measure=("10s", "60s"), tcp={"hz": 250}),
        Scenario.from_dict(with_known_ccas(tomllib.loads(custom_text()))),
    ]


@pytest.mark.parametrize("case", range(4))
def test_dict_round_trip(case):
    sc = round_trip_cases()[case]
    again = Scenario.from_dict(sc.to_dict())
    assert again == sc
    assert again.resolve().engine_json == sc.resolve().engine_json
    assert json.loads(json.dumps(sc.to_dict())) == sc.to_dict()


@pytest.mark.parametrize("case", range(4))
def test_toml_round_trip(case):
    sc = round_trip_cases()[case]
    assert Scenario.from_toml_str(sc.to_toml()) == sc


def test_equivalent_spellings_give_the_same_scenario():
    a = Scenario.from_dict(small())
    d = small(duration=10)
    d["links"][1]["rate"] = 50e6
    d["links"][1]["delay"] = 0.002
    d["links"][0]["rate"] = "1000Mbps"
    d["links"][2]["delay"] = "1000us"
    assert Scenario.from_dict(d) == a


def test_to_dict_is_canonical():
    d = Scenario.from_dict(small(duration=10)).to_dict()
    assert d["duration"] == "10s"
    assert d["links"][1]["rate"] == "50Mbit/s"
    assert d["links"][1]["buffer"] == {"bdp": 2.0, "reference": "flow1"}
    assert d["links"][0]["buffer"] == 1000
    assert d["links"][0]["loss"] == 0.0
    assert "stop" not in d["flows"][0] and "tcp" not in d


def test_normalized_record():
    sc = Scenario.from_dict(small())
    n = sc.resolve().normalized
    assert n["name"] == "scenario"
    assert n["seed"] == 1
    assert n["sample_interval"] == "10ms"
    assert n["measure"] == {"start": "0s", "end": "10s"}
    assert n["nodes"] == ["h1", "s1", "s2", "h2"]  # inferred in order of appearance
    assert [link["name"] for link in n["links"]] == ["h1-s1", "bn", "s2-h2"]
    assert n["links"][0]["loss"] == {"forward": 0.0, "reverse": 0.0}
    flow = n["flows"][0]
    assert flow["name"] == "flow1"
    assert flow["path"] == ["h1", "s1", "s2", "h2"]
    assert flow["base_rtt"] == "8ms"
    # Defaults come from the Rust side, not from Python: the default testbed's hosts
    # (stock Linux 6.18) put only their own options on top of the engine's defaults.
    stock = {"rmem": "linux", "wmem": "linux", "tso": "linux", "hz": 250}
    assert flow["tcp"] == json.loads(_core.normalize_tcp(json.dumps(stock)))
    assert {k: v for k, v in flow["tcp"].items() if k not in stock} == {
        k: v for k, v in json.loads(_core.normalize_tcp("{}")).items() if k not in stock
    }
    assert flow["cca_params"] == json.loads(_core.normalize_cca(CCA, "{}"))
    assert (n["testbed"], n["kernel"]) == ("linux-stock", "6.18")
    json.dumps(n)  # JSON-ready
    again = Scenario.from_normalized(n)
    assert again.resolve().engine_json == sc.resolve().engine_json


def test_tcp_defaults_and_per_flow_overrides():
    d = small(tcp={"init_cwnd": 4})
    d["flows"].append({"src": "h2", "dst": "h1", "cca": CCA, "tcp": {"init_cwnd": 20}})
    r = Scenario.from_dict(d).resolve()
    tcp0, tcp1 = (f["tcp"] for f in r.engine_spec["flows"])
    assert tcp0["init_cwnd"] == 4 and tcp1["init_cwnd"] == 20
    assert tcp0["mss"] == tcp1["mss"] == json.loads(_core.normalize_tcp("{}"))["mss"]
    assert r.normalized["tcp"]["init_cwnd"] == 4


def test_every_known_cca_normalises_with_empty_params():
    for name in sorted(KNOWN):
        r = Scenario.from_dict(small(flows=[{"src": "h1", "dst": "h2", "cca": name}])).resolve()
        assert r.engine_spec["flows"][0]["cca"] == name
        assert isinstance(r.engine_spec["flows"][0]["cca_params"], dict)


def test_loss_per_direction():
    d = small()
    d["links"][1]["loss"] = {"forward": 0.01, "reverse": 0.002}
    d["links"][0]["loss"] = 0.05
    links = Scenario.from_dict(d).resolve().engine_spec["links"]
    assert (links[1]["loss_ab"], links[1]["loss_ba"]) == (0.01, 0.002)
    assert (links[0]["loss_ab"], links[0]["loss_ba"]) == (0.05, 0.05)


def test_measure_window():
    r = Scenario.from_dict(small(measure={"start": "2s"})).resolve()
    assert (r.engine_spec["measure_start_ns"], r.engine_spec["measure_end_ns"]) == (
        2 * 10**9,
        10 * 10**9,
    )
    r = Scenario.from_dict(small(measure={"start": "2s", "end": "9s"})).resolve()
    assert r.engine_spec["measure_end_ns"] == 9 * 10**9


def test_nodes_listed_explicitly_keep_their_order():
    r = Scenario.from_dict(small(nodes=["s2", "h2", "s1", "h1", "spare"])).resolve()
    assert r.nodes == ["s2", "h2", "s1", "h1", "spare"]
    link = r.engine_spec["links"][0]
    assert (link["a"], link["b"]) == (3, 2)
    assert r.engine_spec["flows"][0]["src"] == 3


def test_direct_construction():
    from ccfair.spec.parts import Flow, Link

    sc = Scenario(
        duration="5s",
        links=[Link(between=["a", "b"], rate="10Mbps", delay="1ms", buffer=20)],
        flows=[Flow(src="a", dst="b", cca=CCA)],
    )
    assert sc.resolve().engine_spec["links"][0]["buffer_pkts"] == 20
    with pytest.raises(SpecError) as e:
        Link(between=["a", "b"], rate=0, delay="1ms")
    assert e.value.path == "rate"


# ---- the engine's schema -----------------------------------------------------------------


def rust_struct_fields(name: str) -> dict[str, str]:
    """`pub field: Type` lines of a struct in crates/ccfair-sim/src/spec.rs."""
    text = SPEC_RS.read_text()
    m = re.search(rf"pub struct {name} \{{(.*?)\n\}}", text, re.S)
    assert m, name
    return dict(re.findall(r"pub (\w+): ([^,\n]+),", m.group(1)))


def check_like_engine(spec: dict) -> None:
    """RunSpec::check of spec.rs, in Python."""
    assert spec["duration_ns"] > 0 and spec["sample_interval_ns"] > 0
    assert spec["measure_start_ns"] < spec["measure_end_ns"] <= spec["duration_ns"]
    n = len(spec["nodes"])
    links = spec["links"]
    for link in links:
        assert 0 <= link["a"] < n and 0 <= link["b"] < n and link["a"] != link["b"]
        assert link["rate_bps"] > 0 and 1 <= link["buffer_pkts"] < 2**32
        assert 0 <= link["loss_ab"] < 1 and 0 <= link["loss_ba"] < 1

    def ends(ch):
        link = links[ch // 2]
        return (link["a"], link["b"]) if ch % 2 == 0 else (link["b"], link["a"])

    for f in spec["flows"]:
        for key, frm, to in (("path", f["src"], f["dst"]), ("ack_path", f["dst"], f["src"])):
            at = frm
            assert f[key]
            for ch in f[key]:
                s, d = ends(ch)
                assert s == at
                at = d
            assert at == to
        assert f["start_ns"] < spec["duration_ns"]


def engine_specs():
    specs = [
        dumbbell(2, CCA).resolve().engine_spec,
        parking_lot(10, CCA, CCA).resolve().engine_spec,
        Scenario.from_dict(with_known_ccas(tomllib.loads(custom_text()))).resolve().engine_spec,
    ]
    return specs


@pytest.mark.parametrize("which", range(3))
def test_engine_json_matches_rust_structs(which):
    spec = json.loads(json.dumps(engine_specs()[which]))
    run, link, flow, tcp = (
        rust_struct_fields(s) for s in ("RunSpec", "LinkSpec", "FlowSpec", "TcpOptions")
    )
    assert set(spec) == set(run)
    for entry in spec["links"]:
        # `queue` is left out at its default ("droptail"), `qdisc` when there is none, so
        # that run ids stay put.
        assert set(entry) | {"queue", "qdisc"} == set(link) | {"queue", "qdisc"}
    for entry in spec["flows"]:
        assert set(entry) == set(flow)
        assert set(entry["tcp"]) == set(tcp)
    unsigned = re.compile(r"^(u64|u32|usize)$")
    for key, ty in run.items():
        if unsigned.match(ty):
            assert isinstance(spec[key], int) and not isinstance(spec[key], bool)
            assert 0 <= spec[key] < 2**64
    for entry in spec["links"]:
        for key, ty in link.items():
            if unsigned.match(ty):
                assert isinstance(entry[key], int) and entry[key] >= 0, key
            if ty == "f64":
                assert isinstance(entry[key], float), key
    for entry in spec["flows"]:
        for key, ty in flow.items():
            if ty.startswith("Option<"):
                assert entry[key] is None or isinstance(entry[key], int)
            elif ty == "Vec<usize>":
                assert all(isinstance(c, int) for c in entry[key])
    check_like_engine(spec)


def test_engine_json_is_stable_and_compact():
    a = dumbbell(2, CCA).resolve().engine_json
    b = dumbbell(2, CCA).resolve().engine_json
    assert a == b and " " not in a
    assert json.loads(a)["flows"][1]["name"] == "flow2"


# ---- scenario files ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dumbbell", "parking_lot", "custom_graph"])
def test_scenario_files_are_valid(name):
    path = SCENARIOS / f"{name}.toml"
    data = tomllib.loads(path.read_text())
    if {f["cca"] for f in data["flows"]} <= KNOWN:
        sc = Scenario.from_toml(path)
    else:
        sc = Scenario.from_dict(with_known_ccas(data))
    check_like_engine(sc.resolve().engine_spec)


def test_dumbbell_file_equals_builder():
    data = with_known_ccas(tomllib.loads((SCENARIOS / "dumbbell.toml").read_text()))
    from_file = Scenario.from_dict(data).resolve()
    built = dumbbell(2, [f["cca"] for f in data["flows"]], name="harada-dumbbell").resolve()
    assert from_file.engine_json == built.engine_json
    assert from_file.link("bottleneck").buffer_pkts == 333


def test_parking_lot_file_equals_builder():
    data = with_known_ccas(tomllib.loads((SCENARIOS / "parking_lot.toml").read_text()))
    from_file = Scenario.from_dict(data).resolve()
    ccas = [f["cca"] for f in data["flows"]]
    built = parking_lot(2, ccas[0], ccas[1:], name="harada-2hop").resolve()
    assert from_file.engine_json == built.engine_json


def test_custom_graph_file():
    sc = Scenario.from_dict(with_known_ccas(tomllib.loads(custom_text())))
    r = sc.resolve()
    assert r.flow("direct").node_path == ["src", "a", "d", "dst"]
    assert r.flow("detour").node_path == ["src", "a", "b", "c", "d", "dst"]
    assert r.link("short").buffer_pkts == 103  # 20 Mbit/s x 62 ms / 12000 = 103.3
    assert r.link("b-c").buffer_pkts == 133  # 0.5 x 100 Mbit/s x 32 ms / 12000 = 133.3
    assert r.engine_spec["measure_start_ns"] == 5 * 10**9
    assert r.engine_spec["flows"][1]["size_bytes"] == 100_000_000
    assert r.engine_spec["flows"][1]["tcp"]["init_cwnd"] == 10


# ---- command line -----------------------------------------------------------------------


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ccfair", "check", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_valid_file(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text(dumbbell(2, CCA).to_toml())
    out = run_cli(str(path), "--engine")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["links"][2]["name"] == "bottleneck"


@pytest.mark.parametrize(
    "text, needle",
    [
        ('duration = "60s"\nseed = -1\n', "seed: -1"),
        ('duration = "60s"\nrate = 50Mbit/s\n', "line 2"),
    ],
)
def test_cli_bad_file_exits_2_without_traceback(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = run_cli(str(path))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_cli_missing_file(tmp_path):
    out = run_cli(str(tmp_path / "nope.toml"))
    assert out.returncode == 2 and "Traceback" not in out.stderr


# ---- docstring examples -------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        ccfair.units,
        ccfair.errors,
        ccfair.spec.topology,
        ccfair.spec.parts,
        ccfair.spec.scenario,
        ccfair.spec.resolve,
        ccfair.spec.resolved,
        ccfair.spec.shapes,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# ---- docs ------------------------------------------------------------------------------


def test_docs_toml_examples_are_the_scenario_files():
    """Every complete TOML example in docs/spec.md is valid and equals its scenario file."""
    docs = (ROOT / "docs" / "spec.md").read_text()
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", docs, re.S) if "[[flows]]" in b]
    assert len(blocks) == 3
    files = {
        name: Scenario.from_dict(
            with_known_ccas(tomllib.loads((SCENARIOS / f"{name}.toml").read_text()))
        )
        for name in ("dumbbell", "parking_lot", "custom_graph")
    }
    for block in blocks:
        sc = Scenario.from_dict(with_known_ccas(tomllib.loads(block)))
        assert sc in files.values(), sc.name


def test_flows_with_the_same_options_are_normalised_once_each_their_own_copy():
    # Resolution normalises each distinct set of options once (10,000 flows of a dumbbell
    # share one); each flow still gets its own values and its own dicts.
    sc = ccfair.dumbbell(
        3,
        "cubic",
        cca_params=[{"beta": 600}, None, {"beta": 600}],
        tcp={"rmem": [4096, 131072, 6291456]},
    )
    flows = sc.resolve().engine_spec["flows"]
    assert [f["cca_params"]["beta"] for f in flows] == [600, 717, 600]
    flows[0]["cca_params"]["beta"] = 1
    flows[0]["tcp"]["mss"] = 1
    flows[0]["tcp"]["rmem"][2] = 0
    assert flows[2]["cca_params"]["beta"] == 600 and flows[1]["tcp"]["mss"] == 1448
    assert flows[1]["tcp"]["rmem"] == flows[2]["tcp"]["rmem"] != flows[0]["tcp"]["rmem"]
