"""`ccfair validate`: the simulator against Linux (docs/kernel.md, "ccfair validate")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ccfair
import pandas as pd
import pytest
from ccfair import validate as val
from ccfair.spec import Scenario

ROOT = Path(__file__).resolve().parents[1]
#: Child processes import the package under test, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


def test_compare_of_identical_runs_has_no_difference():
    sc = ccfair.dumbbell(2, ["cubic", "reno"], bottleneck_delay="8ms", duration="3s")
    a = ccfair.run(sc)
    flows, ccas = val.compare("p", a, a)
    assert list(flows["flow"]) == ["flow1", "flow2"]
    assert (flows["goodput_diff_mbps"] == 0).all() and (flows["share_diff"] == 0).all()
    assert flows["goodput_sim_mbps"].sum() == pytest.approx(a.flows["goodput_mbps"].sum())
    assert sorted(ccas["cca"]) == ["cubic", "reno"]
    assert ccas["share_sim"].sum() == pytest.approx(1.0)


def test_compare_reports_kernel_minus_simulator():
    sc = ccfair.dumbbell(2, ["cubic", "reno"], bottleneck_delay="8ms", duration="3s")
    sim = ccfair.run(sc)
    other = ccfair.run(sc)
    # A made-up "kernel" result: flow1 got 10 Mbit/s more.
    other.flows.loc[other.flows["name"] == "flow1", "goodput_bps"] += 10e6
    total = other.flows["goodput_bps"].sum()
    other.flows["share"] = other.flows["goodput_bps"] / total
    flows, ccas = val.compare("p", sim, other)
    f1 = flows.set_index("flow").loc["flow1"]
    assert f1["goodput_diff_mbps"] == pytest.approx(10.0)
    cubic = ccas.set_index("cca").loc["cubic"]
    assert cubic["share_diff"] == pytest.approx(cubic["share_kernel"] - cubic["share_sim"])
    assert cubic["share_diff"] > 0


def test_the_simulator_runs_at_the_kernels_hz_unless_the_scenario_sets_it():
    sc = ccfair.dumbbell(1, "cubic", duration="2s")
    assert val.sim_variant(sc, 250).resolve().engine_spec["flows"][0]["tcp"]["hz"] == 250
    own = ccfair.dumbbell(1, "cubic", duration="2s", tcp={"hz": 100})
    assert val.sim_variant(own, 250).resolve().engine_spec["flows"][0]["tcp"]["hz"] == 100
    assert val.sim_variant(sc, None) is sc


def test_inputs_are_labelled_and_sweeps_expanded(tmp_path):
    a = tmp_path / "a.toml"
    a.write_text(ccfair.dumbbell(1, "reno", duration="2s", name="one").to_toml())
    labels = [label for label, _ in val.expand_inputs([a, a])]
    assert labels == ["one", "one#2"]
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'name = "buf"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n'
        "[grid]\nalpha = [1, 4]\n"
    )
    points = val.expand_inputs([sweep])
    assert [label for label, _ in points] == [
        "buf[alpha=1] r0",
        "buf[alpha=1] r1",
        "buf[alpha=4] r0",
        "buf[alpha=4] r1",
    ]
    buffers = [sc.resolve().link("bottleneck").buffer_pkts for _, sc in points]
    assert buffers == [167, 167, 667, 667]  # 1 and 4 x 166.67 packets (D = 18 ms)


def test_validate_rejects_what_the_kernel_lacks_before_running(tmp_path):
    sc = ccfair.dumbbell(1, "copa", duration="2s", name="copa")
    with pytest.raises(ccfair.SpecError, match=r"flows\[0\].cca.*\(point copa\)"):
        val.validate([sc], out=tmp_path / "v")
    assert not (tmp_path / "v").exists()


@pytest.mark.kernel
def test_validate_writes_table_figures_and_report(kernel_backend, tmp_path):
    sc = ccfair.dumbbell(2, ["cubic", "bbr"], bottleneck_delay="8ms", buffer_bdp=2.0)
    f = tmp_path / "pair.toml"
    f.write_text(Scenario.from_dict({**sc.to_dict(), "name": "pair"}).to_toml())
    out = tmp_path / "val"
    p = subprocess.run(
        [sys.executable, "-m", "ccfair", "validate", str(f), "--duration", "4s", "--out", str(out)],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert p.returncode == 0, p.stderr
    assert "sim_Mbps" in p.stdout and "kernel_Mbps" in p.stdout
    flows = pd.read_parquet(out / "validate_flows.parquet")
    assert list(flows["flow"]) == ["flow1", "flow2"]
    runs = ccfair.load_table(out / "results", "runs")
    assert sorted(runs["backend"]) == ["kernel", "sim"]
    # The table is the runs' own numbers.
    kflows = ccfair.load_table(out / "results", "flows").merge(runs[["run_id", "backend"]])
    k = kflows[kflows["backend"] == "kernel"].set_index("name")["goodput_bps"] / 1e6
    assert list(flows["goodput_kernel_mbps"]) == pytest.approx(list(k[flows["flow"]]))
    sim_spec = runs[runs["backend"] == "sim"]["spec_json"].iloc[0]
    assert '"hz": ' + str(int(runs[runs["backend"] == "kernel"]["kernel_hz"].iloc[0])) in sim_spec
    ccas = pd.read_csv(out / "validate_ccas.csv")
    assert set(ccas["cca"]) == {"cubic", "bbr"}
    assert ccas["share_kernel"].sum() == pytest.approx(1.0)
    for png in ("goodput.png", "pair_timeseries.png"):
        assert (out / "figures" / png).stat().st_size > 10_000
    report = (out / "validate.md").read_text()
    assert "### Share of each algorithm" in report and "figures/pair_timeseries.png" in report
    assert os.path.exists(out / "validate_points.csv")


@pytest.mark.parametrize("module", ["ccfair.kernel", "ccfair.validate"])
def test_docstring_examples_run(module, monkeypatch, tmp_path):
    import doctest
    import importlib

    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, extraglobs={"ccfair": ccfair})
    assert result.failed == 0
    assert result.attempted > 0
