"""One self-contained HTML report of a results directory (``ccfair report DIR``).

The page reads and prints: a summary at the top (what ran, the headline figures, what the
checks found), the setup table (what the study states and what ccfair ran, item by item), every
figure (PNG embedded; PNG, SVG and PDF files in ``DIR/figures``), the tables per grid point and
per algorithm (means with 95% intervals clipped to each metric's range, n per row, numbers
to significant digits, split by the first grid key when long; no scroll boxes), the model
comparison (Ware et al.), harm where baseline runs exist, the sweep spec and provenance. No
scripts and no external resources: it opens anywhere, offline, and prints on A4.
"""

from __future__ import annotations

import base64
import html
import json
import math
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair import backends
from ccfair.algorithms import algorithm
from ccfair.analysis.stats import bounds_of, clipped_interval
from ccfair.errors import ResultsError, show
from ccfair.present.curves import throughput_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.model import model_vs_measured
from ccfair.present.style import SMOOTH_S, point_label, save, varying_keys
from ccfair.present.timeseries import timeseries
from ccfair.results.directory import Results
from ccfair.store.directory import table_folder
from ccfair.store.files import make_dir, remove_stale_temporaries, replace_via_temporary

__all__ = ["fmt_interval", "fmt_number", "make_figures", "save_figures", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd}
h3{font-size:1.05rem;margin:1.4rem 0 .3rem}
.sub{color:#555;margin-top:0}nav a{margin-right:1rem}
table{border-collapse:collapse;font-size:.8rem;margin:.6rem 0}
th,td{border:1px solid #ccc;padding:.2rem .4rem;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.setup td{text-align:left}.setup td:first-child{font-weight:600;white-space:nowrap}
.ci{color:#555;font-size:.9em;white-space:nowrap}
figure{margin:1.2rem 0;padding:.4rem 0;border-top:1px solid #eee}
figure img{max-width:100%;height:auto;display:block;margin:auto}
figcaption{font-size:.85rem;color:#333;margin-top:.4rem}
pre{background:#f7f7f7;padding:.8rem;font-size:.75rem;white-space:pre-wrap;word-break:break-word}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.5rem .8rem}
.note{background:#eef4fb;border-left:4px solid #4477aa;padding:.5rem .8rem}
@page{size:A4;margin:12mm 11mm}
@media print{
body{max-width:none;margin:0;padding:0;font-size:9.5pt}
nav{display:none}
h2{break-after:avoid}h3{break-after:avoid}
figure{break-inside:avoid}
table{font-size:7.5pt}thead{display:table-header-group}tr{break-inside:avoid}
a{color:inherit;text-decoration:none}
}
"""

Figures = list[tuple[str, str, Any]]

#: Table headers of metric columns (quantity and unit).
_HEADERS = {
    "goodput_mbps": "total goodput [Mbit/s]",
    "jain_index": "Jain index",
    "utilisation_frac": "utilisation",
    "loss_frac": "loss rate",
    "qdelay_mean_ms": "queueing delay [ms]",
    "queue_delay_p95_ms": "queue delay p95 [ms]",
    "queue_p99_bdp": "queue p99 [BDP]",
    "per_flow_mbps": "goodput per flow [Mbit/s]",
    "share_frac": "share",
    "rtt_mean_ms": "mean RTT [ms]",
    "rtt_p95_ms": "RTT p95 [ms]",
    "qdelay_p95_ms": "queueing delay p95 [ms]",
    "harm_goodput_frac": "goodput harm",
    "harm_rtt_frac": "RTT harm",
    "measured": "measured BBR share",
    "ware_full": "ware_full",
    "ware_simple": "ware_simple",
    "x_bdp": "X [BDP]",
    "error_full": "measured - ware_full",
    "n": "n",
    "overflowed": "buffer overflowed",
}

#: A table longer than this is split into one table per value of its first grid key.
_SPLIT_ROWS = 30


def _esc(x: Any) -> str:
    return html.escape(str(x))


def fmt_number(v: Any, digits: int = 4) -> str:
    """A number to ``digits`` significant digits, in plain notation where it is readable.

    Example:
        >>> fmt_number(0.0059061), fmt_number(87.5612), fmt_number(1234567.0), fmt_number(3)
        ('0.005906', '87.56', '1.235e+06', '3')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        x = float(v)
        if x == 0:
            return "0"
        if 1e-4 <= abs(x) < 1e6:
            decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
            return f"{x:.{decimals}f}"
        return f"{x:.{digits - 1}e}"
    return str(v)


def fmt_interval(mean: float, half: float, n: int, bounds: tuple = (None, None)) -> str:
    """ "mean [low, high]" of a 95% interval, clipped to ``bounds``, to the precision the
    interval supports (two significant digits of its half-width); a plain mean when there is
    no interval (n < 2); "(all n equal)" when every repetition gave the same value.

    Example:
        >>> fmt_interval(0.005906, 4.3e-05, 5, (0.0, 1.0))
        '0.005906 [0.005863, 0.005949]'
        >>> fmt_interval(87.56, 400.0, 2, (0.0, 50.0))
        '88 [0, 50]'
        >>> fmt_interval(0.9905, 0.072, 2, (0.0, 1.0))
        '0.991 [0.918, 1.000]'
    """
    if mean is None or not math.isfinite(mean):
        return ""
    if n < 2 or half is None or not math.isfinite(half):
        return fmt_number(mean)
    if half == 0:
        return f"{fmt_number(mean)} (all {n} equal)"
    decimals = max(0, 1 - math.floor(math.log10(half)))
    lo, hi = clipped_interval(mean, half, bounds)
    if decimals > 6:  # a tiny value: significant digits read better than zeros
        return f"{mean:.3g} [{lo:.3g}, {hi:.3g}]"
    return f"{mean:.{decimals}f} [{lo:.{decimals}f}, {hi:.{decimals}f}]"


def _interval_cell(mean: float, half: float, n: int, bounds: tuple) -> str:
    text = fmt_interval(mean, half, n, bounds)
    if " [" in text:
        m, rest = text.split(" [", 1)
        return f'{_esc(m)} <span class="ci">[{_esc(rest)}</span>'
    return _esc(text)


#: Table headers of grid keys and other label columns.
_LABEL_HEADERS = {
    "ccas": "algorithms",
    "cca": "algorithm",
    "delay": "D",
    "alpha": "buffer [x BDP]",
    "n_flows": "flows",
    "per_cca": "n per algorithm",
    "rtt_ratio": "RTT spread",
    "params.bbr": "BBR variant",
}


def _header(col: str) -> str:
    if col.endswith("_share_frac"):
        return f"{col.removesuffix('_share_frac')} share"
    return _HEADERS.get(col) or _LABEL_HEADERS.get(col) or col


def _html_table(
    frame: pd.DataFrame,
    labels: Sequence[str],
    values: Sequence[str],
    *,
    bounds: dict[str, tuple] | None = None,
    plain: Sequence[str] = (),
) -> str:
    """One HTML table: ``labels`` as left-aligned text, ``n``, each of ``values`` as
    "mean [interval]" (from ``<v>`` and ``<v>_ci95``), ``plain`` columns as numbers."""
    if frame.empty:
        return "<p>(none)</p>"
    bounds = bounds or {}
    cols = [c for c in values if c in frame.columns]
    has_n = "n" in frame.columns
    head = "".join(f'<th class="l">{_esc(_header(c))}</th>' for c in labels)
    head += "<th>n</th>" if has_n else ""
    head += "".join(f"<th>{_esc(_header(c))}</th>" for c in [*cols, *plain])
    rows = []
    for rec in frame.to_dict("records"):
        cells = [f'<td class="l">{_esc(_label_text(rec.get(c)))}</td>' for c in labels]
        n = int(rec["n"]) if has_n else 1
        if has_n:
            cells.append(f"<td>{n}</td>")
        for c in cols:
            cells.append(
                "<td>"
                + _interval_cell(
                    rec[c], rec.get(f"{c}_ci95", float("nan")), n, bounds.get(c, bounds_of(c))
                )
                + "</td>"
            )
        for c in plain:
            cells.append(f"<td>{_esc(fmt_number(rec.get(c)))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _label_text(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return str(v)


def _split_tables(
    frame: pd.DataFrame, labels: list[str], render: Callable[[pd.DataFrame, list[str]], str]
) -> str:
    """``frame`` as one table, or, when long, one table per value of its first label (with
    a heading), so that no table needs a scroll box and each prints on its own."""
    if len(frame) <= _SPLIT_ROWS or not labels:
        return render(frame, labels)
    key, rest = labels[0], labels[1:]
    parts = []
    for value in dict.fromkeys(frame[key]):
        part = frame[frame[key] == value]
        parts.append(f"<h3>{_esc(point_label(key, value))}</h3>")
        parts.append(render(part, rest))
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Figures


def make_figures(res: Results) -> Figures:
    """The figures of a results directory: its preset's when the sweep came from one,
    otherwise generic ones chosen from the grid axes; both end with throughput against
    delay per algorithm."""
    from ccfair.presets import PRESETS

    preset = (res.record or {}).get("sweep", {}).get("preset")
    # A preset run under several testbed profiles has an axis its own figures do not know;
    # the generic ones show every axis rather than mixing the profiles' runs.
    profiles = res.axes.get("profile", []) if "profile" in res.grid_keys else []
    if preset in PRESETS and len(profiles) <= 1:
        figs = PRESETS[preset].figures(res)
    else:
        figs = _generic_figures(res)
    return [*figs, _throughput_delay_figure(res)]


def _throughput_delay_figure(res: Results) -> tuple[str, str, Any]:
    by = "ccas" if "ccas" in res.grid_keys and len(res.axes["ccas"]) > 1 else None
    caption = (
        "Throughput against delay, Pantheon style: per run, each algorithm's mean goodput per "
        "flow against its flows' 95th percentile RTT (sampled smoothed RTT over the "
        "measurement window); filled markers: mean over the repetitions of a point, shaded: "
        "their 1-standard-deviation ellipse (3 or more repetitions). Better is up and right."
    )
    return ("throughput-delay", caption, res.plot.throughput_delay(by=by))


def _generic_figures(res: Results) -> Figures:
    from ccfair.analysis.models import model_table

    figs: Figures = []
    axes = varying_keys(res) if res.axes else []
    group = "ccas" if "ccas" in axes else None
    numericish = [k for k in axes if k not in ("ccas",) and not k.startswith("params.")]
    if len(numericish) >= 2:
        x, y = numericish[0], numericish[1]
        if "delay" in numericish and "alpha" in numericish:
            x, y = "delay", "alpha"
        figs += [
            (n, f"Mean goodput per flow (Mbit/s) over {x} and {y}; darker = higher.", f)
            for n, f in heatmaps(res, x=x, y=y, by=group)
        ]
    if "alpha" in axes:
        others = [k for k in axes if k != "alpha"][:2]
        figs += [
            (
                n,
                "Mean throughput per flow per algorithm against the buffer: mean, repetitions "
                "(dots), 95% interval (band).",
                f,
            )
            for n, f in throughput_vs_buffer(res, x="alpha", panels=others)
        ]
    fig = model_vs_measured(model_table(res), by=group)
    if fig is not None:
        figs.append(("model-vs-measured", "Measured BBR share vs Ware et al. (IMC 2019).", fig))
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    for rid in list(dict.fromkeys(pts["run_id"]))[:3]:
        row = pts[pts["run_id"] == rid].iloc[0]
        label = ", ".join(point_label(k, row[k]) for k in axes) or f"run {rid}"
        figs.append(
            (
                f"timeseries-{rid}",
                f"Time series of one run ({label}); goodput is a {SMOOTH_S:g} s moving average.",
                timeseries(res, rid, title=label),
            )
        )
    return figs


#: Figures handed to forked worker processes (they inherit them; nothing is pickled).
_PENDING: Figures = []


def _save_one(args: tuple[int, str]) -> list[Path]:
    i, out = args
    name, _, fig = _PENDING[i]
    return save(fig, out, name)


def save_figures(
    figures: Figures,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> list[list[Path]]:
    """Write every figure as PNG, SVG and PDF into ``out``; returns each one's paths, in
    order (PNG first).

    Rendering takes most of a report's time, so figures are written by ``jobs`` forked
    processes at once (default: one per core), which inherit the figures instead of pickling
    them; without fork, or with one core, one after the other.
    """
    global _PENDING
    say = say or (lambda msg: None)
    jobs = jobs or min(len(figures), os.cpu_count() or 1)
    if jobs <= 1 or len(figures) <= 1 or "fork" not in mp.get_all_start_methods():
        paths = []
        for i, (name, _, fig) in enumerate(figures, 1):
            paths.append(save(fig, out, name))
            say(f"report: figure {i}/{len(figures)} {name}")
        return paths
    _PENDING = figures
    try:
        with mp.get_context("fork").Pool(jobs) as pool:
            paths = []
            for i, p in enumerate(
                pool.imap(_save_one, [(i, str(out)) for i in range(len(figures))])
            ):
                paths.append(p)
                say(f"report: figure {i + 1}/{len(figures)} {figures[i][0]}")
            return paths
    finally:
        _PENDING = []


# --------------------------------------------------------------------------------------------
# Setup, checks and provenance


def _cca_versions(res: Results) -> list[tuple[str, str]]:
    """Per algorithm that ran: its parameters that differ from ccfair's defaults (from the
    runs' normalised specs), e.g. ("bbr", 'profile "linux-4.9"; extra_acked false')."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for spec in res.specs().values():
        for f in spec.get("flows", []):
            params = f.get("cca_params", {})
            if params not in seen.setdefault(f["cca"], []):
                seen[f["cca"]].append(params)
    out = []
    for cca, variants in seen.items():
        try:
            defaults = algorithm(cca).defaults()
        except KeyError:  # results of an algorithm this version lacks
            defaults = {}
        texts = []
        for params in variants:
            diff = [f"{k} {json.dumps(v)}" for k, v in params.items() if defaults.get(k) != v]
            texts.append("; ".join(diff) if diff else "ccfair's defaults")
        key_of = {"bbr": "profile", "copa": "variant"}.get(cca)
        head = (
            f'{key_of} "{variants[0].get(key_of)}"; ' if key_of and variants[0].get(key_of) else ""
        )
        out.append((cca, head + " | ".join(dict.fromkeys(texts))))
    return out


def _testbed_profiles(specs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The testbed profiles of these normalised specs, in order of first use; a spec without
    one ran on the ideal network.

        >>> _testbed_profiles([{"profile": "linux-stock"}, {}, {"profile": "linux-stock"}])
        ['linux-stock', 'ideal']
    """
    return list(dict.fromkeys(spec.get("profile", "ideal") for spec in specs))


def _setup_rows(
    res: Results, preset: Any, record: dict[str, Any]
) -> list[tuple[str, str, str, str]]:
    """(item, study, ccfair, why) rows: the preset's, then what the runs themselves record."""
    rows: list[tuple[str, str, str, str]] = []
    if preset is not None:
        rows += [(r.item, r.study, r.ccfair, r.why) for r in preset.setup]
    sweep = record.get("sweep", {})
    grid = ", ".join(
        f"{k} in {{{', '.join(str(v) for v in vals)}}}" for k, vals in res.axes.items()
    )
    if grid:
        rows.append(
            ("grid (this run)", "", f"{grid}; {sweep.get('repetitions', 1)} repetition(s)", "")
        )
    runs = res.table("runs")
    durations = sorted({float(d) for d in runs["duration_s"]})
    rows.append(("duration (this run)", "", ", ".join(f"{d:g} s" for d in durations), ""))
    rows.append(
        (
            "testbed profile (this run)",
            "",
            ", ".join(_testbed_profiles(res.specs().values())),
            "what the emulated testbed adds to the ideal network (docs/spec.md, "
            '"Testbed profiles")',
        )
    )
    for cca, text in _cca_versions(res):
        rows.append(
            (
                f"{cca} parameters (this run)",
                "",
                text,
                "normalised parameters that "
                "differ from ccfair's defaults (ccfair ccas lists them all)",
            )
        )
    model = "; ".join(_backend_model(name) for name in sorted(set(runs["backend"])))
    rows.append(("backend", "", model, ""))
    rows.append(
        (
            "ccfair",
            "",
            ", ".join(sorted(set(runs["ccfair_version"])))
            + " (git "
            + ", ".join(sorted({str(g)[:12] for g in runs["git_revision"]}))
            + ")",
            "",
        )
    )
    return rows


def _identical_runs(res: Results) -> list[list[str]]:
    """Groups of runs of different points (or seeds) whose flows ended bit-identical:
    delivered bytes, packets sent and dropped of every flow."""
    flows = res.table("flows")
    sig = (
        flows.sort_values(["run_id", "flow"])
        .groupby("run_id", sort=False)
        .apply(
            lambda g: (
                tuple(g["delivered_bytes"])
                + tuple(g["data_sent_pkts"])
                + tuple(g["data_dropped_pkts"])
            ),
            include_groups=False,
        )
    )
    groups: dict[Any, list[str]] = {}
    for rid, s in sig.items():
        groups.setdefault(s, []).append(str(rid))
    return [g for g in groups.values() if len(g) > 1]


def _backend_model(name: str) -> str:
    """What a backend runs, with its documentation (the registry's summary); a backend no
    longer registered by its name."""
    if name not in backends.REGISTRY:
        return name
    b = backends.get(name)
    return f"{b.summary} ({b.docs})"


def _backend_title(name: str) -> str:
    """``the simulator``, ``the kernel backend``: a backend in a sentence."""
    return backends.get(name).title if name in backends.REGISTRY else f"backend {name}"


def _provenance(res: Results) -> list[tuple[str, str]]:
    runs = res.table("runs")
    rows = []
    names = {
        "ccfair_version": "ccfair version",
        "git_revision": "git revision",
        "backend": "backend",
        "host": "host",
        "kernel": "host OS kernel (the machine that ran ccfair; not the TCP the simulator models)",
        "python": "Python",
    }
    for col, label in names.items():
        if col in runs.columns:
            rows.append((label, ", ".join(sorted({str(v) for v in runs[col]}))))
    if "started_at" in runs.columns:
        rows.append(("runs started", f"{runs['started_at'].min()} to {runs['started_at'].max()}"))
    if "wall_time_s" in runs.columns:
        rows.append(("run wall time (sum)", f"{runs['wall_time_s'].sum():.1f} s"))
    if "duration_s" in runs.columns:
        rows.append(("simulated time (sum)", f"{runs['duration_s'].sum():.0f} s"))
    if "engine_events" in runs.columns:
        rows.append(("engine events (sum)", f"{int(runs['engine_events'].sum()):,}"))
    rows.append(("results directory", str(res.root.resolve())))
    rows.append(("report written", datetime.now(UTC).isoformat(timespec="seconds")))
    return rows


def _kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(
        f'<tr><td class="l">{_esc(a)}</td><td class="l">{_esc(b)}</td></tr>' for a, b in rows
    )
    return f'<table class="setup"><tbody>{body}</tbody></table>'


# --------------------------------------------------------------------------------------------
# The page


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    log: Callable[[str], None] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    timings: dict[str, float] | None = None,
) -> Path:
    """Write the HTML report of ``results_dir`` (default ``DIR/report.html``) and its figures
    (``DIR/figures/*.png|svg|pdf``, or ``figures_dir``); returns the report's path.
    ``timings``, if given, receives the seconds each step took (metrics, figures, saving,
    page).

    Example:
        >>> write_report("results/harada-dumbbell")  # doctest: +SKIP
        PosixPath('results/harada-dumbbell/report.html')
    """
    from ccfair.presets import PRESETS

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    lap = _Laps(timings if timings is not None else {})
    res = Results(results_dir)
    remove_stale_temporaries(res.root)  # of a report or sweep killed mid-write
    target = _report_path(out, res.root)
    # Default figures/ is a folder of the results directory: a link there is refused, as for
    # the table folders; a folder given explicitly is the user's choice. Both are checked
    # before the figures are drawn, which takes most of a report's time.
    fig_dir = (
        table_folder(res.root, "figures")
        if figures_dir is None
        else _given_dir("figures_dir", figures_dir)
    )
    record = res.record or {}
    sweep = record.get("sweep", {})
    study = _Study(res, record, sweep, PRESETS.get(sweep.get("preset", "")))
    say(f"report {study.name!r}: {len(res.run_ids)} runs; computing metrics")
    m = _metrics(res)
    lap("metrics")

    say("report: drawing figures")
    figures = make_figures(res)
    lap("figures")
    embedded = {}
    for (fname, caption, _), paths in zip(
        figures, save_figures(figures, fig_dir, say=say), strict=True
    ):
        png = paths[0].read_bytes()
        embedded[fname] = (caption, base64.b64encode(png).decode("ascii"))
    lap("saving figures")
    figs = _Embedded.of(embedded, study.preset, os.path.relpath(fig_dir, target.parent))

    parts = [
        *_title_section(study),
        *_summary_section(res, m, figs),
        *_setup_section(res, study),
        *_figures_section(figs),
        *_points_section(m),
        *_ccas_section(res, m),
        *_model_section(res, m),
        *_harm_section(res, m),
        *_spec_section(study),
        '<h2 id="provenance">Provenance</h2>',
        _kv_table(_provenance(res)),
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{_esc(study.title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
    replace_via_temporary(target, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    lap("page")
    return target


def _report_path(out: str | os.PathLike[str] | None, root: Path) -> Path:
    """Where the page goes: ``out`` (a file path, its folder created) or ``root/report.html``."""
    if out is None:
        return root / "report.html"
    if not isinstance(out, str | os.PathLike) or not str(out).strip():
        raise ResultsError(f"--out: {show(out)} is not a file path for the report")
    target = Path(out)
    if target.is_dir():
        raise ResultsError(f"--out: {target} is a directory; give the report's file name")
    make_dir(target.parent)
    return target


def _given_dir(what: str, path: str | os.PathLike[str]) -> Path:
    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise ResultsError(f"{what}: {show(path)} is not a directory path")
    make_dir(Path(path))
    return Path(path)


class _Laps:
    """Adds the seconds since the previous lap to ``steps[step]``."""

    def __init__(self, steps: dict[str, float]) -> None:
        self.steps = steps
        self.clock = time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        self.steps[step] = self.steps.get(step, 0.0) + now - self.clock
        self.clock = now


@dataclass(frozen=True)
class _Study:
    """The results directory as a whole: its sweep record and the preset it reproduces."""

    res: Results
    record: dict[str, Any]
    sweep: dict[str, Any]
    preset: Any  # ccfair.presets.Preset | None

    @property
    def name(self) -> Any:
        return self.record.get("name", self.res.root.name)

    @property
    def title(self) -> str:
        return f"ccfair report: {self.name}"


@dataclass(frozen=True)
class _Metrics:
    """The tables the page shows, computed once."""

    #: Columns that tell grid points apart.
    labels: list[str]
    runs: pd.DataFrame
    run_values: list[str]
    point_runs: pd.DataFrame
    cca_values: list[str]
    point_ccas: pd.DataFrame
    model: pd.DataFrame
    harm: pd.DataFrame
    identical: list[list[str]]


def _metrics(res: Results) -> _Metrics:
    from ccfair.analysis.models import model_table

    labels = varying_keys(res) if res.grid_keys else ["scenario", "backend"]
    runs = res.runs()
    runs = (
        runs.assign(overflowed=(runs["drop_queue_pkts"] > 0).astype(float))
        if "drop_queue_pkts" in runs.columns
        else runs
    )
    share_cols = [c for c in runs.columns if c.endswith("_share_frac")]
    run_values = [
        "goodput_mbps",
        "jain_index",
        *share_cols,
        "utilisation_frac",
        "loss_frac",
        "qdelay_mean_ms",
        "queue_p99_bdp",
    ]
    point_runs = res.point_summary(runs, [*run_values, "overflowed"])
    ccas = res.ccas()
    cca_values = ["per_flow_mbps", "share_frac", "rtt_p95_ms", "qdelay_p95_ms"]
    point_ccas = res.point_summary(ccas, cca_values, ["cca"])
    model = model_table(res)
    harm = res.harm()
    identical = _identical_runs(res)
    return _Metrics(
        labels, runs, run_values, point_runs, cca_values, point_ccas, model, harm, identical
    )


@dataclass(frozen=True)
class _Embedded:
    """The figures embedded in the page, numbered in reading order."""

    #: File name -> (caption, PNG as base64).
    figures: dict[str, tuple[str, str]]
    #: The figures the summary shows.
    head: list[str]
    number: dict[str, int]
    #: The figures' directory, relative to the page.
    rel: str

    @classmethod
    def of(cls, figures: dict[str, tuple[str, str]], preset: Any, rel: str) -> _Embedded:
        head = [f for f in (preset.headline if preset else ()) if f in figures]
        if not head and figures:
            head = [next(iter(figures))]
        # Numbered in reading order: the summary's headline figures first.
        order = [*head, *[f for f in figures if f not in head]]
        return cls(figures, head, {fname: i for i, fname in enumerate(order, 1)}, rel)

    def html(self, fname: str) -> str:
        caption, b64 = self.figures[fname]
        files = ", ".join(f"{self.rel}/{fname}.{ext}" for ext in ("pdf", "svg", "png"))
        return (
            f'<figure id="fig-{_esc(fname)}"><img src="data:image/png;base64,{b64}" '
            f'alt="{_esc(caption)}"><figcaption><b>Figure {self.number[fname]}.</b> '
            f"{_esc(caption)} <small>({_esc(files)})</small></figcaption></figure>"
        )


_SECTIONS = [
    ("summary", "Summary"),
    ("setup", "Setup"),
    ("figures", "Figures"),
    ("points", "Per grid point"),
    ("ccas", "Per algorithm"),
    ("model", "Model"),
    ("harm", "Harm"),
    ("spec", "Sweep spec"),
    ("provenance", "Provenance"),
]

_INTERVAL_NOTE = (
    "Each cell: mean over the n repetitions of the point and, in brackets, its 95% "
    "interval (Student t, clipped to the metric's physical range: [0, 1] for the Jain index, "
    "shares and fractions, at least 0 for rates and delays); numbers to the precision the "
    "interval supports."
)


def _title_section(study: _Study) -> list[str]:
    parts = [f"<h1>{_esc(study.title)}</h1>"]
    if study.preset is not None:
        parts.append(
            f'<p class="sub">{_esc(study.preset.title)}. Study: {_esc(study.preset.study)}.</p>'
        )
    if study.sweep.get("description"):
        parts.append(f"<p>{_esc(study.sweep['description'])}</p>")
    parts.append(
        "<nav>" + "".join(f'<a href="#{a}">{_esc(t)}</a>' for a, t in _SECTIONS) + "</nav>"
    )
    return parts


def _summary_section(res: Results, m: _Metrics, figs: _Embedded) -> list[str]:
    """What ran, the headline numbers, what the checks found and the headline figures."""
    parts = ['<h2 id="summary">Summary</h2>']
    done, expected = len(res.run_ids), res.n_expected
    status = f"{done} of {expected} runs finished"
    pts = res.points()
    grid_pts = pts[pts["baseline"].isna()]
    n_points = grid_pts["point_key"].nunique() if len(grid_pts) else 0
    reps = grid_pts.groupby("point_key")["run_id"].nunique() if len(grid_pts) else pd.Series([0])
    items = []
    if done < expected:
        parts.append(
            f'<p class="warn">{_esc(status)}: the sweep is incomplete; rerun it to finish. '
            "Tables and figures cover the finished runs only.</p>"
        )
    else:
        items.append(f"{status}: {n_points} grid points x {_n_reps(reps)} repetition(s).")
    runs_t = res.table("runs")
    on = " and ".join(_backend_title(name) for name in sorted(set(runs_t["backend"])))
    items.append(
        f"{runs_t['duration_s'].sum():.0f} s of network time on {on}, ccfair "
        f"{', '.join(sorted(set(runs_t['ccfair_version'])))}."
    )
    items += _headline_numbers(res, m.point_runs)
    unreliable = (
        int((~runs_t["reliable"].astype(bool)).sum()) if "reliable" in runs_t.columns else 0
    )
    if unreliable:
        items.append(
            f"<b>{unreliable} run(s) flagged unreliable</b> by the kernel backend's self-checks."
        )
    items += _check_items(res, m.runs, m.identical)
    parts.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    parts += [figs.html(fname) for fname in figs.head]
    return parts


def _setup_section(res: Results, study: _Study) -> list[str]:
    parts = ['<h2 id="setup">Setup</h2>']
    if study.preset is not None:
        parts.append(
            "<p>What the study states and what ccfair runs, item by item; the last column "
            "says why wherever ccfair had to choose. Rows marked (this run) come from the runs "
            "themselves.</p>"
        )
    rows = _setup_rows(res, study.preset, study.record)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    parts.append(
        '<table class="setup"><thead><tr><th class="l">item</th><th class="l">study</th>'
        '<th class="l">ccfair</th><th class="l">why</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )
    return parts


def _figures_section(figs: _Embedded) -> list[str]:
    """Every figure the summary does not already show."""
    parts = ['<h2 id="figures">Figures</h2>']
    if not figs.figures:
        parts.append("<p>(no figures)</p>")
    elif figs.head:
        parts.append(
            "<p>"
            + ", ".join(f'<a href="#fig-{_esc(f)}">Figure {figs.number[f]}</a>' for f in figs.head)
            + (" appears" if len(figs.head) == 1 else " appear")
            + " in the summary.</p>"
        )
    parts += [figs.html(fname) for fname in figs.figures if fname not in figs.head]
    return parts


def _points_section(m: _Metrics) -> list[str]:
    vals = [v for v in m.run_values if v in m.point_runs.columns]
    return [
        '<h2 id="points">Per grid point</h2>',
        f"<p>{_INTERVAL_NOTE} total goodput: all flows over the measurement window; Jain "
        "index of the flows' goodput; X share: algorithm X's share of goodput; at the "
        "bottleneck(s): utilisation, loss rate, queueing delay (mean sojourn minus one "
        "serialisation), queue p99 (99th percentile of the sampled queue, in BDPs of the "
        "buffer's reference path) and buffer overflowed (fraction of the repetitions with a "
        "drop from a full buffer: 0 means the buffer never filled). Column definitions: "
        "docs/results.md.</p>",
        _split_tables(
            m.point_runs,
            [k for k in m.labels if k in m.point_runs.columns],
            lambda f, lab: _html_table(f, lab, [*vals, "overflowed"]),
        ),
    ]


def _ccas_section(res: Results, m: _Metrics) -> list[str]:
    links = res.table("link_summary")
    # Goodput per flow is bounded by the slowest link's rate.
    cap = float(links["rate_mbps"].min()) if len(links) else None
    return [
        '<h2 id="ccas">Per algorithm</h2>',
        f"<p>{_INTERVAL_NOTE} goodput per flow: mean goodput of one flow of the algorithm; "
        "share: the algorithm's share of all goodput; RTT p95 and queueing delay p95: 95th "
        "percentiles of its flows' sampled RTT and queueing delay (RTT minus the propagation "
        "RTT) over the measurement window.</p>",
        _split_tables(
            m.point_ccas,
            [k for k in [*m.labels, "cca"] if k in m.point_ccas.columns],
            lambda f, lab: _html_table(f, lab, m.cca_values, bounds={"per_flow_mbps": (0.0, cap)}),
        ),
    ]


def _model_section(res: Results, m: _Metrics) -> list[str]:
    """BBR's measured share against Ware et al.'s model, per point."""
    parts = ['<h2 id="model">Model comparison</h2>']
    if m.model.empty:
        parts.append("<p>No point has BBR against loss-based flows on one bottleneck.</p>")
        return parts
    parts.append(
        "<p>BBR's share of goodput, measured (mean [95% interval] over repetitions) and "
        "predicted by Ware et al. (IMC 2019). <b>ware_full</b>: (1 − p)(1 − (q/c + "
        "probe_rtt + l) / min_rtt_win) with p = ½ − 1/(2X) − 4N/q (p ≥ 0); "
        "<b>ware_simple</b>: 1 − p with p = ½ − 1/(2X). c: capacity (packets/s), l: base "
        "RTT, q: buffer (packets), X = q/(c·l), N: BBR flows. The model assumes bulk flows "
        "from a synchronised start, equal base RTTs, one full drop-tail bottleneck and "
        "stock BBR; the flags say where a point departs from that.</p>"
    )
    flags = ["equal_rtt", "sync_start", "stock_bbr"]
    summ = res.point_summary(m.model, ["measured", "ware_simple", "ware_full", "x_bdp"])
    keys = [k for k in m.labels if k in summ.columns]
    if keys:
        assumptions = m.model.groupby(keys, sort=False, dropna=False)[flags].all()
        summ = summ.merge(assumptions.reset_index(), on=keys, how="left")
    summ["error_full"] = summ["measured"] - summ["ware_full"]
    plain = [
        "ware_full",
        "ware_simple",
        "x_bdp",
        "error_full",
        *[f for f in flags if f in summ],
    ]
    parts.append(
        _split_tables(summ, keys, lambda f, lab: _html_table(f, lab, ["measured"], plain=plain))
    )
    mae = float(summ["error_full"].abs().mean())
    parts.append(
        f"<p>Mean absolute difference measured − ware_full: {fmt_number(mae, 3)} "
        f"over {len(summ)} points.</p>"
    )
    return parts


def _harm_section(res: Results, m: _Metrics) -> list[str]:
    """Harm to the incumbent's flows, where baseline runs exist."""
    parts = ['<h2 id="harm">Harm</h2>']
    if m.harm.empty:
        parts.append(
            "<p>No baseline runs in this directory (a baseline has every flow running the "
            "incumbent algorithm). Run the sweep with <code>baselines = true</code> (or "
            "<code>ccfair reproduce NAME --baselines</code>) to get harm.</p>"
        )
        return parts
    parts.append(
        "<p>Ware et al. (HotNets 2019): harm to the incumbent's flows, against the same "
        "scenario with every flow running the incumbent. goodput harm = (baseline − with) "
        "/ baseline; RTT harm = (with − baseline) / with. "
        f"{_INTERVAL_NOTE}</p>"
    )
    hs = res.point_summary(
        m.harm, ["harm_goodput_frac", "harm_rtt_frac"], ["incumbent", "contender"]
    )
    hkeys = [k for k in [*m.labels, "incumbent", "contender"] if k in hs.columns]
    parts.append(
        _split_tables(
            hs,
            hkeys,
            lambda f, lab: _html_table(f, lab, ["harm_goodput_frac", "harm_rtt_frac"]),
        )
    )
    return parts


def _spec_section(study: _Study) -> list[str]:
    parts = ['<h2 id="spec">Sweep spec</h2>']
    record, preset = study.record, study.preset
    if not record:
        parts.append("<p>This directory was not written by a sweep (no sweep.json).</p>")
        return parts
    parts.append(
        f"<p>Hash {_esc(record.get('hash'))}; {len(record.get('run_ids', []))} distinct runs "
        f"from {record.get('n_points')} points.</p>"
    )
    if preset is not None and preset.quick_note and str(study.name).endswith("-quick"):
        parts.append(f'<p class="note">--quick grid: {_esc(preset.quick_note)}.</p>')
    parts.append(f"<pre>{_esc(json.dumps(study.sweep, indent=2))}</pre>")
    return parts


def _n_reps(reps: pd.Series) -> str:
    lo, hi = int(reps.min()), int(reps.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _headline_numbers(res: Results, point_runs: pd.DataFrame) -> list[str]:
    """One line per headline metric: its range over the grid points and where."""
    out = []
    keys = [k for k in varying_keys(res) if k in point_runs.columns] if res.grid_keys else []
    grid = (
        point_runs[point_runs["baseline"] == ""] if "baseline" in point_runs.columns else point_runs
    )
    shares = [c for c in grid.columns if c.endswith("_share_frac") and c != "bbr_share_frac"]
    for col, what in (("jain_index", "Jain index"), ("bbr_share_frac", "BBR's share of goodput")):
        rows = grid
        if col == "bbr_share_frac" and col in grid.columns:  # only where BBR has company
            rows = grid[grid[shares].notna().any(axis=1)] if shares else grid.iloc[0:0]
        if col not in rows.columns or rows[col].isna().all() or rows[col].min() == rows[col].max():
            continue
        lo = rows.loc[rows[col].idxmin()]
        hi = rows.loc[rows[col].idxmax()]

        def where(row: Any) -> str:
            return ", ".join(point_label(k, row[k]) for k in keys) or "the only point"

        out.append(
            f"{_esc(what)} per point (mean over repetitions): from "
            f"{_esc(fmt_interval(lo[col], lo[f'{col}_ci95'], int(lo['n']), bounds_of(col)))} "
            f"({_esc(where(lo))}) to "
            f"{_esc(fmt_interval(hi[col], hi[f'{col}_ci95'], int(hi['n']), bounds_of(col)))} "
            f"({_esc(where(hi))})."
        )
    return out


def _explain_identical(res: Results, runs: pd.DataFrame, group: list[str]) -> str | None:
    """Why the runs of ``group`` (bit-identical) may be identical, or None if nothing does:
    they must share a seed and differ only in the buffer (then none may have dropped a packet
    from a full buffer: the buffer never filled) or in BBR's parameters (then the RTprop
    modification must never have fired: no forced expiry, no RTprop update)."""
    sub = runs.set_index("run_id").loc[group]
    if sub["seed"].nunique() != 1:
        return None
    differ = [k for k in res.grid_keys if k in sub.columns and sub[k].astype(str).nunique() > 1]
    reasons = []
    for k in differ:
        if k == "alpha" and (sub["drop_queue_pkts"] == 0).all():
            reasons.append("buffer never filled")
        elif k.startswith("params.") and (sub["bbr_modification_count"].fillna(0) == 0).all():
            reasons.append("BBR modification never fired")
        elif k == "ccas" and _only_slow_start_differs(res, group):
            reasons.append(
                "flows whose algorithm differs (Reno or CUBIC) never reached congestion avoidance"
            )
        else:
            return None
    return " and ".join(reasons) if reasons else None


def _only_slow_start_differs(res: Results, group: list[str]) -> bool:
    """Whether the flows whose algorithm differs between the runs of ``group`` are Reno or
    CUBIC flows that never ran congestion avoidance: CUBIC never started an epoch (its
    bictcp_update never ran). Until then Linux's Reno and CUBIC are the same (tcp_slow_start,
    and after a timeout ssthresh at its floor of 2), so such runs are the same run."""
    flows = res.table("flows")
    flows = flows[flows["run_id"].isin(group)]
    for _, f in flows.groupby("flow_name", sort=False):
        if f["cca"].nunique() == 1:
            continue
        if not set(f["cca"]) <= {"reno", "cubic"} or "cubic_epoch_count" not in f:
            return False
        cubic = f[f["cca"] == "cubic"]
        if (cubic["cubic_epoch_count"].fillna(0) > 0).any():
            return False
    return True


def _check_items(res: Results, runs: pd.DataFrame, identical: list[list[str]]) -> list[str]:
    """What the checks found: buffers that never filled, runs that ended identical and why."""
    out = []
    grid = runs[runs["baseline"].isna()]
    keys = [k for k in varying_keys(res) if k in grid.columns] if res.grid_keys else []

    def where(row: Any) -> str:
        return ", ".join(point_label(k, row[k]) for k in keys)

    if "drop_queue_pkts" in grid.columns and "alpha" in res.axes and keys:
        never = [
            g.iloc[0]
            for _, g in grid.groupby("point_key", sort=False)
            if (g["drop_queue_pkts"] == 0).all()
        ]
        if never:
            text = "; ".join(where(r) for r in never[:12])
            more = f" and {len(never) - 12} more" if len(never) > 12 else ""
            out.append(
                f"<b>The buffer never filled</b> in any repetition at {len(never)} point(s) "
                f"(no packet dropped at the bottleneck): {_esc(text)}{more}. There the flows "
                "kept less data in the network than the buffer holds, so any larger buffer is "
                "the same network and gives the same runs, seed by seed."
            )
    if not identical:
        out.append("No two runs ended identical (every run's flows differ from every other's).")
        return out
    flows = res.table("flows")
    mods = [c for c in ("bbr_forced_expiry_count", "bbr_rtprop_update_count") if c in flows]
    counts = flows.groupby("run_id")[mods].sum().sum(axis=1) if mods else pd.Series(dtype=float)
    runs = runs.assign(bbr_modification_count=runs["run_id"].map(counts))
    explained: dict[str, int] = {}
    unexplained = []
    for group in identical:
        why = _explain_identical(res, runs, group)
        if why is None:
            unexplained.append(group)
        else:
            explained[why] = explained.get(why, 0) + 1
    if explained:
        parts = "; ".join(f"{n} because the {why}" for why, n in explained.items())
        out.append(
            f"{sum(explained.values())} group(s) of runs of one seed ended bit-identical (every "
            f"flow's delivered, sent and dropped packets): {_esc(parts)}. These points differ "
            "only in something the runs never reached, so they are the same network."
        )
    if unexplained:
        pts = runs.set_index("run_id")
        described = []
        for group in unexplained[:6]:
            labs = [f"{where(pts.loc[r])}, seed {pts.loc[r, 'seed']}" for r in group[:4]]
            described.append(" = ".join(labs))
        out.append(
            f'<span class="warn"><b>{len(unexplained)} group(s) of runs ended identical for no '
            f"reason ccfair can see</b>: {_esc('; '.join(described))}"
            + (" ..." if len(unexplained) > 6 else "")
            + ". Look at these points: a grid value had no effect on these runs (e.g. on a "
            "flow starved to a few packets, Reno and CUBIC act alike), or two points describe "
            "the same network.</span>"
        )
    return out
