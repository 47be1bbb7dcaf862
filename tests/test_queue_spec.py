"""Queue disciplines in specs: a link's ``queue`` and ``qdisc`` table with units, Linux's
defaults and limits, errors naming ``links[i].qdisc.<option>`` with the value as written, the
normalised record (run ids of links without a discipline unchanged), the builders'
``bottleneck_queue`` and the sweep axis of that name."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from ccfair import _core
from ccfair.errors import SpecError
from ccfair.spec import queues
from ccfair.spec.scenario import Scenario
from ccfair.spec.shapes import dumbbell, parking_lot
from ccfair.spec.sweep import Sweep


def line(**link: Any) -> dict[str, Any]:
    """a - b - c, one flow a -> c; ``link`` edits the link b - c."""
    return {
        "duration": "10s",
        "links": [
            {"between": ["a", "b"], "rate": "1Gbit/s", "delay": "1ms"},
            {"between": ["b", "c"], "rate": "10Mbit/s", "delay": "5ms", **link},
        ],
        "flows": [{"src": "a", "dst": "c", "cca": "reno"}],
    }


def engine_link(**link: Any) -> dict[str, Any]:
    return Scenario.from_dict(line(**link)).resolve().engine_spec["links"][1]


# ---- the spec's names and units map onto the engine's --------------------------------------


def test_every_engine_parameter_has_a_spec_name_without_its_unit():
    meta = json.loads(_core.qdiscs())
    assert sorted(meta) == sorted(queues.DISCIPLINES)
    for queue, entry in meta.items():
        names = [p.name for p in queues.params(queue)]
        assert len(set(names)) == len(names)
        assert [p.engine for p in queues.params(queue)] == [p["name"] for p in entry["params"]]
        for p in queues.params(queue):
            assert not p.name.endswith(("_ns", "_bytes", "_bps", "_pkts", "_16ths")), p
    assert [p.name for p in queues.params("fq_codel")] == [
        "target",
        "interval",
        "ecn",
        "ce_threshold",
        "flows",
        "quantum",
        "memory_limit",
        "drop_batch",
        "mtu",
        "hash",
    ]


@pytest.mark.parametrize(
    ("queue", "written", "engine_key", "engine_value"),
    [
        ("codel", {"target": "10ms"}, "target_ns", 10_000_000),
        ("codel", {"interval": 0.2}, "interval_ns", 200_000_000),
        ("codel", {"ce_threshold": "1ms"}, "ce_threshold_ns", 1_000_000),
        ("fq_codel", {"memory_limit": "4MiB"}, "memory_limit_bytes", 4 << 20),
        ("fq_codel", {"quantum": 300}, "quantum_bytes", 300),
        ("fq_codel", {"drop_batch": 8}, "drop_batch_pkts", 8),
        ("fq_codel", {"hash": "per_flow"}, "hash", "per_flow"),
        ("pie", {"alpha": 4, "beta": 16}, "alpha_16ths", 4),
        ("pie", {"burst_allowance": "0s"}, "burst_allowance_ns", 0),
        ("red", {"bandwidth": "20Mbit/s"}, "bandwidth_bps", 20_000_000),
        ("red", {"min": "30kB", "max": "90kB"}, "min_bytes", 30_000),
        ("red", {"probability": 0.1}, "probability", 0.1),
    ],
)
def test_spec_values_reach_the_engine_in_its_units(queue, written, engine_key, engine_value):
    got = engine_link(queue=queue, qdisc=written)
    assert got["queue"] == queue
    assert got["qdisc"][engine_key] == engine_value


def test_defaults_are_linuxs_and_the_buffer_is_the_disciplines_limit():
    for queue, limit in [("codel", 1000), ("fq_codel", 10240), ("pie", 1000), ("red", 1000)]:
        got = engine_link(queue=queue)
        assert got["buffer_pkts"] == limit, queue
        defaults = json.loads(_core.normalize_qdisc(queue, "{}"))
        assert got["qdisc"] == defaults
    fq = engine_link(queue="fq_codel")["qdisc"]
    assert (fq["target_ns"], fq["interval_ns"], fq["ecn"], fq["flows"]) == (
        5_000_000,
        100_000_000,
        True,
        1024,
    )
    assert fq["memory_limit_bytes"] == 32 << 20 and fq["quantum_bytes"] == 1514
    assert engine_link(queue="codel")["qdisc"]["ecn"] is False
    # A buffer the link gives is the limit.
    assert engine_link(queue="fq_codel", buffer=200)["buffer_pkts"] == 200
    # Drop-tail and netem keep Linux's txqueuelen.
    assert engine_link()["buffer_pkts"] == 1000
    assert engine_link(queue="netem")["buffer_pkts"] == 1000


def test_links_without_a_discipline_keep_their_engine_input_and_record():
    plain = Scenario.from_dict(line()).resolve()
    assert "qdisc" not in plain.engine_spec["links"][1]
    assert "queue" not in plain.engine_spec["links"][1]
    assert "qdisc" not in plain.normalized["links"][1]
    assert "queue" not in plain.normalized["links"][1]
    # The run id of a scenario without a discipline is what it was before queue disciplines
    # (the identity of this dumbbell is pinned by the presets' and the store's tests too).
    a = dumbbell(2, ["bbr", "cubic"]).resolve().identity_json
    b = dumbbell(2, ["bbr", "cubic"], bottleneck_queue="droptail").resolve().identity_json
    assert a.run_id("sim") == b.run_id("sim")


def test_the_record_writes_the_full_table_with_units_and_rebuilds_the_same_run():
    sc = Scenario.from_dict(line(queue="fq_codel", qdisc={"target": "10ms", "ecn": False}))
    r = sc.resolve()
    rec = r.normalized["links"][1]
    assert rec["queue"] == "fq_codel"
    assert rec["qdisc"] == {
        "target": "10ms",
        "interval": "100ms",
        "ecn": False,
        "flows": 1024,
        "quantum": 1514,
        "memory_limit": "32MiB",
        "drop_batch": 64,
        "mtu": 1514,
        "hash": "perturbed",
    }
    again = Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json
    assert Scenario.from_toml_str(sc.to_toml()).resolve().engine_json == r.engine_json
    # A default written out is the same run as the default left out.
    written = Scenario.from_dict(line(queue="fq_codel", qdisc={"ecn": True, "flows": 1024}))
    plain = Scenario.from_dict(line(queue="fq_codel"))
    assert written.resolve().identity_json.run_id("sim") == plain.resolve().identity_json.run_id(
        "sim"
    )


def test_a_discipline_or_its_parameter_changes_the_run_id():
    ids = {
        Scenario.from_dict(line(**link)).resolve().identity_json.run_id("sim")
        for link in (
            {},
            {"queue": "codel"},
            {"queue": "codel", "qdisc": {"ecn": True}},
            {"queue": "codel", "qdisc": {"target": "4ms"}},
            {"queue": "pie"},
        )
    }
    assert len(ids) == 5


# ---- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "path", "shown"),
    [
        ({"queue": "fifo"}, "links[1].queue", '"fifo"'),
        ({"queue": "codel", "qdisc": {"target": -1}}, "links[1].qdisc.target", "-1 is negative"),
        ({"queue": "codel", "qdisc": {"target": "-5ms"}}, "links[1].qdisc.target", '"-5ms"'),
        ({"queue": "codel", "qdisc": {"target": "5 parsecs"}}, "links[1].qdisc.target", "parsecs"),
        ({"queue": "codel", "qdisc": {"target": "2000s"}}, "links[1].qdisc.target", "1000 s"),
        ({"queue": "codel", "qdisc": {"target": "1e300s"}}, "links[1].qdisc.target", "1e300s"),
        ({"queue": "codel", "qdisc": {"target": True}}, "links[1].qdisc.target", "true"),
        ({"queue": "codel", "qdisc": {"interval": 0}}, "links[1].qdisc.interval", "must be > 0"),
        ({"queue": "codel", "qdisc": {"ecn": 1}}, "links[1].qdisc.ecn", "true or false"),
        ({"queue": "codel", "qdisc": {"ecn": "yes"}}, "links[1].qdisc.ecn", '"yes"'),
        ({"queue": "codel", "qdisc": {"tagret": "5ms"}}, "links[1].qdisc.tagret", '"target"'),
        ({"queue": "codel", "qdisc": {"target_ns": 5}}, "links[1].qdisc.target_ns", '"target"'),
        ({"queue": "codel", "qdisc": {"flows": 16}}, "links[1].qdisc.flows", "unknown codel"),
        ({"queue": "codel", "qdisc": 5}, "links[1].qdisc", "5"),
        ({"queue": "codel", "qdisc": [1]}, "links[1].qdisc", "[1]"),
        ({"qdisc": {"ecn": True}}, "links[1].qdisc", '"droptail"'),
        ({"queue": "netem", "qdisc": {}}, "links[1].qdisc", '"netem"'),
        ({"queue": "fq_codel", "qdisc": {"flows": 0}}, "links[1].qdisc.flows", "> 0"),
        ({"queue": "fq_codel", "qdisc": {"flows": 100000}}, "links[1].qdisc.flows", "65536"),
        ({"queue": "fq_codel", "qdisc": {"flows": 2.5}}, "links[1].qdisc.flows", "2.5"),
        ({"queue": "fq_codel", "qdisc": {"flows": 2**70}}, "links[1].qdisc.flows", "large"),
        ({"queue": "fq_codel", "qdisc": {"quantum": 100}}, "links[1].qdisc.quantum", "256"),
        (
            {"queue": "fq_codel", "qdisc": {"memory_limit": "4GB"}},
            "links[1].qdisc.memory_limit",
            '"4GB"',
        ),
        (
            {"queue": "fq_codel", "qdisc": {"memory_limit": "lots"}},
            "links[1].qdisc.memory_limit",
            "not a size",
        ),
        ({"queue": "fq_codel", "qdisc": {"hash": "random"}}, "links[1].qdisc.hash", "perturbed"),
        ({"queue": "pie", "qdisc": {"alpha": 33}}, "links[1].qdisc.alpha", "32"),
        ({"queue": "pie", "qdisc": {"alpha": -2}}, "links[1].qdisc.alpha", "negative"),
        ({"queue": "pie", "qdisc": {"tupdate": 0}}, "links[1].qdisc.tupdate", "> 0"),
        ({"queue": "red", "qdisc": {"probability": 1.5}}, "links[1].qdisc.probability", "1.5"),
        (
            {"queue": "red", "qdisc": {"probability": float("nan")}},
            "links[1].qdisc.probability",
            "finite",
        ),
        ({"queue": "red", "qdisc": {"bandwidth": "fast"}}, "links[1].qdisc.bandwidth", "rate"),
        ({"queue": "red", "qdisc": {"min": "100kB", "max": "50kB"}}, "links[1].qdisc.max", "min"),
        ({"queue": "red", "qdisc": {"burst": 1}}, "links[1].qdisc.burst", "1"),
        ({"queue": "red", "buffer": 3_000_000}, "links[1].qdisc.limit", "derived from the link"),
        ({"queue": "codel", "buffer": 0}, "links[1].buffer", "0"),
    ],
)
def test_bad_qdisc_values_name_the_option_and_the_value(link, path, shown):
    with pytest.raises(SpecError) as info:
        Scenario.from_dict(line(**link))
    assert info.value.path == path, str(info.value)
    assert shown in str(info.value), str(info.value)
    assert "\n" not in str(info.value) and "Traceback" not in str(info.value)


def test_errors_come_from_toml_too_with_the_file():
    text = """duration = "10s"
[[links]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "5ms"
queue = "codel"
qdisc = { target = "5 ms please" }
[[flows]]
src = "a"
dst = "b"
cca = "reno"
"""
    with pytest.raises(SpecError) as info:
        Scenario.from_toml_str(text, source="x.toml")
    assert info.value.path == "links[0].qdisc.target"
    assert info.value.source == "x.toml"


# ---- builders and the sweep axis -------------------------------------------------------------


def test_dumbbell_and_parking_lot_take_a_bottleneck_queue():
    sc = dumbbell(2, "cubic", bottleneck_queue={"queue": "codel", "ecn": True, "target": "4ms"})
    r = sc.resolve()
    bn = r.link("bottleneck")
    assert (bn.queue, bn.qdisc["ecn"], bn.qdisc["target_ns"], bn.buffer_pkts) == (
        "codel",
        True,
        4_000_000,
        1000,
    )
    # Only the bottleneck has it.
    assert {link.queue for link in r.links if link.name != "bottleneck"} == {"droptail"}
    # A buffer given in BDPs is the limit.
    assert dumbbell(2, "cubic", bottleneck_queue="fq_codel", buffer_bdp=0.5).resolve().link(
        "bottleneck"
    ).buffer_pkts == round(0.5 * 166.67)
    assert (
        dumbbell(2, "cubic", bottleneck_queue="fq_codel").resolve().link("bottleneck").buffer_pkts
        == 10240
    )
    lot = parking_lot(2, "bbr", "cubic", bottleneck_queue="pie", buffer_bdp=2.0).resolve()
    assert [(lot.link(n).queue, lot.link(n).buffer_pkts) for n in ("L1", "L2")] == [
        ("pie", 333),
        ("pie", 333),
    ]
    # A builder's spec round-trips through TOML.
    assert Scenario.from_toml_str(sc.to_toml()).resolve().engine_json == r.engine_json


@pytest.mark.parametrize(
    ("value", "path", "shown"),
    [
        ("fifo", "bottleneck_queue", '"fifo"'),
        ({"ecn": True}, "bottleneck_queue", "names no queue"),
        ({"queue": "codl"}, "bottleneck_queue.queue", '"codel"'),
        (5, "bottleneck_queue", "5"),
        ({"queue": "codel", "target": "x"}, "links[2].qdisc.target", '"x"'),
        ({"queue": "droptail", "ecn": True}, "links[2].qdisc", "droptail"),
    ],
)
def test_a_bad_bottleneck_queue_is_named(value, path, shown):
    with pytest.raises(SpecError) as info:
        dumbbell(2, "cubic", bottleneck_queue=value)
    assert info.value.path == path, str(info.value)
    assert shown in str(info.value)


def _sweep(base: dict[str, Any], grid: dict[str, Any], **more: Any) -> Sweep:
    return Sweep.from_dict({"name": "q", "base": base, "grid": grid, **more})


def test_bottleneck_queue_is_a_grid_axis_with_readable_labels():
    grid = {
        "bottleneck_queue": [
            "droptail",
            "fq_codel",
            {"queue": "codel", "ecn": True},
            {"queue": "pie", "target": "20ms"},
        ],
        "alpha": [0.5, 4],
    }
    for base, links in (
        ({"builder": "dumbbell", "duration": "5s", "ccas": ["cubic", "bbr"]}, ["bottleneck"]),
        ({"builder": "parking_lot", "hops": 2, "duration": "5s"}, ["L1", "L2"]),
    ):
        sw = _sweep(base, grid)
        assert sw.axis_labels()["bottleneck_queue"] == [
            "droptail",
            "fq_codel",
            "codel+ecn",
            "pie(target=20ms)",
        ]
        points = sw.expand()
        assert len(points) == 8
        seen = set()
        for p in points:
            r = p.scenario.resolve()
            q = [(r.link(n).queue, r.link(n).qdisc and r.link(n).qdisc.get("ecn")) for n in links]
            seen.add(q[0])
            assert len(set(q)) == 1
        assert seen == {("droptail", None), ("fq_codel", True), ("codel", True), ("pie", False)}
        assert len({p.run_id for p in points}) == 8


def test_bottleneck_queue_on_a_scenario_table_base_sets_the_bottleneck_links():
    base = copy.deepcopy(line(buffer={"bdp": 1.0, "reference": "flow1"}))
    base["links"][1]["qdisc"] = None
    del base["links"][1]["qdisc"]
    sw = _sweep(base, {"bottleneck_queue": ["codel", {"queue": "fq_codel", "flows": 16}]})
    got = [p.scenario.resolve().links[1] for p in sw.expand()]
    assert [(link.queue, link.qdisc["ecn"]) for link in got] == [
        ("codel", False),
        ("fq_codel", True),
    ]
    assert got[1].qdisc["flows"] == 16
    # The access link is untouched.
    assert {p.scenario.resolve().links[0].queue for p in sw.expand()} == {"droptail"}


def test_a_filter_pairs_host_ecn_with_the_queue():
    sw = _sweep(
        {"builder": "dumbbell", "duration": "5s", "ccas": ["cubic", "reno"]},
        {
            "bottleneck_queue": ["fq_codel", {"queue": "codel", "ecn": True}],
            "tcp.ecn": [2, 1],
        },
        filters=["(bottleneck_queue == 'codel+ecn') == (p['tcp.ecn'] == 1)"],
    )
    points = sw.expand()
    got = [
        (p.scenario.resolve().link("bottleneck").queue, p.scenario.resolve().flows[0].tcp["ecn"])
        for p in points
    ]
    assert got == [("fq_codel", 2), ("codel", 1)]


def test_a_bad_grid_queue_names_the_axis():
    with pytest.raises(SpecError) as info:
        _sweep(
            {"builder": "dumbbell", "duration": "5s"},
            {"bottleneck_queue": ["fq_codel", {"queue": "codel", "target": -1}]},
        ).expand()
    assert "qdisc.target" in str(info.value) and "-1" in str(info.value)


def test_check_shows_each_links_queue_and_options(tmp_path):
    path = tmp_path / "aqm.toml"
    path.write_text(Scenario.from_dict(line(queue="codel", qdisc={"ecn": True})).to_toml())
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "check", str(path)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any("queue codel target=5ms interval=100ms ecn=true mtu=1514" in ln for ln in lines)
    assert any("queue droptail" in ln for ln in lines)


def test_docs_spec_md_holds_the_generated_option_tables():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "spec.md").read_text()
    begin = text.index(queues.MARKDOWN_BEGIN)
    end = text.index(queues.MARKDOWN_END) + len(queues.MARKDOWN_END)
    assert text[begin:end] + "\n" == queues.format_markdown()
