"""The columns the result objects add to the tables they read (docs/results.md, "Columns the
result objects add"): each flow's algorithm (``cca``) in the time series, its parking-lot
role (``role``, ``bottleneck_hop``) in the flows and the time series, and the stability of its
1 s goodput (``goodput_1s_cv``, ``goodput_1s_swing_mbps``) in the flows.

They are derived from the run's spec and its time series (:mod:`ccfair.analysis.flows`)
whenever a table is read, after the schema's columns; the files keep the schema's columns
only (:func:`stored`), so a results directory written before them reads with them.

Example:
    >>> import ccfair
    >>> r = ccfair.run(ccfair.parking_lot(2, "bbr", "cubic", duration="2s"))
    >>> r.timeseries[["flow_name", "cca", "role"]].drop_duplicates().to_dict("records")[:2]
    [{'flow_name': 'main', 'cca': 'bbr', 'role': 'main'}, {'flow_name': 'cross1', \
'cca': 'cubic', 'role': 'cross'}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.analysis.flows import STABILITY_COLUMNS, flow_roles, stability_table
from ccfair.units import parse_duration

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd

__all__ = ["DERIVED_COLUMNS", "flow_facts", "stored", "with_facts", "with_stability"]

#: Table -> the columns added to it, in order, after the schema's.
DERIVED_COLUMNS: dict[str, tuple[str, ...]] = {
    "flows": ("role", "bottleneck_hop", *STABILITY_COLUMNS),
    "timeseries": ("cca", "role", "bottleneck_hop"),
}

#: Columns of the time series the stability is computed from.
STABILITY_INPUT = ["run_id", "flow", "t_s", "goodput_mbps"]


def stored(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the columns added to ``table`` (what its file holds).

    Example:
        >>> import pandas as pd
        >>> list(stored("timeseries", pd.DataFrame({"t_s": [0.1], "cca": ["bbr"]})).columns)
        ['t_s']
    """
    added = [c for c in DERIVED_COLUMNS.get(table, ()) if c in frame.columns]
    return frame.drop(columns=added) if added else frame


def flow_facts(specs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run and flow: ``run_id``, ``flow`` (its index), ``cca``, ``role`` and
    ``bottleneck_hop`` (:func:`ccfair.analysis.flows.flow_roles`), and ``stop_s`` (when the
    spec stops the flow; NaN for none), from normalised specs.

    Example:
        >>> import ccfair
        >>> spec = ccfair.parking_lot(2, "reno", "cubic").resolve().normalized
        >>> flow_facts({"r1": spec})["role"].tolist()
        ['main', 'cross', 'cross']
    """
    import pandas as pd

    rows = []
    for run_id, spec in specs.items():
        flows = spec.get("flows", [])
        for i, (f, (role, hop)) in enumerate(zip(flows, flow_roles(spec), strict=True)):
            stop = parse_duration(f.get("stop")) if f.get("stop") is not None else None
            rows.append(
                (run_id, i, f.get("cca"), role, hop, np.nan if stop is None else stop / 1e9)
            )
    columns = ["run_id", "flow", "cca", "role", "bottleneck_hop", "stop_s"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["flow"] = frame["flow"].astype("int64")
    frame["bottleneck_hop"] = frame["bottleneck_hop"].astype("Int64")
    return frame


def with_facts(frame: pd.DataFrame, facts: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """``frame`` (rows with ``run_id`` and ``flow``) with ``columns`` of :func:`flow_facts`
    set from its row of the same run and flow, appended (or replaced) in place of order."""
    if frame.empty and not len(frame.columns):
        return frame
    if not {"run_id", "flow"} <= set(frame.columns):
        return frame
    keys = frame[["run_id", "flow"]].astype({"flow": "int64"})
    found = keys.merge(facts, on=["run_id", "flow"], how="left")
    out = frame.drop(columns=[c for c in columns if c in frame.columns])
    return out.assign(**{c: found[c].to_numpy() for c in columns}).astype(
        {"bottleneck_hop": "Int64"} if "bottleneck_hop" in columns else {}
    )


def with_stability(
    flows: pd.DataFrame,
    timeseries: pd.DataFrame | None,
    windows: pd.DataFrame,
    facts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``flows`` with :data:`ccfair.analysis.flows.STABILITY_COLUMNS` appended (or
    replaced): from ``timeseries`` (:data:`STABILITY_INPUT`; None: NaN) over each run's
    measurement window (``windows``: ``run_id``, ``measure_start_s``, ``measure_end_s``),
    from each flow's start to the window's end, or before it to the flow's last byte (a
    flow of finite size, ``completion_time_s``) or its stop (``facts``' ``stop_s``)."""
    out = flows.drop(columns=[c for c in STABILITY_COLUMNS if c in flows.columns])
    if timeseries is None or flows.empty or "start_s" not in flows.columns:
        return out.assign(**{c: np.full(len(flows), np.nan) for c in STABILITY_COLUMNS})
    spans = flows[["run_id", "flow", "start_s"]].merge(windows, on="run_id", how="left")
    start = flows["start_s"].to_numpy(float)
    end = spans["measure_end_s"].to_numpy(float)
    if "completion_time_s" in flows.columns:
        done = start + flows["completion_time_s"].to_numpy(float)
        end = np.where(np.isfinite(done), np.minimum(end, done), end)
    if facts is not None:
        keys = flows[["run_id", "flow"]].astype({"flow": "int64"})
        stop = keys.merge(facts[["run_id", "flow", "stop_s"]], on=["run_id", "flow"], how="left")
        stop_s = stop["stop_s"].to_numpy(float)
        end = np.where(np.isfinite(stop_s), np.minimum(end, stop_s), end)
    spans = spans.assign(
        start_s=np.maximum(start, spans["measure_start_s"].to_numpy(float)), end_s=end
    )
    table = stability_table(timeseries, spans)
    return out.assign(**{c: table[c].to_numpy() for c in STABILITY_COLUMNS})
