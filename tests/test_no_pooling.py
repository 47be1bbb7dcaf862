"""No figure or comparison pools what it does not show: every grid axis a figure does not
draw (as its x axis, a line, a colour or a panel) gets panels or figures of its own, and "n"
counts the repetitions of one configuration. Each test runs a figure over a sweep with an
axis the figure does not show (the ``grid3`` fixture: algorithms x buffer x delay) and
checks what is drawn against the raw tables."""

from __future__ import annotations

import re

import ccfair
import numpy as np
import pandas as pd
import pytest
from ccfair.errors import ResultsError
from ccfair.execution.sweeps import run_sweep
from ccfair.present.curves import dots, flow_distribution, throughput_vs_buffer
from ccfair.report.sections import metrics, model_section
from ccfair.results.directory import Results
from ccfair.spec.sweep import Sweep
from matplotlib.collections import PathCollection

KEYS = ["ccas", "alpha", "delay"]


def _per_run(res: Results) -> pd.DataFrame:
    """Per run: its grid labels, Jain's index and each flow's goodput, from the raw tables."""
    flows = res.table("flows")
    jain = flows.groupby("run_id")["goodput_mbps"].apply(
        lambda g: g.sum() ** 2 / (len(g) * (g * g).sum())
    )
    pts = res.points()
    pts = pts[pts["baseline"].isna()]
    return pts.assign(jain=pts["run_id"].map(jain))


def _key(row: pd.Series | dict) -> tuple:
    return tuple(str(row[k]) for k in KEYS)


def _ms(delay: str) -> str:
    return f"D = {delay.removesuffix('ms')} ms"


def _panel_of(fig, *words: str):
    """The one visible axes whose title names every word."""
    found = [ax for ax in fig.axes if ax.get_visible() and all(w in ax.get_title() for w in words)]
    assert len(found) == 1, (words, [ax.get_title() for ax in fig.axes])
    return found[0]


def test_a_metric_against_the_buffer_draws_every_combination_of_the_other_axes(grid3):
    """Before: one line (the first algorithm pair's) over the dots of both pairs, "n = 2"."""
    [(_, fig)] = grid3.plot.metric("jain_index")  # x = alpha; ccas and delay not shown
    runs = _per_run(grid3)
    means = runs.groupby(["ccas", "delay", "alpha"])["jain"].mean()
    for (ccas, delay), per_alpha in means.groupby(level=[0, 1]):
        ax = _panel_of(fig, ccas, _ms(delay))
        [line] = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        want = {float(a): v for (_, _, a), v in per_alpha.items()}
        got = dict(zip(map(float, line.get_xdata()), line.get_ydata(), strict=True))
        assert got == pytest.approx(want)
        # Each repetition a dot: 2 per buffer value, all of this combination's runs.
        dots_y = np.concatenate(
            [c.get_offsets()[:, 1] for c in ax.collections if isinstance(c, PathCollection)]
        )
        mine = runs[(runs["ccas"] == ccas) & (runs["delay"] == delay)]["jain"]
        assert sorted(dots_y) == pytest.approx(sorted(mine))
    assert "n = 2 per point" in fig.legends[0].get_title().get_text()


def test_heatmaps_draw_a_figure_per_value_of_an_axis_they_do_not_show(grid3):
    """Before: one figure averaging both algorithm pairs, "n = 4 repetitions per cell"."""
    figs = grid3.plot.heatmap(x="delay", y="alpha")  # ccas is not shown
    assert len(figs) == 2
    flows = grid3.flows
    flows = flows[flows["baseline"].isna()]
    for ccas in ("bbr-bbr", "cubic-bbr"):
        [fig] = [f for name, f in figs if ccas in f._suptitle.get_text()]
        assert "n = 2 repetitions" in fig._suptitle.get_text()
        for flow in ("flow1", "flow2"):
            ax = _panel_of(fig, flow)
            grid = ax.images[0].get_array()
            mine = flows[(flows["ccas"] == ccas) & (flows["flow_name"] == flow)]
            for i, alpha in enumerate([1, 4]):
                for j, delay in enumerate(["2ms", "18ms"]):
                    cell = mine[(mine["alpha"] == alpha) & (mine["delay"] == delay)]
                    assert len(cell) == 2
                    assert grid[i, j] == pytest.approx(cell["goodput_mbps"].mean())


@pytest.fixture(scope="module")
def ten_hops(tmp_path_factory) -> Results:
    root = tmp_path_factory.mktemp("tenhop") / "r"
    sweep = Sweep.from_dict(
        {
            "name": "tenhop",
            "base": {
                "builder": "parking_lot",
                "hops": 10,
                "duration": "2s",
                "sample_interval": "100ms",
            },
            "grid": {"alpha": [1, 4], "delay": ["2ms", "18ms"]},
        }
    )
    assert run_sweep(sweep, root, workers=2, progress=False, log=lambda m: None).complete
    return Results(root)


def test_a_parking_lot_heatmap_shows_the_main_flow_and_the_cross_flows_together(ten_hops):
    """Before: eleven panels, one per flow of the 10-hop lot."""
    [(_, fig)] = ten_hops.plot.heatmap(x="delay", y="alpha")
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    assert len(titles) == 2, titles
    main = _panel_of(fig, "main")
    cross = _panel_of(fig, "cross flows", "mean of 10")
    flows = ten_hops.table("flows").merge(ten_hops.points(), on="run_id")
    for i, alpha in enumerate([1, 4]):
        for j, delay in enumerate(["2ms", "18ms"]):
            cell = flows[(flows["alpha"] == alpha) & (flows["delay"] == delay)]
            is_cross = cell["flow_name"].str.startswith("cross")
            assert main.images[0].get_array()[i, j] == pytest.approx(
                cell[~is_cross]["goodput_mbps"].mean()
            )
            assert cross.images[0].get_array()[i, j] == pytest.approx(
                cell[is_cross]["goodput_mbps"].mean()
            )


def test_dots_over_a_category_never_pool_the_other_axes(grid3):
    """Before: one panel whose marker per algorithm pair was the first point's mean, over
    the dots of all eight points."""
    [(_, fig)] = dots(grid3, value="jain_index", x="ccas", table="runs")
    runs = _per_run(grid3)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4  # alpha x delay
    for (alpha, delay), part in runs.groupby(["alpha", "delay"]):
        ax = _panel_of(fig, f"buffer {alpha} x BDP", _ms(delay))
        means = sorted(
            float(y)
            for c in ax.collections
            if isinstance(c, PathCollection) and c.get_sizes()[0] > 20
            for _, y in c.get_offsets()
        )
        assert means == pytest.approx(sorted(part.groupby("ccas")["jain"].mean()))


def test_flow_distribution_never_pools_the_other_axes(grid3):
    """Before: one panel whose box per buffer held the flows of every algorithm pair and
    delay (16 dots); now each holds one point's 2 flows x 2 repetitions."""
    [(_, fig)] = flow_distribution(grid3, x="alpha")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4  # ccas x delay
    for ax in panels:
        counts = [len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)]
        assert counts == [4, 4], ax.get_title()


def test_throughput_against_the_buffer_gets_a_panel_per_other_axis(grid3):
    [(_, fig)] = throughput_vs_buffer(grid3, x="alpha")
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 4
    assert "n = 2 per point" in fig.legends[0].get_title().get_text()


def test_throughput_against_delay_names_the_point_of_every_marker(grid3):
    """Before: the mean markers of the eight points were alike, nothing said which is which."""
    fig = grid3.plot.throughput_delay()  # a panel per algorithm pair
    flows = grid3.flows
    for ccas in ("bbr-bbr", "cubic-bbr"):
        ax = _panel_of(fig, ccas)
        texts = [(t.get_text(), t.xy) for t in ax.texts]
        mine = flows[flows["ccas"] == ccas]
        n_means = mine.groupby(["point_key", "cca"]).ngroups
        assert len(ax.texts) == n_means
        for (alpha, delay), part in mine.groupby(["alpha", "delay"]):
            for cca, reps in part.groupby("cca"):
                per_run = reps.groupby("run_id")[["rtt_p95_ms", "goodput_mbps"]].mean()
                at = (per_run["rtt_p95_ms"].mean(), per_run["goodput_mbps"].mean())
                names = [
                    t
                    for t, xy in texts
                    if f"buffer {alpha}" in t and _ms(delay) in t and np.allclose(xy, at)
                ]
                assert names, (alpha, delay, cca, texts)


def test_the_report_model_table_keeps_intervals_in_0_1(grid3):
    """Before: a share of 0.78 with a half-width of 0.42 printed as [0.35, 1.20]."""
    html = "".join(model_section(grid3, metrics(grid3)))
    intervals = re.findall(r"\[(-?[0-9.]+), (-?[0-9.]+)", html)
    assert intervals
    for lo, hi in intervals:
        assert 0.0 <= float(lo) <= float(hi) <= 1.0, (lo, hi)


def _spec_of(res: Results, **labels) -> dict:
    pts = res.points()
    for k, v in labels.items():
        pts = pts[pts[k] == v]
    rid = pts["run_id"].iloc[0]
    return res.specs()[rid]


def test_compare_matches_a_run_to_its_own_grid_point_only(grid3, tmp_path):
    """Before: the one run of B was compared with all 16 runs of A (8 points), as every
    point's scenario is called "dumbbell"."""
    spec = _spec_of(grid3, ccas="cubic-bbr", alpha=4, delay="18ms")
    ccfair.run(ccfair.Scenario.from_normalized({**spec, "seed": 9})).save(tmp_path / "b")
    cmp = grid3.compare(tmp_path / "b")
    row = cmp.set_index("metric").loc["jain_index"]
    assert (row["a_n"], row["b_n"]) == (2, 1)
    runs = _per_run(grid3)
    mine = runs[(runs["ccas"] == "cubic-bbr") & (runs["alpha"] == 4) & (runs["delay"] == "18ms")]
    assert row["a_mean"] == pytest.approx(mine["jain"].mean())


def test_compare_refuses_scenarios_that_share_only_their_name(grid3, tmp_path):
    spec = _spec_of(grid3, ccas="cubic-bbr", alpha=4, delay="18ms")
    other = {**spec, "sample_interval": "50ms"}
    ccfair.run(ccfair.Scenario.from_normalized(other)).save(tmp_path / "c")
    with pytest.raises(ResultsError, match=r"sample_interval"):
        grid3.compare(tmp_path / "c")


def test_compare_refuses_to_pool_an_axis_the_other_directory_lacks(grid3, tmp_path):
    sweep = Sweep.from_dict(
        {
            "name": "pairs",
            "base": {"builder": "dumbbell", "duration": "3s", "sample_interval": "100ms"},
            "grid": {"ccas": [["bbr", "bbr"], ["cubic", "bbr"]]},
        }
    )
    assert run_sweep(sweep, tmp_path / "d", workers=2, progress=False, log=lambda m: None).complete
    with pytest.raises(ResultsError, match=r"alpha"):
        grid3.compare(tmp_path / "d")
