"""One self-contained HTML report of a results directory (``ccfair report DIR``).

The page embeds every figure (PNG, base64; the SVG files sit next to it in ``DIR/figures``),
and holds the summary tables (per grid point: goodput, Jain index, utilisation, loss rate,
queueing delay, per-CCA shares, each with its 95% CI over repetitions), the model comparison
(Ware et al.) where it applies, harm where baseline runs exist, the sweep spec and provenance.
No scripts and no external resources: it opens anywhere, offline.
"""

from __future__ import annotations

import base64
import html
import json
import math
import multiprocessing as mp
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ccfair import plots
from ccfair.metrics import Results
from ccfair.results import replace_via_temporary

__all__ = ["make_figures", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd}
.sub{color:#555;margin-top:0}nav a{margin-right:1rem}
table{border-collapse:collapse;font-size:.82rem;margin:.6rem 0}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure{margin:1.2rem 0;border:1px solid #eee;padding:.6rem}
figure img{max-width:100%;height:auto;display:block;margin:auto}
figcaption{font-size:.85rem;color:#444;margin-top:.4rem}
pre{background:#f7f7f7;padding:.8rem;overflow-x:auto;font-size:.78rem}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.5rem .8rem}
.scroll{max-height:36rem;overflow:auto}
"""

Figures = list[tuple[str, str, Any]]


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.4g}"
    return str(v)


def _mean_ci(summary: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Merge ``<col>`` and ``<col>_ci95`` into one "mean ± ci" column each."""
    out = summary.copy()
    for col in cols:
        if col not in out.columns:
            continue
        ci = out.get(f"{col}_ci95")
        out[col] = [
            _fmt(m) + (f" ± {c:.2g}" if ci is not None and isinstance(c, float) and c == c else "")
            for m, c in zip(out[col], ci if ci is not None else [None] * len(out), strict=True)
        ]
        if ci is not None:
            out = out.drop(columns=[f"{col}_ci95"])
    return out


def _table(frame: pd.DataFrame, *, max_rows: int = 400) -> str:
    if frame.empty:
        return "<p>(none)</p>"
    shown = frame.head(max_rows)
    body = shown.to_html(index=False, escape=True, na_rep="", float_format=lambda v: f"{v:.4g}")
    more = (
        f"<p>{len(frame) - max_rows} more rows: see <code>ccfair metrics</code>.</p>"
        if len(frame) > max_rows
        else ""
    )
    return f'<div class="scroll">{body}</div>{more}'


def make_figures(res: Results) -> Figures:
    """The figures of a results directory: its preset's when the sweep came from one,
    otherwise generic ones chosen from the grid axes; both end with throughput against
    delay per algorithm."""
    from ccfair.presets import PRESETS

    preset = (res.record or {}).get("sweep", {}).get("preset")
    figs = PRESETS[preset].figures(res) if preset in PRESETS else _generic_figures(res)
    return [*figs, _throughput_delay_figure(res)]


def _throughput_delay_figure(res: Results) -> tuple[str, str, Any]:
    by = "ccas" if "ccas" in res.grid_keys else None
    caption = (
        "Throughput against delay, Pantheon style: per run, each algorithm's mean goodput per "
        "flow against its flows' 95th percentile RTT (sampled smoothed RTT over the "
        "measurement window); large markers: mean over the repetitions of a point, shaded: "
        "their 1-standard-deviation ellipse (3 or more repetitions). Better is up and right."
    )
    return ("throughput-delay", caption, res.plot.throughput_delay(by=by))


def _generic_figures(res: Results) -> Figures:
    from ccfair.models import model_table

    figs: Figures = []
    axes = res.grid_keys
    group = "ccas" if "ccas" in axes else None
    numericish = [k for k in axes if k not in ("ccas",) and not k.startswith("params.")]
    if len(numericish) >= 2:
        x, y = numericish[0], numericish[1]
        if "delay" in numericish and "alpha" in numericish:
            x, y = "delay", "alpha"
        figs += [
            (n, f"Mean goodput per flow (Mbit/s) over {x} and {y}; darker = higher.", f)
            for n, f in plots.heatmaps(res, x=x, y=y, by=group)
        ]
    if "alpha" in axes:
        others = [k for k in axes if k != "alpha"][:2]
        figs += [
            (n, "Mean throughput per flow per CCA against the buffer, 95% CI bands.", f)
            for n, f in plots.throughput_vs_buffer(res, x="alpha", panels=others)
        ]
    fig = plots.model_vs_measured(model_table(res), by=group)
    if fig is not None:
        figs.append(("model-vs-measured", "Measured BBR share vs Ware et al. (IMC 2019).", fig))
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    for rid in list(dict.fromkeys(pts["run_id"]))[:3]:
        row = pts[pts["run_id"] == rid].iloc[0]
        label = ", ".join(f"{k}={row[k]}" for k in axes) or f"run {rid}"
        figs.append(
            (
                f"timeseries-{rid}",
                f"Time series of one run ({label}).",
                plots.timeseries(res, rid, title=label),
            )
        )
    return figs


#: Figures handed to forked worker processes (they inherit them; nothing is pickled).
_PENDING: Figures = []


def _save_one(args: tuple[int, str]) -> list[Path]:
    i, out = args
    name, _, fig = _PENDING[i]
    return plots.save(fig, out, name)


def save_figures(
    figures: Figures,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> list[list[Path]]:
    """Write every figure as PNG and SVG into ``out``; returns each one's paths, in order.

    Rendering (SVG above all) takes most of a report's time, so figures are written by
    ``jobs`` forked processes at once (default: one per core), which inherit the figures
    instead of pickling them; without fork, or with one core, one after the other.
    """
    global _PENDING
    say = say or (lambda msg: None)
    jobs = jobs or min(len(figures), os.cpu_count() or 1)
    if jobs <= 1 or len(figures) <= 1 or "fork" not in mp.get_all_start_methods():
        paths = []
        for i, (name, _, fig) in enumerate(figures, 1):
            paths.append(plots.save(fig, out, name))
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


def _provenance(res: Results) -> pd.DataFrame:
    runs = res.table("runs")
    rows = []
    for col in ("ccfair_version", "git_revision", "backend", "host", "kernel", "python"):
        if col in runs.columns:
            rows.append((col, ", ".join(sorted({str(v) for v in runs[col]}))))
    if "started_at" in runs.columns:
        rows.append(("runs started", f"{runs['started_at'].min()} to {runs['started_at'].max()}"))
    if "wall_time_s" in runs.columns:
        rows.append(("simulation wall time (sum)", f"{runs['wall_time_s'].sum():.1f} s"))
    if "engine_events" in runs.columns:
        rows.append(("engine events (sum)", f"{int(runs['engine_events'].sum()):,}"))
    rows.append(("results directory", str(res.root.resolve())))
    rows.append(("report written", datetime.now(UTC).isoformat(timespec="seconds")))
    return pd.DataFrame(rows, columns=["item", "value"])


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Write the HTML report of ``results_dir`` (default ``DIR/report.html``) and its figures
    (``DIR/figures/*.png|svg``); returns the report's path.

    Example:
        >>> write_report("results/harada-dumbbell")  # doctest: +SKIP
        PosixPath('results/harada-dumbbell/report.html')
    """
    from ccfair.models import model_table
    from ccfair.presets import PRESETS

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    res = Results(results_dir)
    root = res.root
    target = Path(out) if out is not None else root / "report.html"
    fig_dir = root / "figures"
    record = res.record or {}
    sweep = record.get("sweep", {})
    preset = PRESETS.get(sweep.get("preset", ""))
    name = record.get("name", root.name)
    say(f"report {name!r}: {len(res.run_ids)} runs; computing metrics")

    runs = res.runs()
    share_cols = [c for c in runs.columns if c.endswith("_share_frac")]
    run_values = [
        "goodput_mbps",
        "jain_index",
        *share_cols,
        "utilisation_frac",
        "loss_frac",
        "qdelay_mean_ms",
        "queue_delay_p95_ms",
    ]
    point_runs = res.point_summary(runs, run_values).drop(columns=["point_key"])
    ccas = res.ccas()
    cca_values = ["per_flow_mbps", "share_frac", "rtt_mean_ms", "rtt_p95_ms", "qdelay_p95_ms"]
    point_ccas = res.point_summary(ccas, cca_values, ["cca"]).drop(columns=["point_key"])
    model = model_table(res)
    harm = res.harm()

    say("report: drawing figures")
    figures = make_figures(res)
    embedded = []
    for (fname, caption, _), paths in zip(
        figures, save_figures(figures, fig_dir, say=say), strict=True
    ):
        png = paths[0].read_bytes()
        embedded.append((fname, caption, base64.b64encode(png).decode("ascii")))

    parts: list[str] = []
    title = f"ccfair report: {name}"
    parts.append(f"<h1>{_esc(title)}</h1>")
    if preset is not None:
        parts.append(f'<p class="sub">{_esc(preset.title)}. Study: {_esc(preset.study)}.</p>')
    if sweep.get("description"):
        parts.append(f"<p>{_esc(sweep['description'])}</p>")
    done = len(res.run_ids)
    expected = res.n_expected
    status = f"{done} of {expected} runs finished"
    if done < expected:
        parts.append(
            f'<p class="warn">{_esc(status)}: the sweep is incomplete; rerun it to finish. '
            "Tables and figures cover the finished runs only.</p>"
        )
    else:
        pts = res.points()
        n_points = len(pts.drop_duplicates([*res.grid_keys, "baseline"])) if len(pts) else 0
        reps = int(pts["rep"].max()) + 1 if len(pts) else 0
        parts.append(f"<p>{_esc(status)}: {n_points} grid points x {reps} repetition(s).</p>")
    sections = [
        ("summary", "Summary per grid point"),
        ("ccas", "Per algorithm"),
        ("figures", "Figures"),
        ("model", "Model comparison"),
        ("harm", "Harm"),
        ("spec", "Sweep spec"),
        ("provenance", "Provenance"),
    ]
    parts.append("<nav>" + "".join(f'<a href="#{a}">{_esc(t)}</a>' for a, t in sections) + "</nav>")

    parts.append('<h2 id="summary">Summary per grid point</h2>')
    parts.append(
        "<p>Mean ± 95% CI half-width over repetitions (Student t). goodput: all flows, "
        "Mbit/s, over the measurement window; jain_index: Jain index of the flows' goodput; "
        "X_share_frac: algorithm X's share of goodput; at the bottleneck(s): utilisation_frac, "
        "loss_frac, qdelay_mean_ms (mean sojourn minus one serialisation) and "
        "queue_delay_p95_ms (95th percentile of the sampled queue drain time). Column "
        "definitions: docs/results.md.</p>"
    )
    parts.append(_table(_mean_ci(point_runs, run_values)))

    parts.append('<h2 id="ccas">Per algorithm</h2>')
    parts.append(
        "<p>per_flow_mbps: mean goodput of one flow of the algorithm; share_frac: the "
        "algorithm's share of all goodput; rtt_mean_ms: mean RTT of its flows; rtt_p95_ms and "
        "qdelay_p95_ms: 95th percentiles of its flows' sampled RTT and queueing delay (RTT "
        "minus the propagation RTT) over the measurement window.</p>"
    )
    parts.append(_table(_mean_ci(point_ccas, cca_values)))

    parts.append('<h2 id="figures">Figures</h2>')
    if not embedded:
        parts.append("<p>(no figures)</p>")
    for fname, caption, b64 in embedded:
        parts.append(
            f'<figure id="fig-{_esc(fname)}"><img src="data:image/png;base64,{b64}" '
            f'alt="{_esc(caption)}"><figcaption>{_esc(caption)} '
            f"<small>(figures/{_esc(fname)}.svg, .png)</small></figcaption></figure>"
        )

    parts.append('<h2 id="model">Model comparison</h2>')
    if model.empty:
        parts.append("<p>No point has BBR against loss-based flows on one bottleneck.</p>")
    else:
        parts.append(
            "<p>BBR's share of goodput, measured (mean ± 95% CI over repetitions) and predicted "
            "by Ware et al. (IMC 2019). <b>ware_full</b>: (1 − p)(1 − (q/c + probe_rtt + l) / "
            "min_rtt_win) with p = ½ − 1/(2X) − 4N/q (p ≥ 0); <b>ware_simple</b>: 1 − p with "
            "p = ½ − 1/(2X). c: capacity (packets/s), l: base RTT, q: buffer (packets), "
            "X = q/(c·l), N: BBR flows. The model assumes bulk flows from a synchronised start, "
            "equal base RTTs, one full drop-tail bottleneck and stock BBR; the flags below say "
            "where a point departs from that.</p>"
        )
        flags = ["equal_rtt", "sync_start", "stock_bbr"]
        summ = res.point_summary(model, ["measured", "ware_simple", "ware_full", "x_bdp"])
        summ = summ.drop(columns=["point_key"])
        keys = [k for k in res.grid_keys if k in summ.columns]
        if keys:
            assumptions = model.groupby(keys, sort=False, dropna=False)[flags].all()
            summ = summ.merge(assumptions.reset_index(), on=keys, how="left")
        summ["error_full"] = summ["measured"] - summ["ware_full"]
        summ = summ.drop(columns=["ware_simple_ci95", "ware_full_ci95", "x_bdp_ci95"])
        parts.append(_table(_mean_ci(summ, ["measured"])))
        mae = float((summ["error_full"]).abs().mean())
        parts.append(
            f"<p>Mean absolute difference measured − ware_full: {mae:.3f} "
            f"over {len(summ)} points.</p>"
        )

    parts.append('<h2 id="harm">Harm</h2>')
    if harm.empty:
        parts.append(
            "<p>No baseline runs in this directory (a baseline has every flow running the "
            "incumbent algorithm). Run the sweep with <code>baselines = true</code> (or "
            "<code>ccfair reproduce NAME --baselines</code>) to get harm.</p>"
        )
    else:
        parts.append(
            "<p>Ware et al. (HotNets 2019): harm to the incumbent's flows, against the same "
            "scenario with every flow running the incumbent. harm_goodput_frac = "
            "(baseline − with) / baseline; harm_rtt_frac = (with − baseline) / with. "
            "Mean ± 95% CI over repetitions.</p>"
        )
        hs = res.point_summary(
            harm, ["harm_goodput_frac", "harm_rtt_frac"], ["incumbent", "contender"]
        )
        hs = hs.drop(columns=["point_key"])
        parts.append(_table(_mean_ci(hs, ["harm_goodput_frac", "harm_rtt_frac"])))

    parts.append('<h2 id="spec">Sweep spec</h2>')
    if record:
        parts.append(
            f"<p>Hash {_esc(record.get('hash'))}; {len(record.get('run_ids', []))} distinct runs "
            f"from {record.get('n_points')} points.</p>"
        )
        if preset is not None and preset.notes:
            parts.append(
                "<p>Choices of the preset:</p><ul>"
                + "".join(f"<li>{_esc(n)}</li>" for n in preset.notes)
                + "</ul>"
            )
        parts.append(f"<pre>{_esc(json.dumps(sweep, indent=2))}</pre>")
    else:
        parts.append("<p>This directory was not written by a sweep (no sweep.json).</p>")

    parts.append('<h2 id="provenance">Provenance</h2>')
    parts.append(_table(_provenance(res)))

    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_via_temporary(target, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    return target
