"""The report's HTML: its style sheet (no scripts, no external resources; it prints on A4),
numbers to significant digits, means with their 95% intervals clipped to each metric's range,
and tables (long ones split by the first grid key, no scroll boxes).

Example:
    >>> fmt_number(0.000123456), fmt_number(1234567.0)
    ('0.0001235', '1.235e+06')
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ccfair.analysis.stats import bounds_of, clipped_interval
from ccfair.present.style import point_label

CSS = """
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


#: Table headers of metric columns (quantity and unit).
_HEADERS = {
    "goodput_mbps": "total goodput [Mbit/s]",
    "jain_index": "Jain index",
    "utilisation_frac": "utilisation",
    "loss_frac": "loss rate",
    "queue_wait_mean_ms": "queue wait [ms]",
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


def esc(x: Any) -> str:
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
        return f'{esc(m)} <span class="ci">[{esc(rest)}</span>'
    return esc(text)


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


def html_table(
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
    head = "".join(f'<th class="l">{esc(_header(c))}</th>' for c in labels)
    head += "<th>n</th>" if has_n else ""
    head += "".join(f"<th>{esc(_header(c))}</th>" for c in [*cols, *plain])
    rows = []
    for rec in frame.to_dict("records"):
        cells = [f'<td class="l">{esc(_label_text(rec.get(c)))}</td>' for c in labels]
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
            cells.append(f"<td>{esc(fmt_number(rec.get(c)))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _label_text(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return str(v)


def split_tables(
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
        parts.append(f"<h3>{esc(point_label(key, value))}</h3>")
        parts.append(render(part, rest))
    return "".join(parts)


def kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(
        f'<tr><td class="l">{esc(a)}</td><td class="l">{esc(b)}</td></tr>' for a, b in rows
    )
    return f'<table class="setup"><tbody>{body}</tbody></table>'
