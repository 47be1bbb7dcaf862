"""`ccfair validate`: the simulator against Linux (docs/kernel.md, "ccfair validate")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ccfair
import pandas as pd
import pytest
from ccfair.validate import compare as val_compare
from ccfair.validate import figures as val_figures
from ccfair.validate import markdown as val_markdown
from ccfair.validate import points as val_points
from ccfair.validate import study as val

ROOT = Path(__file__).resolve().parents[1]
#: Child processes import the package under test, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


def test_compare_of_identical_runs_has_no_difference():
    sc = ccfair.dumbbell(2, ["cubic", "reno"], bottleneck_delay="8ms", duration="3s")
    a = ccfair.run(sc)
    flows = val_compare.compare("p", a, a)
    assert list(flows["flow"]) == ["flow1", "flow2"]
    assert (flows["goodput_diff_mbps"] == 0).all() and (flows["share_diff"] == 0).all()
    assert flows["goodput_sim_mbps"].sum() == pytest.approx(a.flows["goodput_mbps"].sum())


def test_compare_reports_kernel_minus_simulator():
    sc = ccfair.dumbbell(2, ["cubic", "reno"], bottleneck_delay="8ms", duration="3s")
    sim = ccfair.run(sc)
    other = ccfair.run(sc)
    # A made-up "kernel" result: flow1 got 10 Mbit/s more.
    other.flows.loc[other.flows["flow_name"] == "flow1", "goodput_mbps"] += 10
    total = other.flows["goodput_mbps"].sum()
    other.flows["share_frac"] = other.flows["goodput_mbps"] / total
    f1 = val_compare.compare("p", sim, other).set_index("flow").loc["flow1"]
    assert f1["goodput_diff_mbps"] == pytest.approx(10.0)
    assert f1["share_diff"] == pytest.approx(f1["share_kernel"] - f1["share_sim"])
    assert f1["share_diff"] > 0


def _runs(shares_sim, shares_kernel, point="p", pair="a vs b"):
    n = len(shares_sim)
    return pd.DataFrame(
        {
            "point": point,
            "pair": pair,
            "flow": "flow1",
            "cca": "a",
            "rep": range(n),
            "share_sim": shares_sim,
            "share_kernel": shares_kernel,
            "goodput_sim_mbps": [10.0] * n,
            "goodput_kernel_mbps": [12.0] * n,
            "kernel_reliable": [True] * n,
            "param_alpha": "2",
        }
    )


def test_points_get_means_intervals_and_overlap_over_repetitions():
    # Same means, spread over three repetitions: intervals overlap; far apart: they do not.
    close = val_compare.summarize_points(_runs([0.40, 0.50, 0.60], [0.42, 0.52, 0.62])).iloc[0]
    assert close["share_diff"] == pytest.approx(0.02)
    # t(0.975, 2) = 4.303; sd = 0.1; half-width = 4.303 * 0.1 / sqrt(3)
    assert close["share_sim_ci"] == pytest.approx(4.303 * 0.1 / 3**0.5, rel=1e-3)
    assert close["ci_overlap"] and close["n_kernel"] == 3 and close["param_alpha"] == "2"
    assert close["goodput_ratio"] == pytest.approx(1.2)
    far = val_compare.summarize_points(_runs([0.30, 0.31], [0.60, 0.61])).iloc[0]
    assert not far["ci_overlap"] and far["share_diff"] == pytest.approx(0.30)
    # One repetition: no interval (NaN), overlap only if equal.
    one = val_compare.summarize_points(_runs([0.5], [0.5])).iloc[0]
    assert one["share_sim_ci"] != one["share_sim_ci"] and one["ci_overlap"]


def test_summary_per_pair_takes_each_points_largest_flow_difference():
    runs = pd.concat(
        [
            _runs([0.5, 0.5], [0.52, 0.52], point="p1"),
            _runs([0.5, 0.5], [0.38, 0.38], point="p2"),
            _runs([0.5, 0.5], [0.51, 0.51], point="q1", pair="c vs d"),
        ]
    )
    summary = val_compare.summarize_pairs(val_compare.summarize_points(runs)).set_index("pair")
    assert summary.loc["a vs b", "points"] == 2
    assert summary.loc["a vs b", "median_abs_diff_pp"] == pytest.approx(7.0)
    assert summary.loc["a vs b", "max_abs_diff_pp"] == pytest.approx(12.0)
    assert summary.loc["a vs b", "over_10pp"] == 1
    assert summary.loc["c vs d", "max_abs_diff_pp"] == pytest.approx(1.0)
    assert summary.loc["all", "points"] == 3 and summary.loc["all", "over_10pp"] == 1


def test_flagged_kernel_runs_are_counted_but_not_averaged():
    runs = _runs([0.5, 0.5], [0.52, 0.90], point="p1")
    runs.loc[1, "kernel_reliable"] = False  # the 0.90 run had a stalled forwarder
    lone = _runs([0.5], [0.10], point="p2")
    lone["kernel_reliable"] = False
    points = val_compare.summarize_points(pd.concat([runs, lone], ignore_index=True)).set_index(
        "point"
    )
    assert points.loc["p1", "n_kernel"] == 1 and points.loc["p1", "kernel_unreliable"] == 1
    assert points.loc["p1", "share_diff"] == pytest.approx(0.02)
    assert points.loc["p2", "n_kernel"] == 0 and pd.isna(points.loc["p2", "share_diff"])
    summary = val_compare.summarize_pairs(points.reset_index()).set_index("pair")
    assert summary.loc["all", "points"] == 1 and summary.loc["all", "no_reliable_kernel"] == 1
    assert summary.loc["all", "max_abs_diff_pp"] == pytest.approx(2.0)
    runs_all = pd.concat([runs, lone], ignore_index=True)
    runs_all["kernel_flags"] = ""
    v = val_compare.Validation(
        runs=runs_all, points=points.reset_index(), summary=summary.reset_index()
    )
    report = val_markdown.report_section(v, {"kernel": "test"})
    assert "no reliable run" in report and "1 points had no reliable kernel run" in report
    # The flagged runs are shown beside the simulator, apart from the result: p1's 0.90 run
    # (+40 pp) and p2's lone 0.10 (-40 pp).
    flagged = report.split("The flagged kernel runs beside the simulator")[1]
    assert "over 2 points, median |difference| 40.00 pp, largest 40.00 pp" in flagged
    fp = val_compare.flagged_points(runs_all).set_index("point")
    assert fp.loc["p1", "kernel_flagged_%"] == "90.0" and fp.loc["p1", "kernel_reliable_%"] == 52.0
    assert fp.loc["p2", "diff_flagged_pp"] == pytest.approx(-40.0)
    assert pd.isna(fp.loc["p2", "kernel_reliable_%"])
    everything_checked = runs.assign(kernel_reliable=True, kernel_flags="")
    v_ok = val_compare.Validation(
        runs=everything_checked, points=points.reset_index(), summary=summary.reset_index()
    )
    assert "flagged kernel runs beside" not in val_markdown.report_section(v_ok, {"kernel": "test"})


def test_pairs_come_from_the_ccas_axis_or_the_flows():
    sc = ccfair.dumbbell(2, ["reno", "bbr"], duration="2s")
    assert val_points.pair_of(val_points.VPoint("x", {"ccas": "reno,bbr"}, 0, sc)) == "reno vs bbr"
    lot = ccfair.parking_lot(2, "bbr", "cubic", duration="2s")
    assert val_points.pair_of(val_points.VPoint("x", {}, 0, lot)) == "bbr vs cubic"
    # A named value of the axis (copa.toml's `copa-vs-cubic = ["copa", "cubic"]`) is no list
    # of algorithms: the flows say what ran.
    named = ccfair.dumbbell(2, ["copa", "cubic"], duration="2s")
    assert (
        val_points.pair_of(val_points.VPoint("x", {"ccas": "copa-vs-cubic"}, 0, named))
        == "copa vs cubic"
    )
    alone = ccfair.dumbbell(4, "copa", duration="2s")
    assert (
        val_points.pair_of(val_points.VPoint("x", {"ccas": "copa-alone"}, 0, alone)) == "copa alone"
    )
    same = ccfair.dumbbell(2, "cubic", duration="2s")
    assert (
        val_points.pair_of(val_points.VPoint("x", {"ccas": "cubic-cubic"}, 0, same))
        == "cubic vs cubic"
    )


def test_the_simulator_runs_at_the_kernels_hz_unless_the_scenario_sets_it():
    sc = ccfair.dumbbell(1, "cubic", duration="2s")
    assert val_points.sim_variant(sc, 250).resolve().engine_spec["flows"][0]["tcp"]["hz"] == 250
    own = ccfair.dumbbell(1, "cubic", duration="2s", tcp={"hz": 100})
    assert val_points.sim_variant(own, 250).resolve().engine_spec["flows"][0]["tcp"]["hz"] == 100
    assert val_points.sim_variant(sc, None) is sc


def test_the_simulator_takes_the_testbeds_measured_host_latency(tmp_path):
    measured = {"receiver_us": [90.0] * 17, "sender_us": [35.0] * 17}
    (tmp_path / "hl.json").write_text(
        json.dumps(
            {
                "receiver_turnaround_us": measured["receiver_us"],
                "sender_turnaround_us": measured["sender_us"],
            }
        )
    )
    table = val_points.measured_host_latency(tmp_path / "hl.json")
    assert table == {"measured": measured}
    sim_tcp = {"host_latency": table, "tso": "linux"}
    sc = ccfair.dumbbell(1, "cubic", duration="2s")
    tcp = val_points.sim_variant(sc, 250, sim_tcp).resolve().engine_spec["flows"][0]["tcp"]
    assert tcp["host_latency"] == table and tcp["hz"] == 250 and tcp["tso"] == "linux"
    assert val_points.sim_tcp_label(sim_tcp) == "host_latency = measured, tso = linux"
    # An hz given for the simulator's side wins over the kernel's.
    assert (
        val_points.sim_variant(sc, 250, {"hz": 100}).resolve().engine_spec["flows"][0]["tcp"]["hz"]
        == 100
    )
    # A scenario's own setting wins.
    own = ccfair.dumbbell(1, "cubic", duration="2s", tcp={"host_latency": "none"})
    tcp = val_points.sim_variant(own, 250, sim_tcp).resolve().engine_spec["flows"][0]["tcp"]
    assert tcp["host_latency"] == "none"
    (tmp_path / "bad.json").write_text('{"receiver_turnaround_us": [1]}')
    (tmp_path / "list.json").write_text("[1, 2, 3]")
    (tmp_path / "nested.json").write_text(
        '{"receiver_turnaround_us": [[1]], "sender_turnaround_us": [1]}'
    )
    for bad in ("bad.json", "missing.json", "list.json", "nested.json", "."):
        with pytest.raises(ccfair.SpecError, match="host_latency.*measure_host_latency"):
            val_points.measured_host_latency(tmp_path / bad)
    # An option the engine refuses stops the study before anything runs.
    short = {"host_latency": {"measured": {"receiver_us": [1.0] * 3, "sender_us": [1.0] * 17}}}
    for bad_tcp, says in (
        (short, "receiver_us"),
        ({"tso": "sometimes"}, "tso"),
        ({"no_such_option": 1}, "no_such_option"),
        (
            {"host_latency": {"measured": {"receiver_us": [1e300] * 17, "sender_us": [1] * 17}}},
            "1e300",
        ),
        (["tso", "linux"], "sim_tcp"),
        ({1: "linux"}, "sim_tcp"),
    ):
        with pytest.raises(ccfair.SpecError, match=says):
            val.validate([sc], out=tmp_path / "v", sim_tcp=bad_tcp)
    # The Linux runs' backend must be one of real Linux TCP.
    for bad_ref in ("sim", "netem", 3):
        with pytest.raises(ccfair.SpecError, match=r"reference: .* choose kernel, veth"):
            val.validate([sc], out=tmp_path / "v", reference=bad_ref)
    assert not (tmp_path / "v").exists()


def test_cli_sim_tcp_options_parse_as_toml_values():
    from ccfair.cli.study import _sim_tcp_option

    assert _sim_tcp_option("tso=linux") == ("tso", "linux")
    assert _sim_tcp_option('tso="linux"') == ("tso", "linux")
    assert _sim_tcp_option("rmem=[4096, 131072, 6291456]") == ("rmem", [4096, 131072, 6291456])
    assert _sim_tcp_option("init_cwnd=10") == ("init_cwnd", 10)
    for bad in ("tso", "=linux", " =1"):
        with pytest.raises(ccfair.SpecError, match="KEY=VALUE"):
            _sim_tcp_option(bad)


def test_inputs_are_labelled_and_sweeps_expanded(tmp_path):
    a = tmp_path / "a.toml"
    a.write_text(ccfair.dumbbell(1, "reno", duration="2s", name="one").to_toml())
    labels = [label for label, _ in val_points.expand_inputs([a, a])]
    assert labels == ["one", "one#2"]
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'name = "buf"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n'
        "[grid]\nalpha = [1, 4]\n"
    )
    points = val_points.expand_inputs([sweep])
    assert [label for label, _ in points] == [
        "buf[alpha=1] r0",
        "buf[alpha=1] r1",
        "buf[alpha=4] r0",
        "buf[alpha=4] r1",
    ]
    buffers = [sc.resolve().link("bottleneck").buffer_pkts for _, sc in points]
    assert buffers == [167, 167, 667, 667]  # 1 and 4 x 166.67 packets (D = 18 ms)
    # Repetitions are runs of one point; seeds differ.
    vp = val_points.validation_points([sweep])
    assert [(p.label, p.rep, p.params) for p in vp][:2] == [
        ("buf[alpha=1]", 0, {"alpha": "1"}),
        ("buf[alpha=1]", 1, {"alpha": "1"}),
    ]
    assert vp[0].scenario.seed != vp[1].scenario.seed


def test_a_presets_grid_is_a_study():
    quick = val_points.validation_points(preset="harada-dumbbell", quick=True)
    # 3 pairs x 2 delays x 2 buffers, 2 repetitions each.
    assert len(quick) == 24 and {val_points.pair_of(p) for p in quick} == {
        "reno vs bbr",
        "cubic vs bbr",
        "reno vs cubic",
    }
    with pytest.raises(ccfair.SpecError, match="nope"):
        val_points.validation_points(preset="nope")


def test_validate_rejects_what_the_kernel_lacks_before_running(tmp_path):
    # A modified cubic: neither the kernel nor ccfair's BPF programs run it.
    sc = ccfair.dumbbell(1, "cubic", cca_params={"beta": 700}, duration="2s", name="beta")
    with pytest.raises(ccfair.SpecError, match=r"flows\[0\].cca_params.beta.*\(point beta\)"):
        val.validate([sc], out=tmp_path / "v")
    assert not (tmp_path / "v").exists()


@pytest.mark.kernel
def test_validate_a_two_point_sweep_with_repetitions_and_resume(kernel_backend, tmp_path):
    """Two points x two repetitions on both backends (short runs): the study's tables,
    figures and report; a second invocation runs nothing again."""
    sweep = tmp_path / "pair.toml"
    sweep.write_text(
        'name = "pair"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nn_flows = 2\n'
        'ccas = ["cubic", "bbr"]\nbottleneck_delay = "8ms"\nduration = "3s"\n'
        "[grid]\nalpha = [0.5, 4]\n"
    )
    out = tmp_path / "val"
    cmd = [sys.executable, "-m", "ccfair", "validate", str(sweep), "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stderr
    # Four kernel runs (a flagged one is run again under the same number).
    # Progress on stderr, the table on stdout.
    assert "kernel 4/4" in p.stderr and "kernel 5/" not in p.stderr
    assert "sim_share_%" in p.stdout
    runs = pd.read_parquet(out / "validate_runs.parquet")
    assert len(runs) == 8 and set(runs["rep"]) == {0, 1}
    # The Parquet table keeps the grid labels as written (CSV readers retype "4" as 4.0).
    points = pd.read_parquet(out / "validate_points.parquet")
    assert len(points) == 4 and (points["n_sim"] == 2).all()
    # Every kernel run is counted: averaged, or apart if its self-checks still flagged it
    # after its retry (a busy VM; the CI machine had both runs of a point flagged once).
    assert ((points["n_kernel"] + points["kernel_unreliable"]) == 2).all()
    assert set(points["param_alpha"].astype(str)) == {"0.5", "4"}
    # Shares of a point add up to 1 on each backend (kernel: over the points with a run
    # that passed its self-checks); the table is the runs' own numbers.
    for b in ("sim", "kernel"):
        counted = points[points[f"n_{b}"] > 0]
        sums = counted.groupby("point")[f"share_{b}_mean"].sum().tolist()
        assert sums == pytest.approx([1] * len(sums))
        if b == "sim":
            assert len(sums) == 2
    stored = ccfair.load_table(out / "results", "runs")
    assert sorted(stored["backend"]) == ["kernel"] * 4 + ["sim"] * 4
    sim_spec = stored[stored["backend"] == "sim"]["spec_json"].iloc[0]
    hz = int(stored[stored["backend"] == "kernel"]["kernel_hz"].iloc[0])
    assert f'"hz": {hz}' in sim_spec
    summary = pd.read_csv(out / "validate_summary.csv")
    assert list(summary["pair"]) == ["cubic vs bbr", "all"]
    assert (out / "figures" / "agreement.png").stat().st_size > 10_000
    report = (out / "validate.md").read_text()
    assert "### Summary per algorithm pair" in report and "figures/agreement.png" in report
    assert "Command: `ccfair validate" in report
    # Resume: kernel runs are kept (unless flagged); the simulator's always run again, as
    # the current model, and give the same numbers.
    again = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    assert again.returncode == 0, again.stderr
    if stored["reliable"].all():
        assert "kernel 1/" not in again.stderr and again.stderr.count("simulator:") == 4
        rerun = pd.read_parquet(out / "validate_runs.parquet")
        assert rerun["share_sim"].tolist() == runs["share_sim"].tolist()


@pytest.mark.parametrize(
    "module",
    [
        "ccfair.backends.kernel.host",
        "ccfair.backends.kernel.checks",
        "ccfair.backends.kernel.machine",
        "ccfair.backends.kernel.run",
        "ccfair.backends.kernel.selfcheck",
        "ccfair.validate.points",
        "ccfair.validate.compare",
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


class _Flagged:
    reliable = False

    def format_selfcheck(self) -> str:
        return "UNRELIABLE RUN: test"

    def save(self, results) -> None:
        pass


@pytest.mark.parametrize("rerun", [True, False])
def test_a_finished_flagged_kernel_run_is_rerun_unless_kept(monkeypatch, tmp_path, rerun):
    sc = ccfair.dumbbell(2, ["reno", "bbr"], duration="2s")
    point = val_points.VPoint("p", {}, 0, sc)
    calls = []
    monkeypatch.setattr(val, "_cached", lambda results, rid: _Flagged())
    monkeypatch.setattr(val, "_slim", lambda r: r)
    monkeypatch.setattr(val, "run", lambda s, backend: calls.append(backend) or _Flagged())
    out = val._run_kernels([point], [sc], tmp_path, 0, rerun, lambda m: None)
    assert len(out) == 1 and calls == (["kernel"] if rerun else [])


@pytest.mark.parametrize("bad", ["no", 1, None])
def test_rerun_flagged_must_be_true_or_false(bad):
    with pytest.raises(ccfair.SpecError, match="rerun_flagged"):
        val.validate([ccfair.dumbbell(2, ["reno", "bbr"], duration="2s")], rerun_flagged=bad)


def test_finished_only_compares_the_finished_points_and_starts_no_kernel_run(monkeypatch, tmp_path):
    scs = [ccfair.dumbbell(2, ["reno", "cubic"], duration="2s", seed=s) for s in (1, 2)]
    # The kernel side holds the first scenario's run only (a simulator run stands in for it).
    kernel_sc = val_points.kernel_variant(scs[0])
    rid = val.run_id_of(kernel_sc.resolve().normalized, "kernel")
    stand_in = ccfair.run(kernel_sc, backend="sim")  # not a real kernel run
    monkeypatch.setattr(val, "finished_run_ids", lambda results: {rid})
    monkeypatch.setattr(val, "load", lambda results, run_id: stand_in)
    started = []

    def run(sc, backend):
        started.append(backend)
        return ccfair.run(sc, backend=backend)

    monkeypatch.setattr(val, "run", run)
    kernel_backend = val.backends.get("kernel")
    monkeypatch.setattr(kernel_backend, "preflight", lambda: pytest.fail("needs no root"))
    (tmp_path / "results").mkdir()
    messages: list[str] = []
    v = val.validate(
        scs, out=tmp_path, finished_only=True, timeseries_figures=0, progress=messages.append
    )
    assert started == ["sim"]  # the one finished point's simulator side; no kernel run
    assert len(v.runs) == 2 and v.runs["point"].nunique() == 1
    assert "comparing the 1 of 2 points whose kernel runs are finished" in messages
    assert (tmp_path / "validate.md").exists()


def test_finished_only_without_finished_kernel_runs_says_so(tmp_path):
    sc = ccfair.dumbbell(2, ["reno", "cubic"], duration="2s")
    with pytest.raises(ccfair.SpecError, match="holds no finished kernel run"):
        val.validate([sc], out=tmp_path, finished_only=True)
    with pytest.raises(ccfair.SpecError, match="finished_only"):
        val.validate([sc], out=tmp_path, finished_only="yes")


@pytest.mark.parametrize(
    "study", sorted((ROOT / "scenarios" / "validate").glob("*.toml")), ids=lambda p: p.stem
)
def test_every_validation_study_expands_and_its_header_counts_its_runs(study):
    # The header of each study file says how many kernel runs it makes ("N kernel runs"),
    # which is what a user plans machine time by: it must stay true as the grid changes.
    import re

    points = val_points.validation_points([study])
    assert points and len({(p.label, p.rep) for p in points}) == len(points)
    said = re.search(r"(\d+) kernel runs", study.read_text())
    assert said is not None, f"{study.name}: the header does not say how many kernel runs"
    assert int(said.group(1)) == len(points), study.name


def test_the_agreement_figure_shows_flagged_runs_apart(tmp_path):
    runs = _runs([0.5, 0.5], [0.52, 0.90], point="p1")
    runs.loc[1, "kernel_reliable"] = False
    points = val_compare.summarize_points(runs)
    fig = val_figures.agreement_figure(points, tmp_path / "a.png", val_compare.flagged_points(runs))
    empty = val_figures.agreement_figure(points, tmp_path / "b.png", None)
    assert fig.stat().st_size > empty.stat().st_size > 0  # the hollow markers are drawn


def test_the_sojourn_at_queue_disciplines_is_compared():
    sc = ccfair.dumbbell(
        2, ["cubic", "reno"], bottleneck_queue="codel", bottleneck_delay="8ms", duration="4s"
    )
    sim = ccfair.run(sc)
    other = ccfair.run(sc)
    # A made-up "kernel" result whose bottleneck held packets 10% longer.
    ls = other.link_summary
    for col in ("sojourn_p50_ms", "sojourn_p95_ms", "sojourn_p99_ms"):
        ls[col] = ls[col] * 1.1
    links = val_compare.compare_links("p", sim, other)
    # Both directions of the bottleneck (the only link with a discipline), nothing else.
    assert list(zip(links["link"], links["direction"], strict=True)) == [
        ("bottleneck", "ab"),
        ("bottleneck", "ba"),
    ]
    assert (links["queue"] == "codel").all()
    ab = links.iloc[0]
    assert ab["sojourn_p95_kernel"] == pytest.approx(1.1 * ab["sojourn_p95_sim"])
    assert ab["mark_aqm_sim"] == ab["mark_aqm_kernel"] == 0
    runs = links.assign(pair="cubic vs reno", rep=0, kernel_reliable=True)
    pts = val_compare.summarize_link_points(runs)
    assert pts.iloc[0]["sojourn_p95_rel_diff"] == pytest.approx(0.1)
    text = "\n".join(val_markdown._sojourn_section(pts))
    assert "### Queueing delay at the queue disciplines" in text
    assert "**met** (median 10.0%, largest 10.0%, 0 of 2 beyond)" in text
    # Links without a discipline have no sojourn to compare.
    plain = ccfair.run(ccfair.dumbbell(2, ["cubic", "reno"], duration="2s"))
    assert val_compare.compare_links("p", plain, plain).empty
    assert val_markdown._sojourn_section(pd.DataFrame()) == []


def test_a_study_with_a_queue_discipline_writes_its_sojourn_tables(monkeypatch, tmp_path):
    sc = ccfair.dumbbell(2, ["reno", "cubic"], bottleneck_queue="fq_codel", duration="2s")
    kernel_sc = val_points.kernel_variant(sc)
    rid = val.run_id_of(kernel_sc.resolve().normalized, "kernel")
    stand_in = ccfair.run(kernel_sc, backend="sim")  # not a real kernel run
    monkeypatch.setattr(val, "finished_run_ids", lambda results: {rid})
    monkeypatch.setattr(val, "load", lambda results, run_id: stand_in)
    (tmp_path / "results").mkdir()
    v = val.validate([sc], out=tmp_path, finished_only=True, timeseries_figures=0)
    assert set(v.link_points["queue"]) == {"fq_codel"}
    assert (v.link_points["sojourn_p95_rel_diff"].abs() < 1e-9).all()
    assert (tmp_path / "validate_link_points.csv").exists()
    assert "Queueing delay at the queue disciplines" in (tmp_path / "validate.md").read_text()
