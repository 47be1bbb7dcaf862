"""The helper scripts refuse absurd arguments in one line (scripts/cpu_gaps.py,
scripts/main_flow_targets.py, scripts/bpf_vs_linux.py, scripts/measure_host_latency.py,
scripts/trace_phase.py, scripts/testbed_table.py, benches/scale_curve.py, benches/first_run.py,
benches/handover_compare.py, benches/build_compare.py, scripts/pgo_train.py,
scripts/install_pgo.sh, benches/estimate_check.py, scripts/katsumata_forced_expire.py,
scripts/aqm_tables.py, scripts/aqm_kernel_tables.py)."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import ccfair
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cpu", "999999"], "--cpu 999999 is not one of"),
        (["--cpu", "-1"], "--cpu -1 is not one of"),
        (["--seconds", "0"], "--seconds 0.0 is not in"),
        (["--seconds", "1e300"], "is not in (0, 3600]"),
    ],
)
def test_cpu_gaps_refuses_absurd_arguments(args, says):
    p = _script("cpu_gaps.py", *args)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("where", ["/nonexistent/study", "/etc"])
def test_main_flow_targets_refuses_a_directory_that_is_no_study(where):
    p = _script("main_flow_targets.py", where)
    assert p.returncode == 2 and "is not a `ccfair validate --out` directory" in p.stderr
    assert "Traceback" not in p.stderr


def test_bpf_vs_linux_refuses_results_of_another_schema_before_any_run(tmp_path):
    # A results directory of an older ccfair: the comparison would run a minute of kernel
    # time and then fail to save it, so it must stop first (and needs no root to do so).
    res = tmp_path / "old" / "results"
    r = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
    r.save(res)
    path = res / "runs" / f"{r.run_id}.parquet"
    pd.read_parquet(path).drop(columns=["schema_version"]).to_parquet(path, index=False)
    p = _script("bpf_vs_linux.py", "--out", str(tmp_path / "old"))
    assert p.returncode == 2 and "schema 1" in p.stderr and "--out NEW" in p.stderr
    assert "Traceback" not in p.stderr and "linux ..." not in p.stderr


def _refused(p: subprocess.CompletedProcess[str], says: str) -> None:
    assert p.returncode == 2, p.stderr
    assert says in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--runs", "0"], "--runs 0 is not a number of runs"),
        (["--runs", "-5"], "--runs -5 is not a number of runs"),
        (["--rate", "fast"], "--rate 'fast'"),
        (["--rate=-10Mbit/s"], "--rate '-10Mbit/s'"),
        (["--duration", "1e300s"], "--duration '1e300s'"),
        (["--from-results", "/nonexistent/results"], "no runs/*.parquet"),
    ],
)
def test_measure_host_latency_refuses_absurd_arguments_before_any_run(args, says):
    _refused(_script("measure_host_latency.py", *args), says)


def test_measure_host_latency_pools_only_reliable_kernel_runs(tmp_path):
    # A simulator run and a damaged file: nothing to pool, said in one line.
    ccfair.run(ccfair.dumbbell(1, "reno", duration="1s")).save(tmp_path)
    (tmp_path / "runs" / "junk.parquet").write_bytes(b"not parquet")
    _refused(
        _script("measure_host_latency.py", "--from-results", str(tmp_path)),
        "no reliable kernel run",
    )


def test_trace_phase_refuses_unknown_links_and_untraced_directories(tmp_path):
    sc = ccfair.dumbbell(2, "cubic", duration="2s")
    r = ccfair.run(sc, trace=["flow1"])
    r.save(tmp_path)
    (tmp_path / "trace").mkdir()
    r.trace.to_parquet(tmp_path / "trace" / f"{r.run_id}.parquet")
    ok = _script("trace_phase.py", "--link", "bottleneck", "--after", "0", str(tmp_path))
    assert ok.returncode == 0 and "flow1" in ok.stdout, ok.stderr
    _refused(_script("trace_phase.py", "--link", "L99", str(tmp_path)), "no link 'L99'")
    _refused(_script("trace_phase.py", "--link", "L2", "/nonexistent"), "no traced runs")


def test_katsumata_forced_expire_reads_traced_runs_and_refuses_other_directories(tmp_path):
    # `bursts` lists the PROBE_RTT exits of a traced run of the loss variant (a 2-s run
    # has its first exit at 0.67 s); the other subcommands refuse what is not their input.
    params = {"rtprop_trigger": "rtt_ratio_or_loss", "rate_th": 2.4, "version": "linux-4.13"}
    sc = ccfair.dumbbell(1, "bbr", buffer_bdp=1, duration="2s", cca_params=params)
    r = ccfair.run(sc, trace=["flow1"])
    r.save(tmp_path)
    (tmp_path / "trace").mkdir()
    r.trace.to_parquet(tmp_path / "trace" / f"{r.run_id}.parquet")
    ok = _script("katsumata_forced_expire.py", "bursts", str(tmp_path))
    assert ok.returncode == 0 and "PROBE_RTT exits" in ok.stdout, ok.stderr
    assert "STARTUP" in ok.stdout
    script = "katsumata_forced_expire.py"
    _refused(_script(script, "bursts", "/nonexistent"), "no traces")
    _refused(_script(script, "figures", str(tmp_path), "--out", str(tmp_path)), "not the results")
    _refused(_script(script, "figures", "/etc", "--out", str(tmp_path)), "not a results directory")
    _refused(_script(script, "kernel", str(tmp_path)), "no such directory")


def test_testbed_table_refuses_what_is_no_testbed_sweep(tmp_path):
    _refused(_script("testbed_table.py", str(tmp_path)), "not a finished sweep")
    (tmp_path / "sweep.json").write_text('{"points": [{"run_id": "x"}]}')
    _refused(_script("testbed_table.py", str(tmp_path)), "not a finished sweep")
    _refused(_script("testbed_table.py", "--top", "0", str(tmp_path)), "--top 0")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--flows", "0"], "--flows: each must be 1 to 100000"),
        (["--flows", "2", "1000000000"], "--flows: each must be 1 to 100000"),
        (["--repeat", "0"], "--repeat: 0 is not a count"),
        (["--repeat", "-3"], "--repeat: -3 is not a count"),
        (["--max-memory-gb", "-1"], "--max-memory-gb: -1.0 is not in"),
        (["--max-memory-gb", "nan"], "--max-memory-gb: nan is not in"),
        (["--max-events", "0"], "--max-events: 0 is not a positive count"),
        (["--out", str(ROOT / "README.md")], "is not a directory"),
    ],
)
def test_scale_curve_refuses_absurd_arguments_before_running_anything(args, says, tmp_path):
    if "--out" not in args:
        args = [*args, "--out", str(tmp_path / "out")]
    p = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "scale_curve.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def _load_bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benches" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_curve_ratio_within_rounds_divides_by_the_same_rounds_base_point():
    sc = _load_bench("scale_curve")
    base = [{"wall_s": 1.0, "packet_hops": 100}, {"wall_s": 2.0, "packet_hops": 100}]
    point = [{"wall_s": 3.0, "packet_hops": 200}, {"wall_s": 3.0, "packet_hops": 100}]
    # Round 1: 15 ns over 10 ns; round 2 (the machine twice as slow): 30 over 20.
    assert sc.round_ratios(point, base) == [1.5, 1.5]
    assert sc.ratio_summary([2.0, 1.0, 4.0, 3.0]) == "2.50 [1.00-4.00]"
    with pytest.raises(ValueError):
        sc.round_ratios(point[:1], base)


def test_scale_curve_table_reports_each_rounds_ratio(tmp_path, monkeypatch, capsys):
    sc = _load_bench("scale_curve")
    fake = tmp_path / "run_spec"
    fake.write_text("")
    monkeypatch.setattr(sc, "RUN_SPEC", fake)
    calls: list[str] = []
    # The 2-flow point, then the 5-flow point, three rounds; the machine slows down halfway
    # through the first round and stays slow: the fastest runs' ratio is 6, each later
    # round's 3.
    walls = [0.1, 0.6, 0.2, 0.6, 0.2, 0.6]

    def fake_run(path, memory_gb, events):
        calls.append(path.name)
        return {
            "wall_s": walls[len(calls) - 1],
            "events": 10,
            "packet_hops": 1000,
            "peak_heap": 4,
            "packet_mb": 0.5,
            "peak_packets": 10,
            "rss_mb": 5.0,
        }

    monkeypatch.setattr(sc, "run_point", fake_run)
    argv = ["scale_curve.py", "--flows", "2", "5", "--no-10g", "--repeat", "3"]
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(tmp_path / "out")])
    assert sc.main() == 0
    # The points in turn within each round, the base point first.
    assert calls == ["scale-1Gbit-2.json", "scale-1Gbit-5.json"] * 3
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("| 5 |"))
    assert "| 6.00 | 3.00 [3.00-6.00] |" in row


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        ("first_run.py", ["/nonexistent", "python"], "old: /nonexistent is not the python"),
        ("first_run.py", ["python", "python", "--rounds", "0"], "--rounds: 0 is not a count"),
        ("first_run.py", ["python", "python", "--rounds", "-7"], "--rounds: -7 is not a count"),
        ("handover_compare.py", ["python", str(ROOT / "README.md")], "new: "),
        ("handover_compare.py", ["python", "python", "--repeat", "10**9"], "invalid int"),
        ("handover_compare.py", ["python", "python", "--repeat", "1000000"], "--repeat: 1000000"),
        ("handover_compare.py", ["python", "python", "--case", "../x"], "--case: '../x' is not"),
    ],
)
def test_tree_comparisons_refuse_absurd_arguments_before_running_anything(script, args, says):
    p = subprocess.run(
        [sys.executable, str(ROOT / "benches" / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["/nonexistent.so"], "build: /nonexistent.so is not a file"),
        (["python"], "build: python is not a file"),
        (["README.md", "--rounds", "0"], "--rounds: 0 is not a count"),
        (["README.md", "--rounds", "-3"], "--rounds: -3 is not a count"),
        (["README.md", "--rounds", "10**9"], "invalid int"),
        (["README.md", "--case", "../x"], "invalid choice"),
        # A file that is not an extension module: one line, after trying to load it.
        (["README.md", "--rounds", "1", "--case", "dumbbell-bbr-vs-cubic-a16"], "did not load"),
    ],
)
def test_build_compare_refuses_absurd_arguments_in_one_line(args, says):
    p = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "build_compare.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_pgo_scripts_refuse_unknown_arguments_before_building_anything():
    train = _script("pgo_train.py", "--digets")
    assert train.returncode == 2 and "usage" in train.stderr, train.stderr
    install = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_pgo.sh"), "--force"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert install.returncode == 2 and "usage" in install.stderr, install.stderr
    assert "==" not in install.stdout  # no step started


def test_estimate_check_finds_the_closest_runs_within_their_estimate():
    # benches/estimate_check.py: exit 1 if a run's measured packet memory or events exceed
    # its estimate; its quick set holds the two grid cases that came closest.
    p = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "estimate_check.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0 and "largest memory ratio" in p.stdout, p.stdout + p.stderr
    bad = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "estimate_check.py"), "--set", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr


def test_aqm_tables_refuses_a_directory_that_is_no_sweep(tmp_path):
    p = _script("aqm_tables.py", str(tmp_path / "nowhere"))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nowhere'} is not a sweep's results directory"
    ]


def test_default_hosts_points_measures_each_point_and_differs_by_testbed():
    """The script's three points run and give values in range; the idealised hosts give
    another Jain index than the default ones at the same seed (the hosts matter)."""
    spec = importlib.util.spec_from_file_location(
        "default_hosts_points", ROOT / "scripts" / "default_hosts_points.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, (build, jain) = module.POINTS[2]
    default = jain(ccfair.run(build(duration="3s", seed=1)))
    ideal = jain(ccfair.run(build(duration="3s", seed=1, testbed="ideal")))
    assert 0.25 <= default <= 1 and 0.25 <= ideal <= 1 and default != ideal
    out = _script("default_hosts_points.py", "--seeds", "1", "--duration", "2s")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[1:]]
    assert [r[0] for r in rows] == ["bbr-40ms-share", "copa-share", "jain-4-bbr"]
    assert all(0 < float(r[2]) <= 1 for r in rows)


def test_revalidate_sim_refuses_what_is_no_study(tmp_path):
    p = _script("revalidate_sim.py", str(tmp_path), "x.toml", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "is not a `ccfair validate` runs table" in p.stderr
    assert "Traceback" not in p.stderr
    p = _script("revalidate_sim.py", "buffers", str(tmp_path), str(tmp_path))
    assert p.returncode == 2 and "is not an output directory" in p.stderr


def _stored_study(tmp_path: Path) -> tuple[Path, Path]:
    """A study directory whose stored runs are the simulator on ideal hosts (at HZ 250, as
    `ccfair validate` ran it) beside made-up kernel shares, and its sweep file."""
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'name = "tiny"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nn_flows = 2\n'
        'bottleneck_rate = "20Mbit/s"\nduration = "3s"\nsample_interval = "10ms"\n'
        '[grid]\nccas = [["reno", "cubic"]]\nalpha = [1, 4]\n'
    )
    spec = importlib.util.spec_from_file_location(
        "revalidate_sim", ROOT / "scripts" / "revalidate_sim.py"
    )
    rs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rs)
    from ccfair.validate.points import sim_variant, validation_points

    rows = []
    for p in validation_points([sweep]):
        sc = sim_variant(rs.with_testbed(p.scenario, "ideal"), 250)
        flows = rs.per_flow(ccfair.run(sc))
        for _, f in flows.iterrows():
            rows.append(
                {"point": p.label, "pair": "reno vs cubic", "rep": p.rep, "flow": f["flow"],
                 "cca": "reno" if f["flow"] == "flow1" else "cubic",
                 "share_sim": f["share_sim"], "goodput_sim_mbps": f["goodput_sim_mbps"],
                 "share_kernel": 0.5, "goodput_kernel_mbps": 10.0, "sim_run_id": "old",
                 "kernel_reliable": p.rep == 0}
            )  # fmt: skip
    study = tmp_path / "study"
    study.mkdir()
    pd.DataFrame(rows).to_csv(study / "validate_runs.csv", index=False)
    return study, sweep


def test_revalidate_sim_joins_the_new_simulator_side_to_the_stored_linux_runs(tmp_path):
    study, sweep = _stored_study(tmp_path)
    # On ideal hosts today's simulator is the stored one: before and after agree exactly.
    ideal = tmp_path / "ideal"
    p = _script(
        "revalidate_sim.py", str(study), str(sweep), "--testbed", "ideal", "--out", str(ideal)
    )
    assert p.returncode == 0, p.stderr
    pts = pd.read_csv(ideal / "validate_points.csv")
    assert len(pts) == 4 and (pts["share_diff"] == pts["share_diff_before"]).all()
    # Kernel means use the reliable run only (rep 0 here), as `ccfair validate` does.
    assert (pts["n_kernel"] == 1).all() and (pts["share_kernel_mean"] == 0.5).all()
    # Under the default hosts the simulator side changes, the stored one is kept beside it.
    new = tmp_path / "new"
    p = _script("revalidate_sim.py", str(study), str(sweep), "--out", str(new))
    assert p.returncode == 0, p.stderr
    runs = pd.read_csv(new / "validate_runs.csv")
    stored = pd.read_csv(study / "validate_runs.csv")
    assert (runs["share_sim_before"].to_numpy() == stored["share_sim"].to_numpy()).all()
    assert (runs["share_sim"] != runs["share_sim_before"]).any()
    assert (runs["inflight_max_sim_pkts"] > 0).all()
    summary = pd.read_csv(new / "summary.csv")
    assert {"median_abs_diff_pp_before", "max_abs_diff_pp_after"} <= set(summary.columns)


def test_bbr_among_bbr_tables_reads_bbr_runs_and_refuses_other_directories(tmp_path):
    # Two seeds of one point (2 BBR flows, RTT 40 and 80 ms, 1 BDP) and one CUBIC run that
    # the study leaves out: jain.csv has that point with n = 2, Jain's median is computed
    # from the flows' goodputs and the flows' shares of a run add up to 1.
    results = tmp_path / "results"
    for seed in (1, 2):
        sc = ccfair.dumbbell(
            2, "bbr", buffer_bdp=1, access_delay=["1ms", "21ms"], duration="2s", seed=seed
        )
        ccfair.run(sc).save(results)
    ccfair.run(ccfair.dumbbell(2, "cubic", buffer_bdp=1, duration="2s")).save(results)
    out = tmp_path / "tables"
    ok = _script("bbr_among_bbr.py", "tables", str(results), "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    jain = pd.read_csv(out / "jain.csv")
    assert len(jain) == 1
    row = jain.iloc[0]
    assert (row.backend, row.n_flows, row.buffer_bdp, row.rtt_ratio) == ("sim", 2, 1.0, 2.0)
    assert row.n_runs == 2 and row.n_flagged == 0
    flows = ccfair.load_table(results, "flows")
    flows = flows[flows.cca == "bbr"]
    by_run = flows.groupby("run_id").goodput_mbps
    expected = (by_run.sum() ** 2 / (2 * by_run.apply(lambda g: (g**2).sum()))).median()
    assert abs(row.jain_median - expected) < 1e-3
    shares = pd.read_csv(out / "shares.csv")
    assert sorted(shares.flow_name) == ["flow1", "flow2"]
    assert abs(shares.share_mean.sum() - 1) < 1e-3
    assert "| 2 | 2R |" in ok.stdout and not (out / "compare.csv").exists()
    _refused(_script("bbr_among_bbr.py", "tables", "/nonexistent", "--out", str(out)), "no such")
    _refused(
        _script("bbr_among_bbr.py", "tables", str(tmp_path), "--out", str(out)), "not a results"
    )


def test_bbr_among_bbr_tables_compares_backends_without_flagged_runs(tmp_path):
    # Runs saved as another backend's (here: simulator runs relabelled "kernel", seeds 3 and
    # 4, the second flagged) are compared point by point: compare.csv has the point with one
    # reliable Linux run and one flagged, and the difference of the medians.
    sim_dir, linux_dir = tmp_path / "sim", tmp_path / "linux"
    sc = {"buffer_bdp": 0.5, "duration": "2s"}
    for seed in (1, 2):
        ccfair.run(ccfair.dumbbell(2, "bbr", seed=seed, **sc)).save(sim_dir)
    linux_jain = []
    for seed, reliable in ((3, True), (4, False)):
        r = ccfair.run(ccfair.dumbbell(2, "bbr", seed=seed, **sc))
        r.runs.loc[:, "backend"] = "kernel"
        r.runs.loc[:, "reliable"] = reliable
        g = r.flows.goodput_mbps
        linux_jain.append(g.sum() ** 2 / (len(g) * (g**2).sum()))
        r.save(linux_dir)
    out = tmp_path / "tables"
    ok = _script("bbr_among_bbr.py", "tables", str(sim_dir), str(linux_dir), "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    comp = pd.read_csv(out / "compare.csv")
    assert len(comp) == 1
    row = comp.iloc[0]
    assert (row.n_sim, row.n_linux, row.n_linux_flagged) == (2, 1, 1)
    assert abs(row.jain_median_linux - linux_jain[0]) < 1e-3  # the flagged run left out
    assert abs(row.jain_diff - (row.jain_median_linux - row.jain_median_sim)) < 1e-9
    assert row.sim_median_of_n_low <= row.sim_median_of_n_high
    within = row.sim_median_of_n_low <= row.jain_median_linux <= row.sim_median_of_n_high
    assert row.linux_within_sim_spread == within
    assert 0 <= row.chance_as_far <= 1
    assert "Target (median within 0.05)" in ok.stdout and "95% spread" in ok.stdout
    # The comparison's Markdown row of the point: 2 flows, equal RTTs, 0.5 BDP, n 2 and (1, 1).
    assert f"| 2 | equal | 0.5 | {row.jain_median_sim:.2f} (2; " in ok.stdout
    assert f"| {row.jain_median_linux:.2f} (1, 1) |" in ok.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--repetitions", "0"], "--repetitions 0 is not in [1, 1000]"),
        (["--repetitions", "100000000"], "--repetitions 100000000 is not in [1, 1000]"),
        (["--workers", "-1"], "--workers -1 is not in [1, 256]"),
    ],
)
def test_bbr_among_bbr_seeds_refuses_absurd_arguments_before_any_run(tmp_path, args, says):
    out = _script("bbr_among_bbr.py", "seeds", *args, "--out", str(tmp_path / "r"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert says in out.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "r").exists()


def test_bbr_among_bbr_seeds_refuses_a_results_directory_that_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = _script("bbr_among_bbr.py", "seeds", "--repetitions", "1", "--out", str(blocker))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert str(blocker) in out.stderr and blocker.read_text() == "not a directory"


def test_bbr_among_bbr_median_of_n_spread_is_the_chance_spread_of_a_few_runs():
    # Ten simulator runs 0.70, 0.71, ..., 0.79: the median of 3 of them lies between 0.71 and
    # 0.78 in 95% of the 120 subsets; a Linux median at the center is as far as every subset's
    # (chance 1), one beyond every subset's median is never reached (chance 0).
    m = _load_script("bbr_among_bbr")
    sim = [0.70 + 0.01 * i for i in range(10)]
    low, high = m.median_of_n_spread(sim, 3)
    assert 0.71 <= low < 0.73 and 0.76 < high <= 0.78
    assert m.chance_of_median_as_far(sim, 3, 0.745) == 1.0
    assert m.chance_of_median_as_far(sim, 3, 0.60) == 0.0
    assert 0 < m.chance_of_median_as_far(sim, 3, 0.72) < 0.5
    # Too few runs for a median of 3: no spread, no chance.
    assert all(math.isnan(x) for x in m.median_of_n_spread(sim[:2], 3))
    assert math.isnan(m.chance_of_median_as_far(sim[:2], 3, 0.7))
    # Beyond MAX_SUBSETS subsets a fixed sample is drawn: same answer twice, close to exact.
    many = [i / 30 for i in range(30)]
    exact = m.median_of_n_spread(many, 3)  # all 4,060 subsets
    m.MAX_SUBSETS = 1_000
    sampled = m.median_of_n_spread(many, 3)
    assert sampled != exact and sampled == m.median_of_n_spread(many, 3)
    assert abs(sampled[0] - exact[0]) < 0.05 and abs(sampled[1] - exact[1]) < 0.05


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--seeds", "0"], "--seeds 0 is not in [1, 100]"),
        (["--seeds", "-5"], "--seeds -5 is not in [1, 100]"),
        (["--seeds", "10000000"], "--seeds 10000000 is not in [1, 100]"),
        (["--duration", "-1s"], "duration"),
        (["--duration", "x" * 5000], "duration"),
        (["--testbed", "nowhere"], "testbed"),
        (["--backend", "carrier-pigeon"], "backend"),
    ],
)
def test_default_hosts_points_refuses_absurd_arguments_before_any_run(args, says):
    out = _script("default_hosts_points.py", *args)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert says in line and len(line) < 1000 and out.stdout == ""


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bbr_among_bbr_last_other_flow_is_the_latest_earlier_packet_of_another_flow():
    import numpy as np

    m = _load_script("bbr_among_bbr")
    t_ns = np.array([0, 5, 7, 100, 101])
    flow = np.array(["a", "b", "a", "b", "c"])
    got = m._last_other_flow_ns(t_ns, flow)
    assert got[0] == -np.inf
    assert list(got[1:]) == [0, 5, 7, 100]


@pytest.mark.parametrize(("lower_first", "expected"), [(True, 1.0), (False, 0.0)])
def test_bbr_among_bbr_ingress_order_sees_which_flow_a_pass_stamps_first(lower_first, expected):
    # Ten passes of a forwarder over two senders, 1 us apart within a pass and 500 us
    # between passes: the 0-3 us pairs come lower-numbered flow first, or never.
    m = _load_script("bbr_among_bbr")
    rows = []
    for i in range(10):
        first, second = (0, 1) if lower_first else (1, 0)
        for k, f in enumerate((first, second)):
            rows.append(
                {"t_ns": i * 500_000 + k * 1_000, "flow": f, "hop": 0}
                | {"kind": "data", "event": "enqueue"}
            )
    r = type("R", (), {"trace": pd.DataFrame(rows)})()
    order = m.ingress_order(r).set_index("gap_us")
    assert order.loc["0-3", "pairs"] == 10
    assert order.loc["0-3", "lower_first_frac"] == expected
    assert order.loc["100-inf", "pairs"] == 9  # between passes


def test_bbr_among_bbr_arrivals_compares_traced_runs_and_refuses_untraced(tmp_path):
    point = ROOT / "docs" / "validation" / "bbr-among-bbr" / "mechanism-point.toml"
    results = tmp_path / "sim"
    traced = [a for i in range(1, 5) for a in ("--trace", f"flow{i}")]
    run = subprocess.run(
        [sys.executable, "-m", "ccfair", "run", str(point), "--duration", "3s", *traced]
        + ["--out", str(results)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = tmp_path / "out"
    ok = _script("bbr_among_bbr.py", "arrivals", str(results), "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    flows = pd.read_csv(out / "arrivals_flows.csv")
    assert sorted(flows.flow) == [1, 2, 3, 4]
    for col in ("lead_behind_frac", "drop_lead_clear", "lossy_window_frac"):
        assert flows[col].between(0, 1).all(), col
    assert (flows.burst_pkts >= 1).all() and (flows.loss_ratio > 0).all()
    # The excess of the races is measured against the run's own mean: it sums to about 0.
    assert abs(flows.race_excess_loss.sum()) < 0.01
    order = pd.read_csv(out / "arrivals_order.csv")
    assert abs(order.pairs_frac.sum() - 1) < 1e-3  # written with 4 decimals
    assert (out / "arrivals.png").stat().st_size > 0
    untraced = tmp_path / "untraced"
    ccfair.run(ccfair.dumbbell(2, "bbr", duration="1s")).save(untraced)
    _refused(_script("bbr_among_bbr.py", "arrivals", str(untraced), "--out", str(out)), "no traced")


def test_bbr_among_bbr_timing_splits_linux_runs_and_runs_the_timing_variants(tmp_path):
    # Two runs of the timing point saved as Linux's (one passed the self-checks, one
    # flagged) beside a 2-BDP run of the same flows that is not the point: timing_point.csv
    # has them as two groups, one run each, and one run per simulator variant, every
    # Jain's index within (1/8, 1] and each time window of 1 s present.
    linux = tmp_path / "linux"
    delays = ["1ms"] * 4 + ["61ms"] * 4
    for seed, reliable, bdp in ((1, True, 0.5), (2, False, 0.5), (3, True, 2)):
        sc = ccfair.dumbbell(
            8, "bbr", buffer_bdp=bdp, access_delay=delays, duration="2s", seed=seed
        )
        r = ccfair.run(sc)
        r.runs.loc[:, "backend"] = "kernel"
        r.runs.loc[:, "reliable"] = reliable
        r.save(linux)
    out = tmp_path / "out"
    args = ("--seeds", "1", "--duration", "2s", "--out", str(out))
    ok = _script("bbr_among_bbr.py", "timing", str(linux), *args)
    assert ok.returncode == 0, ok.stderr
    table = pd.read_csv(out / "timing_point.csv")
    groups = table.groupby("group").size()
    assert groups["Linux, passed the self-checks"] == 1
    assert groups["Linux, flagged (host stalls)"] == 1
    assert len(groups) == 6 and (groups == 1).all()
    assert table.jain.between(1 / 8, 1).all() and table.long_half_share.between(0, 1).all()
    assert table["0-2 s"].between(1 / 8, 1).all()
    assert table.largest_share.between(1 / 8, 1).all()
    assert (out / "timing_point.png").stat().st_size > 0
    assert "| simulator, exact host timing | 1 |" in ok.stdout
    # No run of the point, a bad length or a silly number of seeds: one line, nothing run.
    other = tmp_path / "other"
    ccfair.run(ccfair.dumbbell(2, "bbr", duration="1s")).save(other)
    _refused(_script("bbr_among_bbr.py", "timing", str(other), *args), "no kernel run of 8 flows")
    bad = ("--duration", "soon", "--out", str(tmp_path / "bad"))
    _refused(_script("bbr_among_bbr.py", "timing", str(linux), *bad), "--duration 'soon'")
    assert not (tmp_path / "bad").exists()
    seeds = _script("bbr_among_bbr.py", "timing", str(linux), "--seeds", "0", "--out", str(out))
    _refused(seeds, "--seeds 0 is not in [1, 100]")
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    into_file = _script("bbr_among_bbr.py", "timing", str(linux), "--out", str(blocker))
    _refused(into_file, "is not a directory")
    assert blocker.read_text() == "mine"


def _validate_dir(tmp_path: Path) -> Path:
    """A minimal `ccfair validate` output: two points of one pair, the first with a reliable
    and a flagged repetition, the second with one reliable run."""
    point_a = "aqm[ccas=reno-cubic,bottleneck_queue=codel,delay=18ms,alpha=0.5]"
    point_b = "aqm[ccas=reno-cubic,bottleneck_queue=codel,delay=100ms,alpha=16]"
    common = {"pair": "reno vs cubic", "param_bottleneck_queue": "codel", "cca": "reno"}
    runs = [
        {
            **common,
            "point": point_a,
            "rep": 0,
            "param_delay": "18ms",
            "param_alpha": 0.5,
            "share_sim": 0.40,
            "share_kernel": 0.44,
            "kernel_reliable": True,
        },
        {
            **common,
            "point": point_a,
            "rep": 1,
            "param_delay": "18ms",
            "param_alpha": 0.5,
            "share_sim": 0.42,
            "share_kernel": 0.60,
            "kernel_reliable": False,
        },
        {
            **common,
            "point": point_b,
            "rep": 0,
            "param_delay": "100ms",
            "param_alpha": 16,
            "share_sim": 0.30,
            "share_kernel": 0.18,
            "kernel_reliable": True,
        },
    ]
    flows = pd.DataFrame(runs).assign(flow="flow1")
    other = flows.assign(flow="flow2", cca="cubic")
    links = pd.DataFrame(
        [
            {
                "point": r["point"],
                "rep": r["rep"],
                "link": "bottleneck",
                "direction": "ab",
                "sojourn_p50_sim": 1.0,
                "sojourn_p50_kernel": 1.0,
                "sojourn_p95_sim": 6.0,
                "sojourn_p95_kernel": p95,
                "sojourn_p99_sim": 9.0,
                "sojourn_p99_kernel": 9.0,
            }
            for r, p95 in zip(runs, [5.5, 7.0, 10.0], strict=True)
        ]
    )
    pd.concat([flows, other]).to_csv(tmp_path / "validate_runs.csv", index=False)
    links.to_csv(tmp_path / "validate_link_runs.csv", index=False)
    return tmp_path


def test_aqm_kernel_tables_compares_reliable_runs_against_the_targets(tmp_path):
    out = _validate_dir(tmp_path)
    r = _script("aqm_kernel_tables.py", str(out), "--csv", str(tmp_path / "points.csv"))
    assert r.returncode == 0, r.stderr
    pts = pd.read_csv(tmp_path / "points.csv")
    a, b = pts.iloc[0], pts.iloc[1]
    # Reliable runs only: Linux 44% against the simulator's mean 41% over both repetitions.
    assert a["reliable_runs"] == 1 and abs(a["diff_reliable_pp"] - 3.0) < 1e-6
    assert abs(a["diff_all_pp"] - 11.0) < 1e-6  # (44 + 60) / 2 - 41
    assert abs(b["diff_reliable_pp"] + 12.0) < 1e-6
    # Sojourn p95: 6 ms simulated against 5.5 ms on Linux is within 20%; against 10 ms not.
    assert abs(a["sojourn_p95_rel_reliable"] - 0.5 / 5.5) < 1e-3
    assert "| all | all | 2 | 7.5 | 12.0 | 1 of 2 |" in r.stdout
    assert "share targets not met" in r.stdout


def test_aqm_kernel_tables_refuses_a_directory_that_is_no_validate_output(tmp_path):
    r = _script("aqm_kernel_tables.py", str(tmp_path))
    assert r.returncode == 2
    assert "not an output of ccfair validate" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "validate_runs.csv").write_text("point,rep\nx,0\n")
    (tmp_path / "validate_link_runs.csv").write_text("point,rep\nx,0\n")
    r = _script("aqm_kernel_tables.py", str(tmp_path))
    assert r.returncode == 2
    assert "lack what this needs" in r.stderr and "Traceback" not in r.stderr
