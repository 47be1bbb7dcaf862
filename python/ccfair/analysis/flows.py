"""What the result objects add to each flow's rows: its role on a parking lot (the main flow
across every bottleneck, the cross flows each across one) and the stability of its goodput
over 1 s windows (the swings the Katsumata study reads off its time series).

Definitions (docs/results.md, "Columns the result objects add"):

- ``role``: ``"main"`` for a flow whose data path crosses two or more of the run's
  bottleneck link directions in series, ``"cross"`` for a flow crossing one of them when
  such a main flow exists, ``""`` otherwise (a dumbbell's flows are peers);
- ``bottleneck_hop``: for a cross flow, which of the main flow's bottlenecks it crosses,
  counted along the main flow's path from 1 (the parking lot's ``L1``); missing otherwise;
- 1 s goodput: payload delivered in order in each whole second of the measurement window
  from the flow's start (``start_s``) on, until the window's end or, before it, the flow's
  last byte (a flow of finite size) or its stop, from the sampled goodput (``goodput_mbps`` of the
  time series is the payload since the previous sample: its running sum, interpolated at the
  window's edges, gives the delivery up to any instant);
- ``goodput_1s_cv``: standard deviation of the 1 s goodputs over their mean (population
  standard deviation: the windows are the whole series, not a sample of one);
- ``goodput_1s_swing_mbps``: their 95th minus their 5th percentile (linear interpolation
  between the windows' values).

Both are NaN for a flow with fewer than two whole seconds in the window (or no goodput).

Example:
    >>> import numpy as np
    >>> t = np.arange(1, 41) * 0.1          # 100 ms samples over 4 s
    >>> g = np.where(t <= 2.0, 10.0, 30.0)  # 10 Mbit/s for 2 s, then 30
    >>> cv, swing = one_second_stability(t, g, 0.0, 4.0)
    >>> round(cv, 3), round(swing, 1)
    (0.5, 20.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.spec.topology import bottlenecks

if TYPE_CHECKING:  # pandas is imported where a table is made
    import pandas as pd

__all__ = ["STABILITY_COLUMNS", "flow_roles", "one_second_stability", "stability_table"]

#: The columns :func:`stability_table` computes, per flow.
STABILITY_COLUMNS = ("goodput_1s_cv", "goodput_1s_swing_mbps")

#: Length of a stability window, seconds.
WINDOW_S = 1.0


def flow_roles(spec: Mapping[str, Any]) -> list[tuple[str, int | None]]:
    """``(role, bottleneck_hop)`` of each flow of a normalised spec, in flow order.

    Example:
        >>> from ccfair.spec.shapes import dumbbell, parking_lot
        >>> flow_roles(parking_lot(2, "reno", "reno").resolve().normalized)
        [('main', None), ('cross', 1), ('cross', 2)]
        >>> flow_roles(dumbbell(2, "reno").resolve().normalized)
        [('', None), ('', None)]
    """
    flows = spec.get("flows", [])
    if not flows:
        return []
    direction_of: dict[tuple[str, str], tuple[str, str]] = {}
    for link in spec["links"]:
        a, b = link["between"]
        direction_of.setdefault((a, b), (link["name"], "ab"))
        direction_of.setdefault((b, a), (link["name"], "ba"))
    shared = set(bottlenecks(dict(spec)))
    crossed = [
        [
            direction_of[hop]
            for hop in zip(f["path"], f["path"][1:], strict=False)
            if direction_of[hop] in shared
        ]
        for f in flows
    ]
    mains = [c for c in crossed if len(c) >= 2]
    if not mains:
        return [("", None)] * len(flows)
    main_path = mains[0]
    out: list[tuple[str, int | None]] = []
    for c in crossed:
        if len(c) >= 2:
            out.append(("main", None))
        else:
            hop = main_path.index(c[0]) + 1 if c and c[0] in main_path else None
            out.append(("cross", hop))
    return out


def one_second_stability(
    t_s: np.ndarray, goodput_mbps: np.ndarray, start_s: float, end_s: float
) -> tuple[float, float]:
    """``(goodput_1s_cv, goodput_1s_swing_mbps)`` of one flow's samples (sample times
    ``t_s``, ascending, each with the goodput since the previous sample) over the whole
    seconds of ``[start_s, end_s]``.

    Example:
        >>> t = np.arange(1, 31) * 0.1
        >>> [round(v, 9) for v in one_second_stability(t, np.full(30, 5.0), 0.0, 3.0)]
        [0.0, 0.0]
    """
    t = np.asarray(t_s, dtype=float)
    g = np.nan_to_num(np.asarray(goodput_mbps, dtype=float))
    if len(t) == 0:
        return (float("nan"), float("nan"))
    end = min(end_s, float(t[-1]))
    n = int(np.floor((end - start_s) / WINDOW_S + 1e-9))
    if n < 2:
        return (float("nan"), float("nan"))
    # Delivered (Mbit) up to each sample: goodput x the time since the previous sample.
    previous = np.concatenate([[0.0], t[:-1]])
    delivered = np.concatenate([[0.0], np.cumsum(g * (t - previous))])
    at = np.concatenate([[0.0], t])
    edges = start_s + WINDOW_S * np.arange(n + 1)
    per_s = np.diff(np.interp(edges, at, delivered)) / WINDOW_S
    mean = float(per_s.mean())
    cv = float(per_s.std() / mean) if mean > 0 else float("nan")
    swing = float(np.percentile(per_s, 95) - np.percentile(per_s, 5))
    return (cv, swing)


def stability_table(
    timeseries: pd.DataFrame, windows: pd.DataFrame, keys: tuple[str, ...] = ("run_id", "flow")
) -> pd.DataFrame:
    """:data:`STABILITY_COLUMNS` per flow: ``timeseries`` has ``keys``, ``t_s`` and
    ``goodput_mbps``; ``windows`` has ``keys``, ``start_s`` (the later of the flow's start
    and the measurement window's) and ``end_s``, one row per flow. Returns ``windows``' keys
    with the two columns, in ``windows``' order.

    Vectorised over the flows' keys (a sweep's time series has millions of rows): the rows
    are ordered by flow with a stable sort of integer codes, which keeps each flow's samples
    in the order they were recorded, by time."""
    import pandas as pd

    columns = list(keys)
    both = pd.concat([windows[columns], timeseries[columns]], ignore_index=True)
    codes = np.zeros(len(both), dtype=np.int64)
    for column in columns:  # one integer per key: the keys' codes in mixed radix
        part, uniques = pd.factorize(both[column])
        codes = codes * max(1, len(uniques)) + part
    flow_code, sample_code = codes[: len(windows)], codes[len(windows) :]
    order = np.argsort(sample_code, kind="stable")
    t = timeseries["t_s"].to_numpy(dtype=float)[order]
    g = timeseries["goodput_mbps"].to_numpy(dtype=float)[order]
    sorted_codes = sample_code[order]
    first = np.searchsorted(sorted_codes, flow_code, side="left")
    last = np.searchsorted(sorted_codes, flow_code, side="right")
    starts = windows["start_s"].to_numpy(dtype=float)
    ends = windows["end_s"].to_numpy(dtype=float)
    rows = []
    for i in range(len(windows)):
        ti, gi = t[first[i] : last[i]], g[first[i] : last[i]]
        if len(ti) > 1 and np.any(np.diff(ti) < 0):  # samples not in time order
            by_time = np.argsort(ti, kind="stable")
            ti, gi = ti[by_time], gi[by_time]
        rows.append(one_second_stability(ti, gi, starts[i], ends[i]))
    out = windows[columns].reset_index(drop=True)
    values = np.array(rows, dtype=float).reshape(len(windows), 2)
    return out.assign(**{c: values[:, j] for j, c in enumerate(STABILITY_COLUMNS)})
