"""The report's sections, in page order: title, summary (what ran, the headline figures, what
the checks found), setup, figures, the tables per grid point and per algorithm, the model
comparison, harm, the sweep spec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccfair.analysis.models import model_table
from ccfair.analysis.stats import bounds_of
from ccfair.present.style import point_label, varying_keys
from ccfair.presets import Preset
from ccfair.report.html import esc, fmt_interval, fmt_number, html_table, split_tables
from ccfair.report.setup import backend_title, identical_runs, setup_rows
from ccfair.results.directory import Results


@dataclass(frozen=True)
class Study:
    """The results directory as a whole: its sweep record and the preset it reproduces."""

    res: Results
    record: dict[str, Any]
    sweep: dict[str, Any]
    preset: Preset | None

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


def metrics(res: Results) -> _Metrics:
    labels = varying_keys(res) if res.grid_keys else ["scenario", "backend"]
    runs = res.run_metrics()
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
        "queue_wait_mean_ms",
        "queue_p99_bdp",
    ]
    run_values = [v for v in run_values if v in runs.columns]
    point_runs = res.point_summary(runs, [*run_values, "overflowed"])
    ccas = res.ccas()
    cca_values = ["per_flow_mbps", "share_frac", "rtt_p95_ms", "qdelay_p95_ms"]
    point_ccas = res.point_summary(ccas, cca_values, ["cca"])
    model = model_table(res)
    harm = res.harm()
    identical = identical_runs(res)
    return _Metrics(
        labels, runs, run_values, point_runs, cca_values, point_ccas, model, harm, identical
    )


@dataclass(frozen=True)
class Embedded:
    """The figures embedded in the page, numbered in reading order."""

    #: File name -> (caption, PNG as base64).
    figures: dict[str, tuple[str, str]]
    #: The figures the summary shows.
    head: list[str]
    number: dict[str, int]
    #: The figures' directory, relative to the page.
    rel: str

    @classmethod
    def of(cls, figures: dict[str, tuple[str, str]], preset: Preset | None, rel: str) -> Embedded:
        head = [f for f in (preset.headline if preset else ()) if f in figures]
        if not head and preset is not None:  # drawn per testbed: the first one's headline
            split = {f.split("--")[0]: f for f in reversed(list(figures))}
            head = [split[f] for f in preset.headline if f in split]
        if not head and figures:
            head = [next(iter(figures))]
        # Numbered in reading order: the summary's headline figures first.
        order = [*head, *[f for f in figures if f not in head]]
        return cls(figures, head, {fname: i for i, fname in enumerate(order, 1)}, rel)

    def html(self, fname: str) -> str:
        caption, b64 = self.figures[fname]
        files = ", ".join(f"{self.rel}/{fname}.{ext}" for ext in ("pdf", "svg", "png"))
        return (
            f'<figure id="fig-{esc(fname)}"><img src="data:image/png;base64,{b64}" '
            f'alt="{esc(caption)}"><figcaption><b>Figure {self.number[fname]}.</b> '
            f"{esc(caption)} <small>({esc(files)})</small></figcaption></figure>"
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


def title_section(study: Study) -> list[str]:
    parts = [f"<h1>{esc(study.title)}</h1>"]
    if study.preset is not None:
        parts.append(
            f'<p class="sub">{esc(study.preset.title)}. Study: {esc(study.preset.study)}.</p>'
        )
    if study.sweep.get("description"):
        parts.append(f"<p>{esc(study.sweep['description'])}</p>")
    parts.append("<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in _SECTIONS) + "</nav>")
    return parts


def summary_section(res: Results, m: _Metrics, figs: Embedded) -> list[str]:
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
            f'<p class="warn">{esc(status)}: the sweep is incomplete; rerun it to finish. '
            "Tables and figures cover the finished runs only.</p>"
        )
    else:
        items.append(f"{status}: {n_points} grid points x {_n_reps(reps)} repetition(s).")
    runs_t = res.table("runs")
    on = " and ".join(backend_title(name) for name in sorted(set(runs_t["backend"])))
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


def setup_section(res: Results, study: Study) -> list[str]:
    parts = ['<h2 id="setup">Setup</h2>']
    if study.preset is not None:
        parts.append(
            "<p>What the study states and what ccfair runs, item by item; the last column "
            "says why wherever ccfair had to choose. Rows marked (this run) come from the runs "
            "themselves.</p>"
        )
    rows = setup_rows(res, study.preset, study.record)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    parts.append(
        '<table class="setup"><thead><tr><th class="l">item</th><th class="l">study</th>'
        '<th class="l">ccfair</th><th class="l">why</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )
    return parts


def figures_section(figs: Embedded) -> list[str]:
    """Every figure the summary does not already show."""
    parts = ['<h2 id="figures">Figures</h2>']
    if not figs.figures:
        parts.append("<p>(no figures)</p>")
    elif figs.head:
        parts.append(
            "<p>"
            + ", ".join(f'<a href="#fig-{esc(f)}">Figure {figs.number[f]}</a>' for f in figs.head)
            + (" appears" if len(figs.head) == 1 else " appear")
            + " in the summary.</p>"
        )
    parts += [figs.html(fname) for fname in figs.figures if fname not in figs.head]
    return parts


def points_section(m: _Metrics) -> list[str]:
    vals = [v for v in m.run_values if v in m.point_runs.columns]
    return [
        '<h2 id="points">Per grid point</h2>',
        f"<p>{_INTERVAL_NOTE} total goodput: all flows over the measurement window; Jain "
        "index of the flows' goodput; X share: algorithm X's share of goodput; at the "
        "bottleneck(s): utilisation, loss rate, queue wait (mean sojourn minus one "
        "serialisation), queue p99 (99th percentile of the sampled queue, in BDPs of the "
        "buffer's reference path) and buffer overflowed (fraction of the repetitions with a "
        "drop from a full buffer: 0 means the buffer never filled). Column definitions: "
        "docs/results.md.</p>",
        split_tables(
            m.point_runs,
            [k for k in m.labels if k in m.point_runs.columns],
            lambda f, lab: html_table(f, lab, [*vals, "overflowed"]),
        ),
    ]


def ccas_section(res: Results, m: _Metrics) -> list[str]:
    links = res.table("link_summary")
    # Goodput per flow is bounded by the slowest link's rate.
    cap = float(links["rate_mbps"].min()) if len(links) else None
    return [
        '<h2 id="ccas">Per algorithm</h2>',
        f"<p>{_INTERVAL_NOTE} goodput per flow: mean goodput of one flow of the algorithm; "
        "share: the algorithm's share of all goodput; RTT p95 and queueing delay p95: 95th "
        "percentiles of its flows' sampled RTT and queueing delay (RTT minus the propagation "
        "RTT) over the measurement window.</p>",
        split_tables(
            m.point_ccas,
            [k for k in [*m.labels, "cca"] if k in m.point_ccas.columns],
            lambda f, lab: html_table(f, lab, m.cca_values, bounds={"per_flow_mbps": (0.0, cap)}),
        ),
    ]


def model_section(res: Results, m: _Metrics) -> list[str]:
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
        split_tables(summ, keys, lambda f, lab: html_table(f, lab, ["measured"], plain=plain))
    )
    mae = float(summ["error_full"].abs().mean())
    parts.append(
        f"<p>Mean absolute difference measured − ware_full: {fmt_number(mae, 3)} "
        f"over {len(summ)} points.</p>"
    )
    return parts


def harm_section(res: Results, m: _Metrics) -> list[str]:
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
        split_tables(
            hs,
            hkeys,
            lambda f, lab: html_table(f, lab, ["harm_goodput_frac", "harm_rtt_frac"]),
        )
    )
    return parts


def spec_section(study: Study) -> list[str]:
    parts = ['<h2 id="spec">Sweep spec</h2>']
    record, preset = study.record, study.preset
    if not record:
        parts.append("<p>This directory was not written by a sweep (no sweep.json).</p>")
        return parts
    parts.append(
        f"<p>Hash {esc(record.get('hash'))}; {len(record.get('run_ids', []))} distinct runs "
        f"from {record.get('n_points')} points.</p>"
    )
    if preset is not None and preset.quick_note and str(study.name).endswith("-quick"):
        parts.append(f'<p class="note">--quick grid: {esc(preset.quick_note)}.</p>')
    parts.append(f"<pre>{esc(json.dumps(study.sweep, indent=2))}</pre>")
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
        at_lo: Any = rows[col].idxmin()  # a label of the index
        at_hi: Any = rows[col].idxmax()
        lo, hi = rows.loc[at_lo], rows.loc[at_hi]

        def where(row: Any) -> str:
            return ", ".join(point_label(k, row[k]) for k in keys) or "the only point"

        out.append(
            f"{esc(what)} per point (mean over repetitions): from "
            f"{esc(fmt_interval(lo[col], lo[f'{col}_ci95'], int(lo['n']), bounds_of(col)))} "
            f"({esc(where(lo))}) to "
            f"{esc(fmt_interval(hi[col], hi[f'{col}_ci95'], int(hi['n']), bounds_of(col)))} "
            f"({esc(where(hi))})."
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
    never = _never_filled_item(res, grid, keys)
    if never is not None:
        out.append(never)
    if not identical:
        out.append("No two runs ended identical (every run's flows differ from every other's).")
        return out
    return out + _identical_items(res, runs, identical, keys)


def _where(row: Any, keys: list[str]) -> str:
    """A point named by its varying grid values, so a finding says where to look."""
    return ", ".join(point_label(k, row[k]) for k in keys)


def _never_filled_item(res: Results, grid: pd.DataFrame, keys: list[str]) -> str | None:
    """The points whose buffer never filled: larger buffers there cannot change a run."""
    if not ("drop_queue_pkts" in grid.columns and "alpha" in res.axes and keys):
        return None
    never = [
        g.iloc[0]
        for _, g in grid.groupby("point_key", sort=False)
        if (g["drop_queue_pkts"] == 0).all()
    ]
    if not never:
        return None
    text = "; ".join(_where(r, keys) for r in never[:12])
    more = f" and {len(never) - 12} more" if len(never) > 12 else ""
    return (
        f"<b>The buffer never filled</b> in any repetition at {len(never)} point(s) "
        f"(no packet dropped for a full buffer): {esc(text)}{more}. There the flows "
        "kept less data in the network than the buffer holds, so any larger buffer is "
        "the same network and gives the same runs, seed by seed."
    )


def _identical_items(
    res: Results, runs: pd.DataFrame, identical: list[list[str]], keys: list[str]
) -> list[str]:
    """The groups of identical runs, counted by why they may be identical, and the rest."""
    out = []
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
            f"flow's delivered, sent and dropped packets): {esc(parts)}. These points differ "
            "only in something the runs never reached, so they are the same network."
        )
    if unexplained:
        out.append(_unexplained_item(runs, unexplained, keys))
    return out


def _unexplained_item(runs: pd.DataFrame, unexplained: list[list[str]], keys: list[str]) -> str:
    """A warning naming identical runs ccfair cannot explain: a grid value had no effect."""
    pts = runs.set_index("run_id")
    described = []
    for group in unexplained[:6]:
        labs = [f"{_where(pts.loc[r], keys)}, seed {str(pts.loc[r, 'seed'])}" for r in group[:4]]
        described.append(" = ".join(labs))
    return (
        f'<span class="warn"><b>{len(unexplained)} group(s) of runs ended identical for no '
        f"reason ccfair can see</b>: {esc('; '.join(described))}"
        + (" ..." if len(unexplained) > 6 else "")
        + ". Look at these points: a grid value had no effect on these runs (e.g. on a "
        "flow starved to a few packets, Reno and CUBIC act alike), or two points describe "
        "the same network.</span>"
    )
