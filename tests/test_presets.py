"""Presets follow their studies' setups, state every choice, run no point twice, and their
reports say what the checks find (buffers that never fill, runs that end identical)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest
from ccfair.errors import SpecError
from ccfair.presets import PRESETS
from ccfair.presets.base import REPETITIONS
from ccfair.spec.sweep import PRESET_NAMES, Sweep


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ccfair", *args], capture_output=True, text=True)


def test_a_sweep_may_name_exactly_the_presets():
    """The spec sits below the presets, so a sweep checks its ``preset`` against a list of
    names of its own: the list must be the presets, in their order (the error lists them)."""
    assert PRESET_NAMES == tuple(PRESETS)
    for name in PRESETS:
        sw = Sweep.from_dict(
            {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "preset": name}
        )
        assert sw.preset == name
    with pytest.raises(SpecError, match=r'preset: "harada-dumbel" is not a preset; did you mean'):
        Sweep.from_dict(
            {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "preset": "harada-dumbel"}
        )


#: Each study's testbed and host kernel (what the papers state; docs/experiments.md, "The
#: studies' testbeds", and the presets' setup tables for what they leave open).
STUDY_HOSTS = {
    "harada-dumbbell": ("core-netem", "6.18"),
    "harada-2hop": ("core-netem", "6.18"),
    "harada-10hop": ("core-netem", "6.18"),
    "ogino-copa": ("mininet-netem", "4.15"),
    "ogawa-bbr-fairness": ("linux-stock", "6.18"),
    "katsumata-rtprop": ("linux-stock", "4.13"),
    "harada-aqm": ("linux-stock", "6.18"),
}


@pytest.mark.parametrize("name", list(PRESETS))
def test_full_grids_run_on_the_studys_testbed_and_no_network_twice(name):
    preset = PRESETS[name]
    points = preset.sweep().expand()
    testbed, kernel = STUDY_HOSTS[name]
    specs: dict[str, str] = {}
    bbr_flows = 0
    for p in points:
        spec = dict(p.scenario.resolve().normalized)
        assert (spec["testbed"], spec["kernel"]) == (testbed, kernel), p.params
        # The hosts' kernel chooses BBR's version: 4.13 and 4.15 have no extra_acked and
        # refresh min_rtt on equal samples; 6.18 (and the 5.x kernels it stands for) has both.
        for f in spec["flows"]:
            if f["cca"] == "bbr":
                bbr_flows += 1
                params = f["cca_params"]
                assert params["version"] == f"linux-{kernel}", (name, p.params)
                assert params["extra_acked"] is (kernel == "6.18")
                assert params["min_rtt_refresh_on_equal"] is (kernel != "6.18")
        if testbed.endswith("netem"):
            assert all(link["queue"] == "netem" for link in spec["links"])
        # Two grid points never describe one network (only the seed tells repetitions apart).
        spec.pop("seed")
        key = json.dumps(spec, sort_keys=True)
        label = json.dumps(p.params, sort_keys=True)
        assert specs.setdefault(key, label) == label, f"{label} and {specs[key]} are one network"
    assert bbr_flows > 0
    assert len(specs) * preset.full["repetitions"] == len(points)
    assert preset.full["repetitions"] == REPETITIONS >= 5


def test_a_testbed_or_kernel_given_replaces_the_studys_or_becomes_an_axis():
    preset = PRESETS["ogino-copa"]
    one = preset.sweep(quick=True, testbeds=["ideal"]).expand()
    assert {p.scenario.resolve().normalized["testbed"] for p in one} == {"ideal"}
    # The study's kernel stays: on idealised hosts it names the algorithms' versions.
    assert {p.scenario.resolve().normalized["kernel"] for p in one} == {"4.15"}
    both = preset.sweep(quick=True, testbeds=["ideal", "mininet-netem"], kernels=["6.18"])
    assert both.name == "ogino-copa-quick-6.18-ideal-mininet-netem"
    points = both.expand()
    assert {p.params["testbed"] for p in points} == {"ideal", "mininet-netem"}
    assert {p.scenario.resolve().normalized["kernel"] for p in points} == {"6.18"}


def test_katsumata_runs_the_loss_trigger_as_a_variant():
    variants = PRESETS["katsumata-rtprop"].full["grid"]["params.bbr"]
    loss = variants["forced-expire-2.4-loss"]
    assert loss["rtprop_trigger"] == "rtt_ratio_or_loss"
    assert loss["rate_th"] == 2.4 and loss["rtprop_action"] == "expire"
    assert variants["forced-expire-2.4"]["rtprop_trigger"] == "rtt_ratio"
    # Every link parameter the studies leave open is a row of the setup table, with a reason.
    rows = {r.item: r for r in PRESETS["katsumata-rtprop"].setup}
    for item in ("bottleneck", "buffer", "duration"):
        assert rows[item].study.startswith("not"), item
        assert rows[item].ccfair and (rows[item].why or item == "duration")


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_states_its_setup(name):
    preset = PRESETS[name]
    items = {r.item for r in preset.setup}
    need = {"topology", "bottleneck", "buffer", "duration", "repetitions"}
    assert need | {"testbed", "host kernel", "algorithm versions", "TCP"} <= items
    # One name per concept: nothing is called a profile any more.
    assert not any("profile" in r.item for r in preset.setup)
    for row in preset.setup:
        assert row.study and row.ccfair, row
        if row.study.startswith("not"):  # ccfair chose: say what and, mostly, why
            assert row.ccfair
    assert preset.headline, "no headline figure"


def test_reproduce_takes_a_number_of_repetitions(tmp_path):
    out = cli(
        "reproduce",
        "harada-10hop",
        "--quick",
        "--repetitions",
        "1",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "sweep.json").read_text())
    assert record["sweep"]["repetitions"] == 1 and len(record["run_ids"]) == 2
    out = cli("reproduce", "harada-10hop", "--quick", "--repetitions", "0")
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --repetitions: 0 is not a positive integer"


def _report_of(tmp_path, grid) -> str:
    spec = tmp_path / "s.toml"
    lines = [
        'name = "chk"',
        "[base]",
        'builder = "dumbbell"',
        "n_flows = 1",
        'ccas = "bbr"',
        'duration = "3s"',
        "[grid]",
        *grid,
    ]
    spec.write_text("\n".join(lines) + "\n")
    root = tmp_path / "r"
    out = cli("sweep", str(spec), "--out", str(root), "--quiet")
    assert out.returncode == 0, out.stderr
    out = cli("report", str(root), "--quiet")
    assert out.returncode == 0, out.stderr
    page = (root / "report.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<(?!h2 )[^>]+>", "", page))


def test_report_says_when_the_buffer_never_filled(tmp_path):
    # A lone BBR flow keeps at most about 2 BDP in flight: 4 and 8 BDP buffers never fill,
    # so the two points are one network and their runs are identical, for a stated reason.
    page = _report_of(tmp_path, ["alpha = [4, 8]"])
    summary = page.split('id="summary"')[1].split('id="setup"')[0]
    assert "The buffer never filled in any repetition at 2 point(s)" in summary
    assert "1 group(s) of runs of one seed ended bit-identical" in summary
    assert "because the buffer never filled" in summary
    assert "for no reason" not in summary


def test_report_warns_of_runs_identical_for_no_reason(tmp_path):
    # F-RTO only acts after a timeout; a lone BBR flow in a deep buffer has none, so both
    # points give the same run, and nothing ccfair knows explains it: a warning.
    page = _report_of(tmp_path, ["alpha = [8]", '"tcp.frto" = [true, false]'])
    summary = page.split('id="summary"')[1].split('id="setup"')[0]
    assert "1 group(s) of runs ended identical for no reason ccfair can see" in summary


def test_harada_aqm_asks_for_ecn_exactly_with_codel_and_never_pools_queues(tmp_path):
    """harada-aqm: fq_codel behind stock hosts, CoDel with ECN behind hosts that ask for it;
    every figure is drawn per queue discipline."""
    from ccfair.execution.sweeps import run_sweep
    from ccfair.results.directory import Results

    preset = PRESETS["harada-aqm"]
    seen = set()
    for p in preset.sweep(quick=True).expand():
        r = p.scenario.resolve()
        bn = r.link("bottleneck")
        ecn = {f.tcp["ecn"] for f in r.flows}
        seen.add((bn.queue, bn.qdisc["ecn"], *ecn))
    assert seen == {("fq_codel", True, 2), ("codel", True, 1)}
    # A small grid of the preset (one delay, two buffers, one repetition, 3 s runs).
    d = preset.sweep_dict(quick=True, repetitions=1)
    d["base"] = {**d["base"], "duration": "3s"}
    d["grid"] = {**d["grid"], "delay": ["2ms"]}
    run_sweep(Sweep.from_dict(d), tmp_path, workers=1, progress=False)
    res = Results(tmp_path)
    figs = preset.figures(res)
    names = [n for n, _, _ in figs]
    for queue in ("fq_codel", "codel-ecn"):
        for pair in ("reno-bbr", "cubic-bbr", "reno-cubic"):
            assert f"heatmap-{queue}-{pair}" in names
    assert set(preset.headline) <= set(names)
    for name, _, fig in figs:
        if name.startswith("heatmap-"):
            queue = "codel+ecn" if "codel-ecn" in name else "fq_codel"
            assert f"(bottleneck_queue {queue})" in fig.get_suptitle(), name
    # The panels of the curves are per queue and pair: never one panel for two queues.
    curves = [f for n, _, f in figs if n in ("jain_index-vs-alpha", "sojourn-p95-vs-buffer")]
    assert len(curves) == 2
    for fig in curves:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert len(titles) == 6 and all(t.startswith("queue ") for t in titles), titles
