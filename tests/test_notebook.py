"""Numbers as a notebook has them: numpy scalars wherever a quantity or count is, the
algorithm and a parking-lot flow's role in the tables, numeric grid coordinates (also in
xarray), the tables of a results directory named as one run's, one meaning per column name,
percentiles over repetitions, and the stability of each flow's goodput."""

from __future__ import annotations

import ccfair
import numpy as np
import pandas as pd
import pytest
from ccfair.errors import SpecError
from ccfair.spec.sweep import Sweep

# ---- numpy scalars ----------------------------------------------------------------------


def test_builders_take_numpy_scalars_as_the_numbers_they_are():
    """Before: decimal.InvalidOperation for floats, "not an integer" for np.int64."""
    plain = ccfair.dumbbell(
        2, "reno", bottleneck_delay=0.01, duration=2.0, seed=3, buffer_bdp=2.0
    ).resolve()
    numpy = ccfair.dumbbell(
        np.int64(2),
        "reno",
        bottleneck_delay=np.float64(0.01),
        duration=np.float64(2.0),
        seed=np.int64(3),
        buffer_bdp=np.float32(2.0),
    ).resolve()
    assert numpy.normalized == plain.normalized
    lot = ccfair.parking_lot(np.int64(2), delay=np.float64(0.005), duration=np.int32(2))
    assert (
        lot.resolve().normalized
        == ccfair.parking_lot(2, delay=0.005, duration=2).resolve().normalized
    )


def test_scenario_dicts_take_numpy_scalars():
    spec = {
        "duration": np.float64(1.5),
        "seed": np.int64(4),
        "links": [{"between": ["a", "b"], "rate": np.float64(1e7), "delay": np.float64(0.005)}],
        "flows": [{"src": "a", "dst": "b", "cca": "reno"}],
    }
    sc = ccfair.Scenario.from_dict(spec)
    assert (sc.duration, sc.seed) == (1_500_000_000, 4)


def test_sweep_grids_take_numpy_arrays_and_scalars():
    """Before: an array was "not a list of values", np.float64 delays a raw
    InvalidOperation, np.int64 counts a raw TypeError (not JSON serializable)."""
    sweep = Sweep.from_dict(
        {
            "name": "np",
            "base": {"builder": "dumbbell", "duration": np.float64(1.0)},
            "grid": {
                "alpha": np.linspace(1, 2, 2),
                "delay": list(np.array([0.002, 0.018])),
                "n_flows": np.arange(1, 3),
                "seed": [np.int64(1), np.int64(2)],
            },
            "repetitions": np.int64(1),
        }
    )
    same = Sweep.from_dict(
        {
            "name": "np",
            "base": {"builder": "dumbbell", "duration": 1.0},
            "grid": {
                "alpha": [1.0, 2.0],
                "delay": [0.002, 0.018],
                "n_flows": [1, 2],
                "seed": [1, 2],
            },
        }
    )
    assert [p.run_id for p in sweep.expand()] == [p.run_id for p in same.expand()]


def test_a_numpy_bool_is_no_count():
    with pytest.raises(SpecError, match="n_flows"):
        ccfair.dumbbell(np.bool_(True), "reno")


# ---- columns of the tables ----------------------------------------------------------------


def test_time_series_and_flows_name_the_algorithm_and_the_parking_lot_role(tmp_path):
    r = ccfair.run(ccfair.parking_lot(2, "bbr", "cubic", duration="2s", sample_interval="100ms"))
    flows = r.flows.set_index("flow_name")
    assert flows["role"].to_dict() == {"main": "main", "cross1": "cross", "cross2": "cross"}
    assert flows["bottleneck_hop"].tolist()[1:] == [1, 2]
    assert pd.isna(flows.loc["main", "bottleneck_hop"])
    ts = r.timeseries
    by_flow = ts.groupby("flow_name")[["cca", "role"]].agg(set)
    assert by_flow["cca"].to_dict() == {"main": {"bbr"}, "cross1": {"cubic"}, "cross2": {"cubic"}}
    assert by_flow["role"].to_dict() == {"main": {"main"}, "cross1": {"cross"}, "cross2": {"cross"}}
    # The files keep the schema's columns; reading them back gives the same tables.
    r.save(tmp_path)
    back = ccfair.load(tmp_path)
    pd.testing.assert_frame_equal(back.timeseries, r.timeseries)
    pd.testing.assert_frame_equal(back.flows, r.flows)
    res = ccfair.Results(tmp_path)
    assert set(res.timeseries["cca"]) == {"bbr", "cubic"}
    assert res.flows["role"].tolist() == r.flows["role"].tolist()
    dumbbell = ccfair.run(ccfair.dumbbell(2, "reno", duration="1s"))
    assert dumbbell.flows["role"].tolist() == ["", ""]


def test_flows_report_the_stability_of_their_one_second_goodput():
    r = ccfair.run(ccfair.dumbbell(2, ["bbr", "cubic"], duration="5s", sample_interval="100ms"))
    ts = r.timeseries
    for _, flow in r.flows.iterrows():
        samples = ts[ts["flow"] == flow["flow"]].sort_values("t_s")
        # 100 ms samples of goodput since the previous sample: ten make a second.
        per_s = samples["goodput_mbps"].to_numpy().reshape(5, 10).mean(axis=1)
        assert flow["goodput_1s_cv"] == pytest.approx(per_s.std() / per_s.mean())
        swing = np.percentile(per_s, 95) - np.percentile(per_s, 5)
        assert flow["goodput_1s_swing_mbps"] == pytest.approx(swing)


def test_a_stopped_flows_stability_counts_the_seconds_it_ran():
    sc = ccfair.Scenario.from_dict(
        {
            "duration": "5s",
            "sample_interval": "100ms",
            "links": [{"between": ["a", "b"], "rate": "20Mbit/s", "delay": "5ms"}],
            "flows": [
                {"name": "short", "src": "a", "dst": "b", "cca": "cubic", "stop": "2s"},
                {"name": "long", "src": "a", "dst": "b", "cca": "cubic"},
            ],
        }
    )
    r = ccfair.run(sc)
    ts = r.timeseries[r.timeseries["flow_name"] == "short"].sort_values("t_s")
    per_s = ts["goodput_mbps"].to_numpy()[:20].reshape(2, 10).mean(axis=1)
    short = r.flows.set_index("flow_name").loc["short"]
    assert short["goodput_1s_cv"] == pytest.approx(per_s.std() / per_s.mean())


# ---- a results directory's tables -----------------------------------------------------------


def test_results_tables_are_named_as_a_runs(grid3):
    """Before: Results.runs() was a method giving derived metrics with a column `index`."""
    runs = grid3.runs
    assert isinstance(runs, pd.DataFrame)
    assert {"spec_json", "ccfair_version", "ccas", "alpha", "rep"} <= set(runs.columns)
    assert "index" not in runs.columns
    with pytest.raises(TypeError, match="run_metrics"):
        grid3.runs()
    for table in ("flows", "timeseries", "links", "link_summary"):
        frame = getattr(grid3, table)
        raw = grid3.table(table)
        assert len(frame) == len(raw) and set(raw.columns) <= set(frame.columns), table
    metrics = grid3.run_metrics()
    assert {"jain_index", "queue_wait_mean_ms", "goodput_1s_cv"} <= set(metrics.columns)
    assert "qdelay_mean_ms" not in metrics.columns  # the flows' queueing delay, not this


def test_one_meaning_per_column_name(grid3):
    """qdelay_mean_ms was the flows' sampled RTT minus base RTT and, in the run metrics, the
    bottleneck's mean sojourn minus one serialisation."""
    metrics = grid3.run_metrics()
    with pytest.raises(SpecError, match="queue_wait_mean_ms"):
        grid3.point_summary(metrics, ["qdelay_mean_ms"])
    assert "qdelay_mean_ms" in grid3.flows.columns


def test_unknown_columns_are_an_error_naming_the_known_ones(grid3):
    """Before: unknown names were dropped (all unknown: a raw ValueError from pandas)."""
    with pytest.raises(SpecError, match="bbr_share_frac"):
        grid3.point_summary(grid3.run_metrics(), ["share_bbr"])


def test_point_metrics_give_percentiles_over_repetitions(grid3):
    pm = grid3.point_metrics(["jain_index"])
    runs = grid3.run_metrics()
    for _, row in pm.iterrows():
        reps = runs[runs["point_key"] == row["point_key"]]["jain_index"].to_numpy()
        assert row["n"] == len(reps) == 2
        for p in (5, 50, 95):
            assert row[f"jain_index_p{p}"] == pytest.approx(np.percentile(reps, p))
        assert row["jain_index"] == pytest.approx(reps.mean())
    assert "goodput_1s_cv" in grid3.point_metrics().columns


def test_grid_coordinates_are_numbers_alongside_their_labels(grid3):
    """Before: alpha was an object column and xarray's coordinates strings ("4")."""
    pts = grid3.points()
    assert pd.api.types.is_numeric_dtype(pts["alpha"])
    assert sorted(set(pts["delay"])) == ["18ms", "2ms"]  # the labels as written
    assert dict(zip(pts["delay"], pts["delay_ms"], strict=True)) == {"2ms": 2.0, "18ms": 18.0}
    pytest.importorskip("xarray")
    ds = grid3.to_xarray()
    at4 = ds.sel(alpha=4)
    assert at4["jain_index"].shape == (2, 2, 2)  # ccas, delay, rep
    runs = grid3.run_metrics()
    assert float(at4["jain_index"].mean()) == pytest.approx(
        runs[runs["alpha"] == 4]["jain_index"].mean()
    )
    assert ds["delay_ms"].sel(delay="18ms") == 18.0
