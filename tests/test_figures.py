"""Figure regression tests: structural checks of the figure objects (docs/experiments.md,
"Figures"): flows distinguishable, algorithm colours meaning only algorithms, full axis
labels, legends outside the data, capacity lines, stated smoothing, repetitions drawn,
intervals inside physical bounds, and reproducible PNG, SVG and PDF files."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pytest
from ccfair.execution.sweeps import run_sweep
from ccfair.present.curves import dots, metric_vs_buffer, throughput_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.style import CCA_COLORS, save
from ccfair.present.timeseries import _smooth, jain_over_time, jain_series, timeseries
from ccfair.results.directory import Results
from ccfair.spec.sweep import Sweep
from matplotlib.collections import PolyCollection

CCA_RGB = {mcolors.to_hex(c) for c in CCA_COLORS.values()}


@pytest.fixture(scope="module")
def res(tmp_path_factory) -> Results:
    root = tmp_path_factory.mktemp("figures") / "r"
    sw = Sweep.from_dict(
        {
            "name": "figs",
            "base": {"builder": "dumbbell", "duration": "4s", "sample_interval": "100ms"},
            "grid": {"ccas": [["bbr", "bbr"], ["cubic", "bbr"]], "alpha": [1, 4]},
            "repetitions": 2,
        }
    )
    assert run_sweep(sw, root, workers=2, progress=False, log=lambda m: None).complete
    return Results(root)


def _draw(fig):
    """Lay the figure out on an Agg canvas (as saving does) and return its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _legends_outside_every_axes(fig) -> None:
    renderer = _draw(fig)
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends, "no legend"
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible():
                assert not box.overlaps(ax.get_window_extent(renderer)), (
                    f"legend {[t.get_text() for t in legend.get_texts()][:3]} lies on an axes"
                )


def _labels_have_units_or_are_unitless(ax, unitless=("Jain index", "BBR variant")) -> None:
    for label in (ax.get_xlabel(), ax.get_ylabel()):
        assert label, "an axis has no label"
        assert "[" in label or any(u in label for u in unitless), label


def _colour(line) -> str:
    return mcolors.to_hex(line.get_color())


def test_time_series_tell_flows_of_one_algorithm_apart(res):
    pts = res.points()
    rid = pts[(pts["ccas"] == "bbr-bbr") & (pts["rep"] == 0)].iloc[0]["run_id"]
    fig = timeseries(res, rid)
    goodput_ax = fig.axes[0]
    flows = [ln for ln in goodput_ax.get_lines() if ln.get_label().startswith("flow")]
    assert [ln.get_label() for ln in flows] == ["flow1 (bbr)", "flow2 (bbr)"]
    styles = {(_colour(ln), str(ln.get_linestyle())) for ln in flows}
    assert len(styles) == 2  # two BBR flows never look alike
    # Flow colours are not algorithm colours, and neither are queue, buffer and capacity.
    for ax in fig.axes:
        for ln in ax.get_lines():
            assert _colour(ln) not in CCA_RGB, (ax.get_ylabel(), ln.get_label())
    # The goodput panel draws the capacity, states its smoothing and starts at 0.
    caps = [ln for ln in goodput_ax.get_lines() if "capacity" in ln.get_label()]
    assert len(caps) == 1 and set(caps[0].get_ydata()) == {50.0}
    assert "1 s average" in goodput_ax.get_ylabel()
    assert goodput_ax.get_ylim()[0] == 0
    for ax in fig.axes:
        assert "[" in ax.get_ylabel(), ax.get_ylabel()
    assert fig.axes[-1].get_xlabel() == "time [s]"
    # The queue is named by the nodes its direction goes between, next to its buffer.
    queue_labels = [ln.get_label() for ln in fig.axes[3].get_lines()]
    assert "bottleneck (s1 \u2192 s2)" in queue_labels
    assert any(lbl.startswith("buffer (") for lbl in queue_labels)
    # The RTT panel starts at 0 (no zoom into a fraction of a millisecond).
    assert fig.axes[2].get_ylim()[0] == 0
    _legends_outside_every_axes(fig)


def test_raw_goodput_on_request_is_the_samples(res):
    rid = res.run_ids[0]
    raw = timeseries(res, rid, smooth_s=0)
    ts = res.run_tables(rid)["timeseries"]
    name = raw.axes[0].get_lines()[0].get_label().split(" ")[0]
    samples = ts[ts["flow_name"] == name].sort_values("t_s")["goodput_mbps"].to_numpy()
    assert np.array_equal(raw.axes[0].get_lines()[0].get_ydata(), samples)
    assert "per 100 ms sample" in raw.axes[0].get_ylabel()
    smooth = timeseries(res, rid)
    y = smooth.axes[0].get_lines()[0].get_ydata()
    assert np.allclose(y, _smooth(samples, 10))
    assert not np.array_equal(y, samples)


def test_curves_over_the_buffer_draw_every_repetition_and_clip_their_bands(res):
    ((name, fig),) = throughput_vs_buffer(res, panels=["ccas"])
    ax = fig.axes[0]
    means = [ln for ln in ax.get_lines() if ln.get_label() in CCA_COLORS]
    assert means
    for ln in means:
        assert _colour(ln) == mcolors.to_hex(CCA_COLORS[ln.get_label()])
    dots = [c for c in ax.collections if c.__class__.__name__ == "PathCollection"]
    # bbr-bbr panel: one algorithm, 2 buffers x 2 repetitions.
    assert sum(len(c.get_offsets()) for c in dots) == 4
    for band in (c for c in ax.collections if isinstance(c, PolyCollection)):
        ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
        assert ys.min() >= 0 and ys.max() <= 50.0 + 1e-9
    (legend,) = fig.legends
    assert "n = 2" in legend.get_title().get_text()
    _legends_outside_every_axes(fig)
    for ax in fig.axes:
        if ax.get_visible():
            assert ax.get_xlabel() == "buffer [x BDP]"


def test_metric_curves_use_greys_not_algorithm_colours_and_stay_in_0_1(res):
    ((name, fig),) = metric_vs_buffer(res, metric="jain_index", lines="ccas")
    ax = fig.axes[0]
    for ln in ax.get_lines():
        assert _colour(ln) not in CCA_RGB
    for band in (c for c in ax.collections if isinstance(c, PolyCollection)):
        ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
        assert ys.min() >= 0 and ys.max() <= 1 + 1e-9
    assert ax.get_ylabel() == "Jain index" and ax.get_ylim() == (0, 1.03)
    _legends_outside_every_axes(fig)


def test_heatmap_cells_are_the_mean_goodput_with_the_range_of_repetitions(res):
    (name, fig), *_ = heatmaps(res, x="ccas", y="alpha")
    flows = res.flows
    ax = fig.axes[0]
    panel = ax.get_title().split(" ")[0]
    texts = [t.get_text() for t in ax.texts]
    mine = flows[flows["flow_name"] == panel]
    for _, cell in mine.groupby(["ccas", "alpha"]):
        assert f"{cell['goodput_mbps'].mean():.1f}" in texts
        lo, hi = cell["goodput_mbps"].min(), cell["goodput_mbps"].max()
        assert f"{lo:.1f}-{hi:.1f}" in texts
    assert ax.get_ylabel() == "buffer [x BDP]"
    assert "n = 2 repetitions" in fig.get_suptitle()


def test_dots_show_each_repetition_and_the_mean(res):
    ((name, fig),) = dots(res, value="per_flow_mbps", x="alpha", hue="cca", panels=["ccas"])
    ccas = res.ccas()
    ax = next(a for a in fig.axes if a.get_title() == "cubic-bbr")
    for cca in ("bbr", "cubic"):
        filled = [c for c in ax.collections if c.get_label() == cca]
        shown = sorted(float(c.get_offsets()[0, 1]) for c in filled)
        values = ccas[(ccas["ccas"] == "cubic-bbr") & (ccas["cca"] == cca)]
        expected = sorted(values.groupby("alpha")["per_flow_mbps"].mean())
        assert shown == pytest.approx(expected)
        colours = {mcolors.to_hex(c.get_facecolor()[0]) for c in filled}
        assert colours == {mcolors.to_hex(CCA_COLORS[cca])}
    for ax in fig.axes:
        if ax.get_visible():
            _labels_have_units_or_are_unitless(ax, unitless=("buffer",))
    _legends_outside_every_axes(fig)


def test_jain_over_time_is_jain_of_windowed_goodput(res):
    rid = res.run_ids[0]
    ts = res.run_tables(rid)["timeseries"]
    t, jain = jain_series(ts, 1.0)
    assert len(t) == 4 and (jain <= 1 + 1e-12).all() and (jain > 0).all()
    wide = ts.pivot_table(index="t_s", columns="flow_name", values="goodput_mbps")
    first = wide[wide.index <= 1.0 + 1e-9].mean()
    assert jain[0] == pytest.approx(first.sum() ** 2 / (len(first) * (first**2).sum()))
    fig = jain_over_time(res, [("a", rid)])
    assert fig.axes[0].get_ylim() == (0, 1.03)
    _legends_outside_every_axes(fig)


def test_copa_mode_is_drawn_per_flow(tmp_path):
    import ccfair

    r = ccfair.run(ccfair.dumbbell(3, ["copa", "copa", "cubic"], duration="4s"))
    fig = r.plot.timeseries()
    assert [ax.get_ylabel() for ax in fig.axes[4:]] == [
        "Copa delta",
        "Copa in competitive\nmode (bars)",
    ]
    assert [t.get_text() for t in fig.axes[5].get_yticklabels()] == ["flow1", "flow2"]


def test_save_writes_png_svg_and_pdf_byte_for_byte(res, tmp_path):
    files = []
    for i in range(2):
        fresh = Results(res.root)
        (name, fig), *_ = heatmaps(fresh, x="ccas", y="alpha")
        files.append(save(fig, tmp_path / str(i), name))
    assert [p.suffix for p in files[0]] == [".png", ".svg", ".pdf"]
    assert files[0][0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert files[0][2].read_bytes()[:5] == b"%PDF-"
    for a, b in zip(*files, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    with pytest.raises(ValueError, match="formats"):
        save(fig, tmp_path, "x", formats=["jpg"])
