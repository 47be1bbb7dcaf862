"""Presets, figures and the HTML report, rendered in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ccfair.presets import PRESETS, count_runs
from ccfair.presets.base import REPETITIONS
from ccfair.report import setup as report_setup
from ccfair.results.directory import Results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Injected first into a copy of the page: records script errors, failed resource loads and
# console errors/warnings, and how many images decoded, into attributes that --dump-dom shows.
PROBE = """<script>
window.__problems = [];
window.addEventListener("error", (e) => {
  const t = e.target;
  const what = t && t !== window ? "failed to load " + (t.src || t.href) : "error " + e.message;
  window.__problems.push(what);
}, true);
for (const level of ["error", "warn"]) {
  const orig = console[level];
  console[level] = (...args) => {
    window.__problems.push(level + " " + args.join(" "));
    orig.apply(console, args);
  };
}
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const root = document.documentElement;
  root.dataset.images = imgs.length;
  root.dataset.decoded = imgs.filter((i) => i.complete && i.naturalWidth > 0).length;
  root.dataset.problems = JSON.stringify(window.__problems);
});
</script>"""


def cli(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args], capture_output=True, text=True, **kw
    )


def render(page: Path, tmp: Path) -> dict:
    """Load ``page`` with the probe in headless Chromium; returns images, decoded images,
    problems seen by the page, and console lines Chromium logged."""
    assert CHROMIUM, "Debian's chromium is needed for this test (scripts/test.sh installs it)"
    text = page.read_text(encoding="utf-8")
    probed = tmp / f"probe-{page.name}"
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    out = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=1",
            "--virtual-time-budget=15000",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    root = re.search(r"<html[^>]*>", out.stdout).group(0)
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', root))
    assert {"images", "decoded", "problems"} <= set(attrs), root
    console = [ln for ln in out.stderr.splitlines() if ":CONSOLE" in ln]
    return {
        "images": int(attrs["images"]),
        "decoded": int(attrs["decoded"]),
        "problems": json.loads(html.unescape(attrs["problems"])),
        "console": console,
    }


@pytest.fixture(scope="module")
def harada(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("harada") / "out"
    out = cli("reproduce", "harada-dumbbell", "--quick", "--out", str(root))
    assert out.returncode == 0, out.stderr
    assert f"report: {root / 'report.html'}" in out.stdout
    return root


def test_reproduce_writes_figures_in_png_svg_and_pdf(harada):
    figs = harada / "figures"
    names = sorted(p.stem for p in figs.glob("*.png"))
    assert sorted(p.stem for p in figs.glob("*.svg")) == names
    assert sorted(p.stem for p in figs.glob("*.pdf")) == names
    assert {"heatmap-reno-bbr", "heatmap-cubic-bbr", "heatmap-reno-cubic"} <= set(names)
    assert {"model-vs-measured", "jain_index-vs-alpha", "jain-over-time"} <= set(names)
    assert "throughput-delay" in names
    assert sum(n.startswith("timeseries-") for n in names) == 3
    for name in names:
        assert (figs / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert ET.parse(figs / f"{name}.svg").getroot().tag.endswith("svg")
        assert (figs / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


def test_report_is_self_contained_and_complete(harada):
    page = (harada / "report.html").read_text(encoding="utf-8")
    record = json.loads((harada / "sweep.json").read_text())
    assert record["hash"] in page
    # Every figure embedded, nothing fetched from anywhere, no scripts.
    figs = sorted(p.stem for p in (harada / "figures").glob("*.png"))
    for name in figs:
        assert f'id="fig-{name}"' in page
    assert all(src.startswith("data:") for src in re.findall(r'src="([^"]*)"', page))
    assert "<script" not in page and "http://" not in page and "https://" not in page
    # The table per grid point has one row per point: 3 pairs x 2 delays x 2 buffers,
    # each with its n and intervals; no scroll boxes anywhere.
    points = page.split('id="points"')[1].split('id="ccas"')[0]
    assert points.count("<tr") - 1 == 12  # minus the header row
    assert points.count("<td>2</td>") >= 12  # n = 2 on every row
    assert 'class="ci"' in points
    style = page.split("<style>")[1].split("</style>")[0]
    assert "overflow" not in style and "max-height" not in style and "scroll" not in page
    assert "24 of 24 runs finished: 12 grid points x 2 repetition(s)" in page
    for section in ("Model comparison", "ware_full", "Provenance", "ccfair version"):
        assert section in page
    # The summary comes first, with a headline figure; then the setup table.
    summary = page.split('id="summary"')[1].split('id="setup"')[0]
    assert '<figure id="fig-heatmap-reno-bbr"' in summary
    setup = html.unescape(page.split('id="setup"')[1].split('id="figures"')[0])
    for item in ("topology", "bottleneck", "buffer", "duration", "repetitions", "host kernel"):
        assert f"<td>{item}</td>" in setup, item
    # The study's testbed and the hosts' kernel, each named once, and what the runs ran.
    assert "<td>testbed (this run)</td><td></td><td>core-netem</td>" in setup
    assert "<td>host kernel (this run)</td><td></td><td>6.18</td>" in setup
    assert 'testbed = "core-netem": CORE' in setup
    assert "profile" not in setup
    assert "ccfair" in setup and "git" in setup
    # The machine's own kernel is named as such, never as the modelled hosts' kernel.
    prov = html.unescape(page.split('id="provenance"')[1])
    assert "Linux release of the machine that ran ccfair (not the modelled hosts' kernel" in prov


def test_report_renders_in_chromium_with_every_figure_and_no_console_error(harada, tmp_path):
    seen = render(harada / "report.html", tmp_path)
    n_figs = len(list((harada / "figures").glob("*.png")))
    assert seen["images"] == n_figs > 0
    assert seen["decoded"] == seen["images"]
    assert seen["problems"] == []
    assert seen["console"] == []


def test_report_prints_to_pdf_in_chromium_with_every_figure(harada, tmp_path):
    assert CHROMIUM, "Debian's chromium is needed for this test (scripts/test.sh installs it)"
    pdf = tmp_path / "report.pdf"
    out = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            (harada / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    n_figs = len(list((harada / "figures").glob("*.png")))
    # Each figure is an image in the printed document (the summary's headline figures are
    # shown there instead of again among the figures), on several A4 pages.
    assert len(re.findall(rb"/Subtype\s*/Image", data)) >= n_figs
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", data))
    assert pages >= 3


def test_the_chromium_check_catches_a_broken_figure_and_a_console_error(harada, tmp_path):
    page = (harada / "report.html").read_text(encoding="utf-8")
    broken = re.sub(
        r"data:image/png;base64,[A-Za-z0-9+/=]{20}",
        "data:image/png;base64,AAAA",
        page,
        count=1,
    )
    broken = broken.replace("</body>", '<script>console.error("oops")</script></body>')
    bad = tmp_path / "broken.html"
    bad.write_text(broken, encoding="utf-8")
    seen = render(bad, tmp_path)
    assert seen["decoded"] == seen["images"] - 1
    assert any("oops" in p for p in seen["problems"]) and seen["console"]


def test_figures_are_reproducible_byte_for_byte(harada, tmp_path):
    from ccfair.present.heatmaps import heatmaps
    from ccfair.present.style import save
    from ccfair.results.directory import Results

    files = []
    for i in range(2):
        res = Results(harada)  # read afresh
        (name, fig), *_ = heatmaps(res, x="delay", y="alpha", by="ccas")
        files.append(save(fig, tmp_path / str(i), name))
    for a, b in zip(*files, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    for path in files[0]:  # PNG, SVG and PDF as the report's
        assert path.read_bytes() == (harada / "figures" / path.name).read_bytes(), path.name


def test_report_of_an_incomplete_sweep_says_so(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "inc"\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n[grid]\nalpha = [1, 2, 4]\n'
    )
    root = tmp_path / "r"
    assert cli("sweep", str(spec), "--out", str(root), "--quiet").returncode == 0
    sorted((root / "runs").glob("*.parquet"))[0].unlink()
    out = cli("report", str(root), "--quiet")
    assert out.returncode == 0, out.stderr
    page = (root / "report.html").read_text(encoding="utf-8")
    assert "2 of 3 runs finished: the sweep is incomplete" in page


def test_report_of_single_runs_without_a_sweep(tmp_path):
    out = cli("run", "--duration", "2s", "--out", str(tmp_path), "--quiet")
    assert out.returncode == 0, out.stderr
    out = cli("report", str(tmp_path), "--quiet")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "not written by a sweep" in page and "timeseries-" in page


def test_report_and_reproduce_reject_bad_input_with_one_line(tmp_path):
    out = cli("report", str(tmp_path / "missing"))
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {tmp_path / 'missing'}: no such results directory"
    out = cli("reproduce", "harada-dumbell")
    assert out.returncode == 2
    assert out.stderr.strip().startswith(
        'error: preset: "harada-dumbell" is not a preset; did you mean "harada-dumbbell"?'
    )


def test_reproduce_list_shows_every_experiment_with_its_grid_size():
    out = cli("reproduce", "--list")
    assert out.returncode == 0, out.stderr
    for name in (
        "harada-dumbbell",
        "harada-2hop",
        "harada-10hop",
        "ogino-copa",
        "ogawa-bbr-fairness",
        "katsumata-rtprop",
    ):
        assert re.search(rf"^{name}\s+\d+ runs", out.stdout, re.M), name
    assert re.search(r"^harada-dumbbell\s+270 runs", out.stdout, re.M)
    assert re.search(r"^harada-10hop\s+810 runs", out.stdout, re.M)


@pytest.mark.parametrize("name", list(PRESETS))
def test_full_preset_grids_expand_to_distinct_valid_runs(name):
    preset = PRESETS[name]
    points = preset.sweep().expand()
    assert len(points) == count_runs(preset.full)
    assert len({p.run_id for p in points}) == len(points)


def test_harada_full_grids_are_the_studies():
    # docs/experiments.md: 3 CCA pairs x 3 delays x 6 buffers, 60 s; 5 repetitions.
    pts = PRESETS["harada-dumbbell"].sweep().expand()
    assert len(pts) == 54 * REPETITIONS
    assert {p.scenario.duration for p in pts} == {60_000_000_000}
    r = pts[0].scenario.resolve()
    assert r.link("bottleneck").rate_bps == 50_000_000
    assert {(p.params["delay"], p.params["alpha"]) for p in pts} == {
        (d, a) for d in ("2ms", "18ms", "100ms") for a in (0.5, 1, 2, 4, 8, 16)
    }
    # Every assignment of {Reno, CUBIC, BBR} to main vs cross flows on 10 hops.
    ten = PRESETS["harada-10hop"].sweep().expand()
    assert len({p.params["ccas"] for p in ten}) == 9
    assert len(ten[0].scenario.flows) == 11


@pytest.mark.parametrize("name", [n for n in PRESETS if n != "harada-dumbbell"])
def test_every_preset_reproduces_quickly_with_its_figures(name, tmp_path):
    out = cli("reproduce", name, "--quick", "--out", str(tmp_path), "--quiet")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    embedded = re.findall(r'<figure id="fig-([^"]+)"', page)
    assert embedded, "no figures"
    for fig in embedded:
        assert (tmp_path / "figures" / f"{fig}.svg").exists()
    assert PRESETS[name].title in html.unescape(page)


def test_plot_draws_the_time_series_of_any_run(harada, tmp_path):
    rid = json.loads((harada / "sweep.json").read_text())["run_ids"][5]
    out = cli("plot", str(harada), rid, "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / f"timeseries-{rid}.png").read_bytes()[:4] == b"\x89PNG"
    assert ET.parse(tmp_path / f"timeseries-{rid}.svg").getroot().tag.endswith("svg")
    assert (tmp_path / f"timeseries-{rid}.pdf").read_bytes()[:5] == b"%PDF-"
    out = cli("plot", str(harada), rid, "--out", str(tmp_path), "--smooth", "-1")
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --smooth: -1.0 is not a window of 0 or more seconds"
    out = cli("plot", str(harada), "0123456789abcdef", "--out", str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.strip() == f'error: {harada}: no finished run "0123456789abcdef"'


def test_the_setup_names_every_testbed_and_kernel_the_runs_used():
    specs = [
        {"testbed": "mininet-netem", "kernel": "4.15"},
        {},
        {"testbed": "linux-stock", "kernel": "6.18"},
        {"testbed": "ideal", "kernel": None},
    ]
    assert report_setup._hosts(specs, "testbed") == ["mininet-netem", "ideal", "linux-stock"]
    assert report_setup._hosts(specs, "kernel") == ["4.15", "none (idealised hosts)", "6.18"]
    assert report_setup._hosts([], "testbed") == []


def test_a_preset_on_two_testbeds_gets_a_testbed_axis_and_a_report(tmp_path):
    """`reproduce --testbed A --testbed B` adds a testbed axis; the report then draws the
    preset's own figures once per testbed (it drew generic ones instead, and before those
    crashed when more than two axes varied besides the buffer)."""
    out = cli(
        "reproduce",
        "harada-dumbbell",
        "--quick",
        "--testbed",
        "ideal",
        "--testbed",
        "mininet-netem",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert out.returncode == 0, out.stderr
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    assert {p["params"]["testbed"] for p in sweep["points"]} == {"ideal", "mininet-netem"}
    assert len(sweep["points"]) == 2 * 24
    names = {p.stem for p in (tmp_path / "figures").glob("*.svg")}
    own = PRESETS["harada-dumbbell"].figures(Results(tmp_path).select(testbed="ideal"))
    assert {"heatmap-reno-bbr", "model-vs-measured"} <= {name for name, _, _ in own}
    for testbed in ("ideal", "mininet-netem"):
        for name, _, _ in own:
            assert f"{name}--testbed-{testbed}" in names
    assert "throughput-delay" in names
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    summary = page.split('<h2 id="setup">')[0]  # the headline figure, of the first testbed
    assert 'id="fig-heatmap-reno-bbr--testbed-ideal"' in summary
    bad = cli(
        "reproduce",
        "harada-dumbbell",
        "--quick",
        "--testbed",
        "fancy",
        "--out",
        str(tmp_path / "x"),
    )
    assert bad.returncode == 2 and '"fancy" is not a testbed; testbeds: ' in bad.stderr
    assert not (tmp_path / "x").exists()
