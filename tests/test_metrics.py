"""Metrics over a results directory and the Ware et al. model, checked against the raw tables
and against the formulas computed here independently."""

from __future__ import annotations

import math
import subprocess
import sys

import ccfair
import numpy as np
import pandas as pd
import pytest
from ccfair.analysis.models import model_table, ware_full_share, ware_p, ware_simple_share
from ccfair.analysis.stats import ci95, summarize, t_quantile
from ccfair.execution.sweeps import run_sweep
from ccfair.results.directory import Results
from ccfair.spec.sweep import Sweep
from ccfair.spec.topology import bottlenecks


@pytest.fixture(scope="module")
def res(tmp_path_factory) -> Results:
    root = tmp_path_factory.mktemp("metrics") / "r"
    sw = Sweep.from_dict(
        {
            "name": "m",
            "base": {
                "builder": "dumbbell",
                "duration": "8s",
                "bottleneck_delay": "18ms",
                "sample_interval": "100ms",
            },
            "grid": {"ccas": [["reno", "bbr"], ["reno", "cubic"]], "alpha": [1, 4]},
            "repetitions": 3,
            "baselines": True,
        }
    )
    outcome = run_sweep(sw, root, workers=2, progress=False, log=lambda m: None)
    assert outcome.complete
    return Results(root)


def test_t_quantiles_match_the_textbook_table():
    # Two-sided 95% critical values of Student's t (any statistics table).
    for df, value in [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042)]:
        assert t_quantile(0.975, df) == pytest.approx(value, abs=6e-4)
    assert t_quantile(0.975, 100000) == pytest.approx(1.960, abs=1e-3)


def test_ci95_is_t_times_standard_error():
    x = [3.0, 5.0, 4.0, 8.0]
    se = np.std(x, ddof=1) / math.sqrt(4)
    assert ci95(x) == pytest.approx(t_quantile(0.975, 3) * se)
    assert math.isnan(ci95([1.0]))
    s = summarize(pd.DataFrame({"k": [1, 1, 1, 1], "v": x}), ["k"], ["v"])
    assert s.loc[0, "v"] == pytest.approx(5.0) and s.loc[0, "n"] == 4


def test_points_list_grid_labels_and_baselines(res):
    pts = res.points()
    assert res.grid_keys == ["ccas", "alpha"]
    grid = pts[pts["baseline"].isna()]
    assert len(grid) == 2 * 2 * 3
    assert sorted(pts["baseline"].dropna().unique()) == ["bbr", "cubic", "reno"]
    assert list(grid["alpha"].unique()) == [1, 4]  # labels as written


def test_run_metrics_agree_with_the_raw_tables(res):
    runs = res.run_metrics()
    flows = res.table("flows")
    links = res.table("link_summary")
    for _, row in runs.iterrows():
        f = flows[flows["run_id"] == row["run_id"]]
        x = f["goodput_mbps"].to_numpy()
        assert row["jain_index"] == pytest.approx(x.sum() ** 2 / (len(x) * (x * x).sum()))
        assert row["goodput_mbps"] == pytest.approx(x.sum())
        shares = [row[f"{c}_share_frac"] for c in f["cca"].unique()]
        assert sum(shares) == pytest.approx(1.0)
        bn = links[
            (links["run_id"] == row["run_id"])
            & (links["link_name"] == "bottleneck")
            & (links["direction"] == "ab")
        ].iloc[0]
        assert row["bottleneck"] == "bottleneck:ab"
        assert row["utilisation_frac"] == pytest.approx(bn["utilisation_frac"])
        assert row["loss_frac"] == pytest.approx(
            (bn["drop_queue_pkts"] + bn["drop_random_pkts"]) / bn["arrival_pkts"]
        )
        # Queue wait: sojourn minus one 1500-byte serialisation at 50 Mbit/s (240 us).
        assert row["queue_wait_mean_ms"] == pytest.approx(bn["sojourn_mean_ms"] - 0.24)
        assert 0 < row["utilisation_frac"] <= 1


def test_point_summary_is_the_mean_and_ci_over_repetitions(res):
    runs = res.run_metrics()
    summary = res.point_summary(runs, ["bbr_share_frac"])
    point = summary[(summary["ccas"] == "reno-bbr") & (summary["alpha"] == 4)].iloc[0]
    reps = runs[(runs["ccas"] == "reno-bbr") & (runs["alpha"] == 4) & runs["baseline"].isna()]
    assert len(reps) == 3 and point["n"] == 3
    assert point["bbr_share_frac"] == pytest.approx(reps["bbr_share_frac"].mean())
    assert point["bbr_share_frac_ci95"] == pytest.approx(
        t_quantile(0.975, 2) * reps["bbr_share_frac"].std(ddof=1) / math.sqrt(3)
    )
    # BBR's random start phase makes the seeds differ; Reno and CUBIC alone do not.
    assert point["bbr_share_frac_ci95"] > 0


def test_per_cca_table_sums_flows_of_each_algorithm(res):
    ccas = res.ccas()
    base = ccas[ccas["baseline"] == "reno"]
    assert (base["flow_count"] == 2).all()
    assert base["share_frac"].to_numpy() == pytest.approx(1.0)
    assert set(base["ccas"]) == {"reno-reno"}
    mixed = ccas[ccas["baseline"].isna()]
    assert mixed.groupby("point_index")["share_frac"].sum().to_numpy() == pytest.approx(1.0)


def test_harm_is_relative_to_the_own_kind_baseline(res):
    harm = res.harm()
    flows = res.table("flows")
    pts = res.points()
    assert set(harm["incumbent"]) == {"reno", "bbr", "cubic"}
    assert len(harm) == 2 * 2 * 2 * 3  # two incumbents per mixed run
    for _, h in harm.iterrows():
        # Find the baseline independently, through sweep.json's labels.
        b = pts[
            (pts["baseline"] == h["incumbent"])
            & (pts["alpha"] == h["alpha"])
            & (pts["rep"] == h["rep"])
        ]
        assert list(b["run_id"]) == [h["baseline_run_id"]]
        mine = flows[(flows["run_id"] == h["run_id"]) & (flows["cca"] == h["incumbent"])]
        base = flows[
            (flows["run_id"] == h["baseline_run_id"]) & flows["flow_name"].isin(mine["flow_name"])
        ]
        with_, alone = mine["goodput_mbps"].sum(), base["goodput_mbps"].sum()
        assert h["harm_goodput_frac"] == pytest.approx((alone - with_) / alone)
        rtt_with, rtt_base = mine["rtt_mean_ms"].mean(), base["rtt_mean_ms"].mean()
        assert h["harm_rtt_frac"] == pytest.approx((rtt_with - rtt_base) / rtt_with)


def test_harm_is_empty_without_baselines(tmp_path):
    sw = Sweep.from_dict(
        {"base": {"builder": "dumbbell", "duration": "2s"}, "grid": {"ccas": [["reno", "cubic"]]}}
    )
    run_sweep(sw, tmp_path, progress=False, log=lambda m: None)
    assert Results(tmp_path).harm().empty


def test_bottlenecks_of_a_parking_lot_are_its_hops():
    import ccfair

    spec = ccfair.parking_lot(3, "reno", "cubic").resolve().normalized
    assert bottlenecks(spec) == [("L1", "ab"), ("L2", "ab"), ("L3", "ab")]


def test_ware_formulas_follow_the_equations():
    c, l_s, n = 50e6 / 12000, 0.040, 1
    for q in (80.0, 167.0, 333.0, 667.0, 2667.0):
        x = q / (c * l_s)
        p = max(0.0, 0.5 - 1 / (2 * x) - 4 * n / q)
        assert ware_p(x, n, q) == pytest.approx(p)
        probe = (q / c + 0.2 + l_s) / 10
        assert ware_full_share(c, l_s, q, n) == pytest.approx((1 - p) * (1 - probe))
        assert ware_simple_share(x) == pytest.approx(min(1.0, 0.5 + 1 / (2 * x)))
    # Shallow buffers: p < 0, BBR takes everything (but for PROBE_RTT); deep: towards 1/2.
    assert ware_p(0.5, 1, 83) == 0.0 and ware_simple_share(0.5) == 1.0
    shares = [ware_simple_share(x) for x in (1, 2, 4, 8, 16, 64)]
    assert shares == sorted(shares, reverse=True) and shares[-1] > 0.5


def test_model_table_covers_only_bbr_against_loss_based(res):
    model = model_table(res)
    assert set(model["ccas"]) == {"reno-bbr"}
    assert model["baseline"].isna().all()  # bbr-bbr and reno-reno baselines are excluded
    assert len(model) == 2 * 3
    buffers = {1: 167, 4: 667}  # round(alpha x 166.67)
    for _, m in model.iterrows():
        assert m["c_pps"] == pytest.approx(50e6 / 12000)
        assert m["l_s"] == pytest.approx(0.040)
        assert m["q_pkts"] == buffers[m["alpha"]] and m["n_bbr"] == 1 and m["n_loss"] == 1
        assert m["equal_rtt"] and m["sync_start"] and m["stock_bbr"]
        assert m["ware_full"] == pytest.approx(ware_full_share(m["c_pps"], 0.040, m["q_pkts"], 1))
        runs = res.run_metrics().set_index("point_index")
        assert m["measured"] == pytest.approx(runs.loc[m["point_index"], "bbr_share_frac"])


def test_metrics_cli_prints_and_exports(res, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "metrics", str(res.root), "--table", "model"]
        + ["--csv", str(tmp_path / "m.csv")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "m.csv")
    assert len(csv) == 2 and {"measured", "measured_ci95", "ware_full"} <= set(csv.columns)
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "metrics", str(res.root / "nope")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {res.root / 'nope'}: no such results directory"


def test_moving_average_does_not_sag_at_the_ends():
    import numpy as np
    from ccfair.present.timeseries import _smooth

    flat = np.full(20, 40.0)
    assert np.allclose(_smooth(flat, 5), 40.0)
    ramp = np.arange(10, dtype=float)
    out = _smooth(ramp, 3)
    assert out[0] == 0.5 and out[-1] == 8.5 and out[4] == 4.0


@pytest.mark.parametrize(
    ("x", "message"),
    [
        ("ab", 'x: "ab" is not a sequence of numbers'),
        ([[1.0, 2.0], [3.0, 4.0]], "is not a sequence of numbers"),
        ({"flow1": 1.0}, "is not a sequence of numbers"),
        ([1.0, -2.0], "x: -2.0 is negative"),
    ],
)
def test_jain_index_refuses_what_is_not_an_allocation(x, message):
    with pytest.raises(ccfair.SpecError, match=message):
        ccfair.jain_index(x)


def test_jain_index_is_nan_without_an_allocation():
    for x in ([], [0.0, 0.0], [float("nan"), 1.0]):
        assert np.isnan(ccfair.jain_index(x))
    assert ccfair.jain_index([5.0, 0.0]) == 0.5


def test_points_that_share_a_run_each_keep_their_row_and_label(tmp_path):
    # "stock" and bw_rtts = 10 (BBR's default) are one scenario, so one run; and the
    # homogeneous grid point bbr-bbr is also the bbr baseline. points() kept one row per
    # run, so "stock" and the bbr-bbr grid point vanished from every table.
    sw = Sweep.from_dict(
        {
            "name": "shared",
            "base": {"builder": "dumbbell", "duration": "2s", "sample_interval": "100ms"},
            "grid": {
                "ccas": [["reno", "bbr"], ["bbr", "bbr"]],
                "params.bbr": {"stock": {}, "tenrtt": {"bw_rtts": 10}},
            },
            "baselines": True,
        }
    )
    run_sweep(sw, tmp_path, workers=1, progress=False, log=lambda m: None)
    res = Results(tmp_path)
    pts = res.points()
    grid = pts[pts["baseline"].isna()]
    assert sorted(zip(grid["ccas"], grid["params.bbr"], strict=True)) == [
        ("bbr-bbr", "stock"),
        ("bbr-bbr", "tenrtt"),
        ("reno-bbr", "stock"),
        ("reno-bbr", "tenrtt"),
    ]
    assert grid["run_id"].nunique() == 2  # the labels name the same two scenarios
    runs = res.run_metrics()
    assert len(runs[runs["baseline"].isna()]) == 4
    assert set(pts.loc[pts["baseline"].notna(), "baseline"]) == {"reno", "bbr"}
    assert list(pts["point_index"]) == sorted(pts["point_index"])
    # The tables name each point's run under each point's labels; each share adds up to
    # 1 per point (a run shared by two points was counted twice in its total).
    ccas = res.ccas()
    assert ccas.groupby("point_index")["share_frac"].sum().to_numpy() == pytest.approx(1.0)


def test_rep_comes_from_the_sweep_record_in_a_partial_directory(res, tmp_path):
    import shutil

    root = tmp_path / "partial"
    shutil.copytree(res.root, root)
    pts = res.points()
    first = pts[(pts["rep"] == 0) & pts["baseline"].isna()].iloc[0]
    for table in ("runs", "flows", "timeseries", "links", "link_summary"):
        (root / table / f"{first['run_id']}.parquet").unlink()
    later = Results(root).points()
    same_point = later[later["point_key"] == first["point_key"]]
    # Reps 1 and 2 stay 1 and 2 (they were renumbered 0 and 1 by seed rank).
    assert sorted(same_point["rep"]) == [1, 2]
    # The missing run is said, not passed over (metrics printed a partial sweep as whole).
    n = res.n_expected
    assert res.incomplete() is None
    assert f"{n - 1} of {n} runs finished" in Results(root).incomplete()
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "metrics", str(root), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stderr.startswith(f"warning: {root}: {n - 1} of {n} runs finished")
    assert out.stdout.startswith("[")


def test_a_seed_axis_is_a_grid_key_like_any_other(tmp_path):
    # Its label column met the runs table's seed column in a merge: KeyError 'seed_x'.
    sw = Sweep.from_dict(
        {
            "name": "seeds",
            "base": {"builder": "dumbbell", "duration": "1s", "sample_interval": "100ms"},
            "grid": {"alpha": [1, 4], "seed": [1, 2]},
        }
    )
    run_sweep(sw, tmp_path, workers=1, progress=False, log=lambda m: None)
    res = Results(tmp_path)
    runs = res.run_metrics()
    assert sorted(zip(runs["alpha"], runs["seed"], strict=True)) == [(1, 1), (1, 2), (4, 1), (4, 2)]
    summary = res.point_summary(runs, ["goodput_mbps"])
    assert len(summary) == 4 and (summary["n"] == 1).all()
