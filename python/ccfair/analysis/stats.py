"""Statistics over results: Jain's fairness index, Student t quantiles and 95% intervals of
the mean over repetitions (Welch's for a difference), summaries per group, and each metric's
physical range, beyond which no interval is drawn or printed.

Definitions (docs/experiments.md, "Metrics"; docs/reference.md 8.4): Jain index
(sum x)^2 / (n sum x^2); mean and 95% confidence interval over repetitions: Student t,
half-width t(0.975, n-1) x s / sqrt(n).

Example:
    >>> jain_index([1.0, 1.0])
    1.0
    >>> round(ci95([1.0, 2.0, 3.0]), 3)
    2.484
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.errors import SpecError
from ccfair.units import parse_duration

if TYPE_CHECKING:  # pandas is imported where a summary is made
    import pandas as pd

__all__ = [
    "bounds_of",
    "ci95",
    "clipped_interval",
    "jain_index",
    "seconds_of",
    "summarize",
    "t_quantile",
    "welch_ci95",
]


def jain_index(x: Any) -> float:
    """Jain's index (sum x)^2 / (n sum x^2); 1 means equal shares, 1/n one flow takes all.

    Defined on non-negative allocations (Jain, Chiu and Hawe, DEC-TR-301, 1984): a negative
    value is an error; no values, all zeros or a NaN give NaN.

    Example:
        >>> jain_index([1.0, 1.0])
        1.0
        >>> round(jain_index([3.0, 1.0]), 3)
        0.8
        >>> jain_index([2.0, -1.0])
        Traceback (most recent call last):
        ccfair.errors.SpecError: x: -1.0 is negative; Jain's index takes allocations >= 0
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1:
        raise SpecError("x", x, "is not a sequence of numbers (one per flow)")
    negative = arr[arr < 0]
    if len(negative):
        raise SpecError("x", float(negative[0]), "is negative; Jain's index takes allocations >= 0")
    denom = len(arr) * float(np.sum(arr * arr))
    return float(np.sum(arr) ** 2 / denom) if denom > 0 else float("nan")


def _t_pdf(x: float, df: int) -> float:
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(c - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf_above_half(x: float, df: int, steps: int = 4000) -> float:
    # Composite Simpson's rule of the density on [0, x]; the density is smooth there.
    h = x / steps
    total = _t_pdf(0.0, df) + _t_pdf(x, df)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * _t_pdf(i * h, df)
    return 0.5 + total * h / 3


@cache
def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t distribution with ``df`` degrees of freedom, for p >= 0.5.

    Computed by bisection on the numerically integrated density (no SciPy needed).

    Example:
        >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 10), 3)
        (12.706, 2.228)
    """
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"t_quantile: need 0.5 <= p < 1 and df >= 1 (got p={p}, df={df})")
    lo, hi = 0.0, 1.0
    while _t_cdf_above_half(hi, df) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_above_half(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ci95(values: Any) -> float:
    """Half-width of the 95% confidence interval of the mean (NaN for fewer than 2 values).

    Example:
        >>> round(ci95([1.0, 2.0, 3.0]), 3)
        2.484
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 2:
        return float("nan")
    return t_quantile(0.975, n - 1) * float(np.std(x, ddof=1)) / math.sqrt(n)


#: Columns that are shares without a ``_frac`` suffix: Jain's index and the model table's
#: BBR shares (:func:`ccfair.analysis.models.model_table`).
_SHARES = frozenset({"jain_index", "measured", "ware_simple", "ware_full"})


def bounds_of(column: str) -> tuple[float | None, float | None]:
    """The physical range of a metric, (lower, upper); None where it is unbounded.

    Jain's index, shares (the model table's measured and predicted BBR shares among them)
    and fractions lie in [0, 1] (harm, a relative loss, only below 1); rates, delays, packet
    counts, BDP multiples and coefficients of variation are not negative. A confidence
    interval is never drawn or printed beyond these (a t interval of 2 runs easily is).

    Example:
        >>> bounds_of("jain_index"), bounds_of("harm_goodput_frac"), bounds_of("goodput_mbps")
        ((0.0, 1.0), (None, 1.0), (0.0, None))
        >>> bounds_of("measured"), bounds_of("goodput_1s_cv")
        ((0.0, 1.0), (0.0, None))
    """
    if column in _SHARES:
        return (0.0, 1.0)
    if column.startswith("harm_"):
        return (None, 1.0)
    if column.endswith("_frac"):
        return (0.0, 1.0)
    if column.endswith(("_mbps", "_ms", "_pkts", "_bdp", "_count", "_bytes", "_s", "_cv")):
        return (0.0, None)
    return (None, None)


def clipped_interval(
    mean: float, half_width: float, bounds: tuple[float | None, float | None]
) -> tuple[float, float]:
    """The interval mean ± half_width clipped to ``bounds`` (NaN, NaN without a half-width).

    Example:
        >>> clipped_interval(0.99, 0.07, (0.0, 1.0))
        (0.92, 1.0)
    """
    if not (math.isfinite(mean) and math.isfinite(half_width)):
        return (float("nan"), float("nan"))
    lo, hi = mean - half_width, mean + half_width
    if bounds[0] is not None:
        lo = max(lo, bounds[0])
    if bounds[1] is not None:
        hi = min(hi, bounds[1])
    return (round(lo, 12), round(hi, 12))


def summarize(
    frame: pd.DataFrame,
    by: list[str],
    values: list[str],
    *,
    sort: bool = False,
    percentiles: Sequence[float] = (),
) -> pd.DataFrame:
    """Mean, 95% CI half-width (``<col>_ci95``) and count (``n``) of ``values`` per group,
    and each of ``percentiles`` (``<col>_p5`` for 5: of the group's values, linearly
    interpolated between them as ``numpy.percentile`` does).

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"k": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
        >>> row = summarize(df, ["k"], ["x"], percentiles=[50, 95]).to_dict("records")[0]
        >>> row["x"], row["x_p50"], row["x_p95"]
        (2.0, 2.0, 2.9)
    """
    import pandas as pd

    def names(v: str) -> list[str]:
        return [v, f"{v}_ci95", *(f"{v}_p{p:g}" for p in percentiles)]

    if frame.empty:
        return pd.DataFrame(columns=[*by, "n", *[c for v in values for c in names(v)]])
    # Vectorised (a report summarises thousands of runs): group statistics in one pass,
    # labels taken from each group's first row so that they stay as written (2, not 2.0).
    data = frame.reset_index(drop=True)
    clean = {
        f"_v{i}": pd.to_numeric(data[col], errors="coerce")
        .astype(float)
        .replace([np.inf, -np.inf], np.nan)
        for i, col in enumerate(values)
    }
    data = data.assign(_row=np.arange(len(data)), **clean)
    groups = data.groupby(by, sort=sort, dropna=False, observed=True)
    out = data.loc[groups["_row"].first().to_numpy(), by].reset_index(drop=True)
    out["n"] = groups.size().to_numpy()
    stats = groups[list(clean)].agg(["mean", "std", "count"])
    for i, col in enumerate(values):
        mean = stats[(f"_v{i}", "mean")].to_numpy(dtype=float)
        std = stats[(f"_v{i}", "std")].to_numpy(dtype=float)
        count = stats[(f"_v{i}", "count")].to_numpy()
        t = np.array([t_quantile(0.975, int(c) - 1) if c >= 2 else np.nan for c in count])
        out[col] = mean
        out[f"{col}_ci95"] = t * std / np.sqrt(np.maximum(count, 1))
        for p in percentiles:
            q = groups[f"_v{i}"].quantile(p / 100, interpolation="linear")
            out[f"{col}_p{p:g}"] = q.to_numpy(dtype=float)
    return out


def welch_ci95(a: Any, b: Any) -> float:
    """Half-width of the 95% confidence interval of mean(b) - mean(a) (Welch's t, unequal
    variances); NaN unless both sides have 2 or more values.

    Example:
        >>> round(welch_ci95([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]), 3)
        2.267
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 0.0
    df = se2 * se2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    return t_quantile(0.975, max(1, int(df))) * math.sqrt(se2)


def seconds_of(label: Any) -> float:
    """A duration label (``"18ms"`` or a number of seconds) in seconds, NaN if it is none.

    Example:
        >>> seconds_of("18ms")
        0.018
    """
    ns = parse_duration(label)
    return float("nan") if ns is None else ns / 1e9
