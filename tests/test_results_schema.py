"""The results schema (defined once, in Rust), plain reads of a results directory, metrics
grouping by what a run is, delay metrics, and analysis from Python (docs/results.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import ccfair
import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from ccfair.errors import ResultsError
from ccfair.results.compare import CompareWarning
from ccfair.results.directory import Results
from ccfair.store import schema
from ccfair.store.read import load_table
from ccfair.store.schema import TABLES
from kernel_runs import reliable_run

ROOT = Path(__file__).resolve().parents[1]
ALL_TABLES = (*TABLES, "runs")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args], capture_output=True, text=True, cwd=cwd
    )


def _assert_plain_reads_match(root: Path) -> None:
    """pandas, pyarrow.dataset and polars (if installed) read every column of every run."""
    for table in ALL_TABLES:
        ours = load_table(root, table)
        assert list(ours.columns) == schema.names(table), table
        plain = pd.read_parquet(root / table)
        assert list(plain.columns) == schema.names(table), table
        key = ["run_id", *[c for c in ("flow", "link", "direction", "t_ns") if c in ours.columns]]
        a = ours.sort_values(key).reset_index(drop=True)
        b = plain.sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False, check_categorical=False)
        arrow = ds.dataset(root / table, format="parquet").to_table()
        assert arrow.column_names == schema.names(table), table
        assert arrow.num_rows == len(ours)
        if importlib.util.find_spec("polars") is not None:
            import polars as pl

            frame = pl.read_parquet(root / table / "*.parquet")
            assert frame.columns == schema.names(table) and frame.height == len(ours)


def _four_ccas(seconds: str = "3s") -> ccfair.Scenario:
    return ccfair.dumbbell(4, ["reno", "cubic", "bbr", "copa"], duration=seconds, name="four")


def test_a_directory_mixing_all_algorithms_reads_with_plain_pandas_pyarrow_polars(tmp_path):
    root = tmp_path / "mixed"
    ccfair.run(_four_ccas()).save(root)
    ccfair.run(ccfair.dumbbell(2, "cubic", duration="2s", name="cubic-only")).save(root)
    ccfair.run(ccfair.dumbbell(1, "copa", duration="2s", name="copa-only")).save(root)
    _assert_plain_reads_match(root)
    ts = pd.read_parquet(root / "timeseries")
    # Every algorithm's internals survive a plain read, in table units.
    for col in ("cubic_wmax_pkts", "bbr_rtprop_ms", "bbr_btl_bw_mbps", "copa_delta"):
        assert ts[col].notna().any(), col
    bbr = ts[(ts["flow_name"] == "flow3") & ts["bbr_rtprop_ms"].notna()]
    assert bbr["cca_state"].isin(["STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"]).all()
    # Internals of other algorithms are NaN, not zeros.
    assert ts.loc[ts["flow_name"] == "flow1", "bbr_rtprop_ms"].isna().all()
    flows = pd.read_parquet(root / "flows")
    assert flows["cubic_epoch_count"].notna().sum() == 3  # flow2 of "four" and both "cubic-only"
    assert flows["linux_retrans_bytes"].isna().all()  # kernel-only counters on the simulator
    assert flows["bpf_copa_filter_overflow_count"].isna().all()  # ... and the BPF programs'
    assert flows["copa_mode_switch_count"].notna().sum() == 2  # flow4 of "four", "copa-only"


@pytest.mark.kernel
def test_both_backends_and_all_algorithms_in_one_directory(tmp_path, kernel_backend):
    root = tmp_path / "both"
    ccfair.run(_four_ccas()).save(root)
    sc = ccfair.dumbbell(3, ["reno", "cubic", "bbr"], duration="3s", name="k")
    kernel = reliable_run(sc)  # a run its self-checks flag is rerun, never kept
    assert bool(kernel.runs.iloc[0]["reliable"]), kernel.runs.iloc[0]["selfcheck_flags"]
    kernel.save(root)
    _assert_plain_reads_match(root)
    flows = pd.read_parquet(root / "flows")
    runs = pd.read_parquet(root / "runs")
    assert set(runs["backend"]) == {"sim", "kernel"}
    k = flows[flows["run_id"] == kernel.run_id].set_index("flow_name")
    assert k["linux_data_segs_out_pkts"].notna().all()
    assert (k["rtt_p95_ms"] >= k["rtt_p50_ms"]).all()
    ts = pd.read_parquet(root / "timeseries")
    kts = ts[(ts["run_id"] == kernel.run_id) & (ts["flow_name"] == "flow3")]
    assert kts["bbr_rtprop_ms"].notna().any()  # TCP_CC_INFO, in the simulator's column


def test_results_of_an_older_schema_get_a_one_line_error(tmp_path):
    root = tmp_path / "old"
    r = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
    r.save(root)
    # Rewrite the marker as an older ccfair wrote it: no schema_version, old names.
    path = root / "runs" / f"{r.run_id}.parquet"
    old = pq.read_table(path).to_pandas().drop(columns=["schema_version"])
    old = old.rename(columns={"selfcheck_flags": "flags"})
    old.to_parquet(path, index=False)
    with pytest.raises(ResultsError, match="schema 1") as info:
        load_table(root, "flows")
    assert "\n" not in str(info.value) and "--out" in str(info.value)
    with pytest.raises(ResultsError, match="schema 1"):
        Results(root)
    with pytest.raises(ResultsError, match="schema 1"):  # never mixed with new runs
        ccfair.run(ccfair.dumbbell(1, "cubic", duration="1s")).save(root)
    out = _cli("metrics", str(root))
    assert out.returncode == 2 and "schema 1" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_metrics_of_plain_runs_never_average_different_scenarios(tmp_path):
    # Two seeds of one scenario plus the default dumbbell: two points, not three repetitions.
    root = tmp_path / "plain"
    scenario = ROOT / "scenarios" / "dumbbell.toml"
    for args in (
        [str(scenario), "--seed", "1", "--duration", "4s"],
        [str(scenario), "--seed", "2", "--duration", "4s"],
        ["--duration", "4s"],
    ):
        out = _cli("run", *args, "--out", str(root), "-q")
        assert out.returncode == 0, out.stderr
    res = Results(root)
    assert res.points()["point_key"].nunique() == 2
    summary = res.point_summary(res.run_metrics(), ["goodput_mbps", "jain_index"])
    assert sorted(summary["n"]) == [1, 2]
    runs = res.run_metrics()
    pair = runs[runs["scenario"] == summary.loc[summary["n"] == 2, "scenario"].iloc[0]]
    assert sorted(pair["seed"]) == [1, 2] and sorted(pair["rep"]) == [0, 1]
    row = summary[summary["n"] == 2].iloc[0]
    assert row["goodput_mbps"] == pytest.approx(pair["goodput_mbps"].mean())
    out = _cli("metrics", str(root), "--json")
    assert out.returncode == 0, out.stderr
    assert sorted(pd.read_json(__import__("io").StringIO(out.stdout))["n"]) == [1, 2]


def test_delay_is_a_first_class_metric():
    r = ccfair.run(ccfair.dumbbell(2, ["bbr", "cubic"], buffer_bdp=2.0, duration="6s"))
    f = r.flows.set_index("flow_name")
    assert (f["rtt_p50_ms"] <= f["rtt_p95_ms"]).all() and (f["rtt_p95_ms"] <= f["rtt_p99_ms"]).all()
    # Queueing delay is the sampled smoothed RTT minus the propagation RTT, within the window.
    ts = r.timeseries
    window = (ts["t_s"] > r.runs["measure_start_s"].iloc[0]) & (
        ts["t_s"] <= r.runs["measure_end_s"].iloc[0]
    )
    for name in f.index:
        srtt = ts.loc[window & (ts["flow_name"] == name), "srtt_ms"].dropna()
        assert f.loc[name, "rtt_p50_ms"] == pytest.approx(np.percentile(srtt, 50))
        q = (srtt - f.loc[name, "base_rtt_ms"]).clip(lower=0)
        assert f.loc[name, "qdelay_p95_ms"] == pytest.approx(np.percentile(q, 95))
        assert f.loc[name, "qdelay_p50_ms"] > 0  # a 2 BDP buffer fills
    bn = r.link_summary[
        (r.link_summary["link_name"] == "bottleneck") & (r.link_summary["direction"] == "ab")
    ].iloc[0]
    assert 0 < bn["queue_delay_p50_ms"] <= bn["queue_delay_p99_ms"]
    # The queue's drain time can never exceed the buffer's.
    buffer_ms = bn["buffer_pkts"] * 1500 * 8 / (bn["rate_mbps"] * 1e6) * 1e3
    assert bn["queue_delay_p99_ms"] <= buffer_ms + 1e-9


def test_docs_describe_every_column():
    text = (ROOT / "docs" / "results.md").read_text()
    for table in ALL_TABLES:
        for col in schema.columns(table):
            assert f"`{col['name']}`" in text, f"{table}.{col['name']} is not in docs/results.md"


def test_run_result_in_a_notebook(tmp_path):
    r = ccfair.run(ccfair.dumbbell(2, ["bbr", "cubic"], duration="4s", name="nb"))
    text = repr(r)
    assert r.run_id in text and "'nb'" in text and "Jain" in text and "\n" not in text
    html = r._repr_html_()
    assert "<table" in html and "flow1" in html and "goodput_mbps" in html
    fig = r.plot.timeseries(flows=["flow2"], window=(1.0, 3.0))
    assert "'nb'" in fig.get_suptitle() and "flow2" in fig.get_suptitle()
    lines = [line.get_label() for line in fig.axes[0].get_lines()]
    assert lines == ["flow2 (cubic)", "bottleneck capacity (50 Mbit/s)"]
    assert fig.axes[-1].get_xlim() == (1.0, 3.0)
    with pytest.raises(ValueError, match="flows"):
        r.plot.timeseries(flows=["nope"])
    scatter = r.plot.throughput_delay()
    assert scatter.axes[0].xaxis_inverted()  # better is to the right


def test_results_in_a_notebook_xarray_and_compare(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    for seed in (1, 2, 3):
        for root, rate in ((a, "20Mbit/s"), (b, "40Mbit/s")):
            sc = ccfair.dumbbell(
                2, ["reno", "cubic"], bottleneck_rate=rate, duration="3s", seed=seed, name="pair"
            )
            ccfair.run(sc).save(root)
    res = Results(a)
    assert "3 runs" in repr(res) and "1 points" in repr(res)
    assert "<table" in res._repr_html_()
    # One point each, named alike, the rate changed: matched by name, saying what differs.
    with pytest.warns(CompareWarning, match=r"differ in links\[2\]\.rate$"):
        cmp = res.compare(b)
    g = cmp[cmp["metric"] == "goodput_mbps"].iloc[0]
    assert g["a_n"] == 3 and g["b_n"] == 3
    assert g["diff"] == pytest.approx(g["b_mean"] - g["a_mean"])
    assert g["diff"] > 15 and g["significant"]  # twice the rate: about 20 Mbit/s more
    out = _cli("compare", str(a), str(b))
    assert out.returncode == 0, out.stderr
    assert "goodput_mbps" in out.stdout and "diff" in out.stdout
    assert out.stderr.startswith("warning: compare: matched the one point of scenario 'pair'")
    fig = res.plot.throughput_delay()
    # One legend for the figure, outside the data, naming each algorithm.
    (legend,) = fig.legends
    assert {t.get_text() for t in legend.get_texts()} == {"reno", "cubic"}
    if importlib.util.find_spec("xarray") is None:
        with pytest.raises(ImportError, match="xarray"):
            res.to_xarray()
    else:
        dset = res.to_xarray()
        assert dict(dset.sizes) == {"scenario": 1, "backend": 1, "rep": 3}
        assert float(dset["jain_index"].mean()) == pytest.approx(
            res.run_metrics()["jain_index"].mean()
        )


def test_cli_plot_on_a_one_run_directory(tmp_path):
    root = tmp_path / "one"
    ccfair.run(ccfair.dumbbell(2, ["bbr", "cubic"], duration="3s", name="single")).save(root)
    out = _cli(
        "plot", str(root), "--format", "pdf", "--format", "png", "--flows", "flow1",
        "--window", "0.5:2.5", "--out", str(tmp_path / "figs"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    files = sorted(p.suffix for p in (tmp_path / "figs").iterdir())
    assert files == [".pdf", ".png"]
    assert (tmp_path / "figs").joinpath(next((tmp_path / "figs").glob("*.pdf")).name).read_bytes()[
        :4
    ] == b"%PDF"
    bad = _cli("plot", str(root), "--window", "3:1")
    assert bad.returncode == 2 and "--window" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("plot", str(root), "--flows", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr
