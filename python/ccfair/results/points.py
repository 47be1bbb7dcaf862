"""The points of a results directory (:meth:`ccfair.Results.points`): which sweep point each
finished run is, from the ``sweep.json`` record (runs it does not list are grouped by their
normalised spec), with the grid's labels as written and numbers beside them: an axis of plain
numbers becomes a numeric column, an axis of quantities (``"18ms"``) gets a column of their
values in the unit its name says (``delay_ms``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ccfair.units import parse_duration, parse_rate, parse_size

__all__ = ["points_table"]

#: Quantity labels of a grid axis -> the numeric column beside them: suffix, parser, scale.
_QUANTITIES = (
    ("ms", parse_duration, 1e6),
    ("mbps", parse_rate, 1e6),
    ("bytes", parse_size, 1),
)


def points_table(
    runs: pd.DataFrame, record: dict[str, Any] | None, grid_keys: list[str]
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The points table of :meth:`ccfair.Results.points` from the ``runs`` table and the
    sweep record (None: a directory of plain runs), and its numeric columns beside quantity
    labels -> their grid key (:meth:`ccfair.Results.coordinates`)."""
    base = runs[["run_id", "point_key", "scenario", "backend", "seed"]]
    finished = set(base["run_id"])
    listed = [p for p in (record or {}).get("points", []) if p["run_id"] in finished]
    record_points = pd.DataFrame(
        {
            "run_id": [p["run_id"] for p in listed],
            "point_index": pd.Series([p["index"] for p in listed], dtype="Int64"),
            "baseline": pd.Series([p["baseline"] for p in listed], dtype=object),
            "rep": pd.Series([p["rep"] for p in listed], dtype="Int64"),
            # Labels as written (2 stays 2, not 2.0 next to 0.5); named apart until the
            # merge, since a grid key may be a column of the runs table (seed).
            **{
                f"_label_{key}": pd.Series([p["params"].get(key) for p in listed], dtype=object)
                for key in grid_keys
            },
        }
    )
    on_record = base.merge(record_points, on="run_id", how="inner").sort_values(
        "point_index", kind="stable"
    )
    unlisted = base[~base["run_id"].isin(record_points["run_id"])].copy()
    unlisted["point_index"] = pd.Series(dtype="Int64")
    unlisted["baseline"] = pd.Series(dtype=object)
    unlisted["rep"] = (
        unlisted.groupby("point_key", sort=False)["seed"].rank(method="dense") - 1
    ).astype("Int64")
    for key in grid_keys:
        unlisted[f"_label_{key}"] = pd.Series(dtype=object)
    frame = pd.concat([on_record, unlisted[on_record.columns]], ignore_index=True)
    for key in grid_keys:  # a label replaces a runs column of its name (seed)
        label = frame.pop(f"_label_{key}")
        frame[key] = label.where(label.notna(), frame[key]) if key in frame else label
    frame["point_index"] = (
        range(len(frame))
        if record is None
        else frame["point_index"].fillna(pd.Series(range(len(frame))) + len(frame)).astype(int)
    )
    frame["rep"] = frame["rep"].astype(int)
    columns = ["run_id", "point_key", "scenario", "backend", "seed", "point_index", "baseline"]
    columns = [c for c in columns if c not in grid_keys]
    coordinates = _coordinates(frame, grid_keys)
    frame = frame.assign(**{name: values for name, (_, values) in coordinates.items()})
    frame = frame[[*columns, *grid_keys, *coordinates, "rep"]]
    return frame, {name: key for name, (key, _) in coordinates.items()}


def _coordinates(frame: pd.DataFrame, grid_keys: list[str]) -> dict[str, tuple[str, pd.Series]]:
    """Numbers beside the grid labels (:meth:`ccfair.Results.points`): an axis of plain numbers
    becomes numeric in place; an axis of quantities gets a ``<key>_<unit>`` column
    (name -> its key and values)."""
    out: dict[str, tuple[str, pd.Series]] = {}
    for key in grid_keys:
        labels = frame[key]
        given = [v for v in labels if v is not None and v == v]
        if not given:
            continue
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in given):
            whole = all(isinstance(v, int) for v in given) and len(given) == len(labels)
            frame[key] = labels.astype("int64" if whole else "float64")
            continue
        if not all(isinstance(v, str) for v in given):
            continue
        kinds = [
            (unit, parse, scale)
            for unit, parse, scale in _QUANTITIES
            if all(parse(v) is not None for v in given)
        ]
        if len(kinds) != 1:  # not quantities, or bare numbers any unit would read
            continue
        unit, parse, scale = kinds[0]
        name = f"{key}_{unit}"
        if name in frame.columns or name in grid_keys:
            continue
        values = [
            n / scale if isinstance(v, str) and (n := parse(v)) is not None else np.nan
            for v in labels
        ]
        out[name] = (key, pd.Series(values, index=frame.index, dtype="float64"))
    return out
