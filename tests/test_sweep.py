"""Sweep specs: parsing, derived keys, dotted paths, filters, repetitions, run ids, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ccfair.errors import SpecError
from ccfair.spec.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]


def sweep(grid, base=None, **kw):
    return Sweep.from_dict(
        {"base": base or {"builder": "dumbbell", "duration": "2s"}, "grid": grid, **kw}
    )


def link(point, name):
    return point.scenario.resolve().link(name)


def test_expansion_order_is_the_grid_order_with_repetitions_innermost():
    sw = sweep({"delay": ["2ms", "18ms"], "alpha": [1, 4]}, repetitions=2)
    pts = sw.expand()
    got = [(p.params["delay"], p.params["alpha"], p.rep) for p in pts]
    assert got == [(d, a, r) for d in ("2ms", "18ms") for a in (1, 4) for r in (0, 1)]
    assert [p.index for p in pts] == list(range(8))


def test_expansion_is_deterministic_and_ids_are_content_hashes():
    a = sweep({"delay": ["2ms", "18ms"], "alpha": [1, 4]}, repetitions=2).expand()
    b = sweep({"delay": ["2ms", "18ms"], "alpha": [1, 4]}, repetitions=2).expand()
    assert [p.run_id for p in a] == [p.run_id for p in b]
    assert len({p.run_id for p in a}) == 8  # every point differs (delay, alpha or seed)
    # The id depends only on the run, not on how the sweep reached it: a one-point sweep of
    # the same scenario gets the same id.
    one = sweep({"delay": ["18ms"]}, base={"builder": "dumbbell", "duration": "2s", "seed": 2})
    one_alpha = sweep(
        {"alpha": [4]},
        base={"builder": "dumbbell", "duration": "2s", "seed": 2, "bottleneck_delay": "18ms"},
    )
    match = [p for p in a if p.params == {"delay": "18ms", "alpha": 4} and p.rep == 1][0]
    assert one_alpha.expand()[0].run_id == match.run_id
    assert one.expand()[0].run_id != match.run_id  # alpha 2 (default) vs 4


def test_repetitions_take_distinct_consecutive_seeds_from_the_base_seed():
    pts = sweep(
        {"alpha": [1]}, base={"builder": "dumbbell", "duration": "2s", "seed": 7}, repetitions=3
    ).expand()
    assert [p.seed for p in pts] == [7, 8, 9]
    assert [p.scenario.seed for p in pts] == [7, 8, 9]


def test_identical_points_share_one_run_id():
    # Two labels for the same buffer: 1 and 1.0 BDP normalise to the same run.
    pts = sweep({"alpha": {"one": 1, "one-again": 1.0, "two": 2}}).expand()
    ids = [p.run_id for p in pts]
    assert ids[0] == ids[1] != ids[2]


def test_derived_delay_alpha_rate_loss_set_the_bottleneck():
    p = sweep({"delay": ["100ms"], "alpha": [0.5], "rate": ["20Mbit/s"], "loss": [0.01]}).expand()[
        0
    ]
    bn = link(p, "bottleneck")
    assert bn.delay_ns == 100_000_000 and bn.rate_bps == 20_000_000
    assert bn.buffer_bdp == 0.5 and bn.loss_ab == 0.01
    # RTT 2 x (1 + 100 + 1) ms at 20 Mbit/s: BDP 340 packets, alpha 0.5 -> 170.
    assert bn.buffer_pkts == 170


def test_ccas_set_the_flows_and_their_number():
    pts = sweep({"ccas": [["reno", "cubic", "copa"], ["copa"]]}).expand()
    assert [f.cca for f in pts[0].scenario.flows] == ["reno", "cubic", "copa"]
    assert [f.cca for f in pts[1].scenario.flows] == ["copa"]
    assert pts[0].params["ccas"] == "reno-cubic-copa"


def test_per_cca_groups_flows_and_n_flows_repeats_groups():
    pts = sweep({"ccas": [["copa", "cubic"]], "per_cca": [1, 3]}).expand()
    assert [f.cca for f in pts[1].scenario.flows] == ["copa"] * 3 + ["cubic"] * 3
    pts = sweep({"ccas": [["copa", "cubic"]], "n_flows": [4]}).expand()
    assert [f.cca for f in pts[0].scenario.flows] == ["copa", "copa", "cubic", "cubic"]


def test_rtt_ratio_spreads_base_rtts_linearly():
    p = sweep({"n_flows": [3], "rtt_ratio": [2]}, base={"builder": "dumbbell", "ccas": "reno"})
    r = p.expand()[0].scenario.resolve()
    rtts = [f.base_rtt_ns / 1e6 for f in r.flows]
    # Flow 1 keeps 2 x (1 + 18 + 1) = 40 ms; the last has twice that; linear in between.
    assert rtts == pytest.approx([40.0, 60.0, 80.0])
    assert r.link("bottleneck").reference == "flow1"


def test_params_of_one_algorithm_reach_only_its_flows():
    pts = sweep(
        {"ccas": [["copa", "cubic"]], "params.copa": {"no-comp": {"competitive": False}}}
    ).expand()
    flows = pts[0].scenario.flows
    assert flows[0].cca_params == {"competitive": False}
    assert flows[1].cca_params == {}
    assert pts[0].params["params.copa"] == "no-comp"


def test_parking_lot_ccas_are_main_and_cross():
    p = sweep(
        {"ccas": [["bbr", "cubic"]], "delay": ["2ms"]},
        base={"builder": "parking_lot", "hops": 3, "duration": "2s"},
    ).expand()[0]
    r = p.scenario.resolve()
    assert r.flow("main").cca == "bbr"
    assert [r.flow(f"cross{i}").cca for i in (1, 2, 3)] == ["cubic"] * 3
    assert all(r.link(f"L{i}").delay_ns == 2_000_000 for i in (1, 2, 3))


def test_dotted_paths_by_name_index_and_wildcard_on_a_scenario_file():
    sw = Sweep.from_dict(
        {
            "base": str(ROOT / "scenarios" / "custom_graph.toml"),
            "grid": {
                "links.short.delay": ["5ms"],
                "links[2].buffer": [10],
                "flows.*.tcp.sack": [False],
                "flows.detour.cca": ["cubic"],
                "measure.start": ["1s"],
            },
        }
    )
    r = sw.expand()[0].scenario.resolve()
    assert r.link("short").delay_ns == 5_000_000
    assert r.links[2].buffer_pkts == 10
    assert r.flow("detour").cca == "cubic"
    assert [f["tcp"]["sack"] for f in r.engine_spec["flows"]] == [False, False]
    assert r.engine_spec["measure_start_ns"] == 1_000_000_000


def test_derived_keys_on_a_scenario_table_use_its_bdp_buffers():
    sw = Sweep.from_dict(
        {"base": str(ROOT / "scenarios" / "custom_graph.toml"), "grid": {"alpha": [3]}}
    )
    r = sw.expand()[0].scenario.resolve()
    # The two links with a BDP buffer take alpha; the others keep their packets.
    assert r.link("short").buffer_bdp == 3 and r.link("b-c").buffer_bdp == 3
    assert r.link("a-b").buffer_pkts == 200


def test_filters_keep_only_matching_points():
    sw = sweep(
        {"delay": ["2ms", "100ms"], "alpha": [1, 16], "ccas": [["reno", "copa"]]},
        filters=["not (delay == '100ms' and alpha > 8)", "seconds(delay) < 1", "ccas[1] == 'copa'"],
    )
    got = [(p.params["delay"], p.params["alpha"]) for p in sw.expand()]
    assert got == [("2ms", 1), ("2ms", 16), ("100ms", 1)]


def test_baselines_add_each_algorithm_against_itself_once():
    sw = sweep({"ccas": [["reno", "cubic"], ["cubic", "reno"]]}, baselines=True)
    pts = sw.expand()
    base = [p for p in pts if p.baseline]
    assert sorted(p.baseline for p in base) == ["cubic", "reno"]  # deduplicated
    for p in base:
        assert {f.cca for f in p.scenario.flows} == {p.baseline}
    assert len(pts) == 4


def test_spec_hash_is_stable_and_tracks_the_grid():
    a = sweep({"alpha": [1, 2]})
    assert a.spec_hash() == Sweep.from_dict(a.to_dict()).spec_hash()
    assert a.spec_hash() != sweep({"alpha": [1, 4]}).spec_hash()
    assert a.spec_hash() != sweep({"alpha": [2, 1]}).spec_hash()  # order is expansion order
    # The description is documentation, not part of the sweep.
    assert a.spec_hash() == sweep({"alpha": [1, 2]}, description="x").spec_hash()


def test_toml_file_with_relative_base_file(tmp_path):
    (tmp_path / "sc.toml").write_text((ROOT / "scenarios" / "custom_graph.toml").read_text())
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'name = "t"\nrepetitions = 2\n[base]\nfile = "sc.toml"\n[grid]\n'
        '"links.short.delay" = ["5ms", "10ms"]\n'
    )
    sw = Sweep.from_toml(spec)
    assert sw.name == "t" and len(sw.expand()) == 4


BAD = [
    ({"base": {"builder": "dumbbell"}, "grid": {}}, "grid: {} is empty"),
    ({"base": {"builder": "dumbbell"}}, "grid: is missing"),
    ({"base": {"builder": "dumbbell"}, "grid": {"alpha": []}}, "grid.alpha: [] is empty"),
    ({"base": {"builder": "dumbbell"}, "grid": {"alpha": 2}}, "grid.alpha: 2 is not a list"),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"links.bottlenek.delay": ["1ms"]}},
        'grid.links.bottlenek.delay: names no item of links: "bottlenek" is not one of',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"links.bottleneck.delai": ["1ms"]}},
        'grid.links.bottleneck.delai: "delai" is not a field of links; did you mean "delay"?',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpah": [1]}},
        'grid.alpah: "alpah" is not a derived parameter',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"links[9].delay": ["1ms"]}},
        "grid.links[9].delay: index [9] is out of range",
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1, -1]}},
        "links[2].buffer.bdp: -1 is not a positive BDP multiple; bdp (alpha) must be > 0 "
        '(at grid point {"alpha": -1})',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"flows.flow1.cca": ["vegas"]}},
        'flows[0].cca: "vegas" is not a known congestion control',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "repetitons": 2},
        'repetitons: unknown key "repetitons" (value 2); did you mean "repetitions"?',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "repetitions": 0},
        "repetitions: 0 is not a positive integer",
    ),
    (
        {"base": {"builder": "dumbell"}, "grid": {"alpha": [1]}},
        'base.builder: "dumbell" is not a builder',
    ),
    (
        {"base": {"builder": "dumbbell", "delay": "1ms"}, "grid": {"alpha": [1]}},
        'base.delay: "delay" (value "1ms") is not an argument of dumbbell()',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "filters": ["alfa > 1"]},
        'filters[0]: "alfa > 1" uses "alfa", which is not a grid key; did you mean "alpha"?',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "filters": ["open('x')"]},
        "filters[0]: \"open('x')\" calls a function other than",
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "filters": ["alpha > 1"]},
        'filters: ["alpha > 1"] remove every point of the grid',
    ),
    (
        {"base": {"builder": "parking_lot"}, "grid": {"rtt_ratio": [2]}},
        "grid.rtt_ratio: needs a dumbbell base",
    ),
    (
        {
            "base": {"builder": "dumbbell"},
            "grid": {"ccas": [["reno", "cubic", "bbr"]], "n_flows": [4]},
        },
        'grid.ccas: ["reno", "cubic", "bbr"] has 3 entries, which do not divide n_flows = 4',
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1, 1.0]}},
        "grid.alpha: [1, 1.0] has two values labelled 1",
    ),
    (
        {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "backend": "ns3"},
        'backend: "ns3" is not a backend',
    ),
]


@pytest.mark.parametrize(("spec", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_sweep_specs_are_rejected_with_one_line_naming_the_field(spec, message):
    with pytest.raises(SpecError) as err:
        Sweep.from_dict(spec).expand()
    text = str(err.value)
    assert message in text
    assert "\n" not in text


def test_cli_rejects_a_bad_sweep_file_with_one_line_and_status_2(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('[base]\nbuilder = "dumbbell"\n[grid]\n"links.bottleneck.delai" = ["1ms"]\n')
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines == [
        'error: grid.links.bottleneck.delai: "delai" is not a field of links; did you mean '
        '"delay"? (fields: name, between, rate, delay, buffer, loss, queue, qdisc)'
    ]
    assert not (tmp_path / "r").exists()  # nothing written


def test_cli_dry_run_lists_points_without_running(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "d"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n'
        "[grid]\nalpha = [1, 2]\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--dry-run"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len([ln for ln in lines if "  rep=" in ln]) == 4  # one line per point
    # The totals, the resource estimate of the whole sweep (4 runs x 5 tables + sweep.json +
    # .ccfair-lock) and the time (two lines: after a calibration of this machine).
    assert lines[-4].startswith("4 points, 4 distinct runs")
    assert lines[-3].startswith("estimate: ") and "22 files" in lines[-3], lines[-3]
    assert lines[-2].startswith("time: 4 runs (4 to run, 0 already finished in results/d)")
    assert "calibrated on this machine" in lines[-1]
    assert not (tmp_path / "results").exists()


def test_the_example_sweep_file_expands_with_its_baselines():
    sw = Sweep.from_toml(ROOT / "scenarios" / "sweep_dumbbell.toml")
    pts = sw.expand()
    grid = [p for p in pts if p.baseline is None]
    # 3 pairs x 2 delays x 4 buffers, minus 100 ms with alpha 0.5, x 2 repetitions.
    assert len(grid) == (3 * 2 * 4 - 3) * 2
    assert all(not (p.params["delay"] == "100ms" and p.params["alpha"] < 1) for p in grid)
    assert {p.baseline for p in pts} - {None} == {"reno", "cubic", "bbr", "copa"}
