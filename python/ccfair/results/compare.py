"""Two results directories compared point by point (:meth:`ccfair.Results.compare`,
``ccfair compare A B``): which points match, and the difference of each run metric with its
Welch interval.

Points match on their grid labels when both directories have the same grid keys, else on
their whole normalised scenario with the seed and the backend left out (the identity of
:mod:`ccfair.spec.identity`: options at their defaults do not count, so two ccfair versions
match). A point left without a partner then matches the one point of the other side that
has its scenario's name, if each side has exactly one such point (a scenario run twice with
a setting changed), with a :class:`CompareWarning` naming the fields that differ. Nothing is
pooled: what would put runs of two points of one side against one point of the other is
refused, naming why.

Example:
    >>> compare_results(Results("results/v1"), Results("results/v2"), None)  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ccfair.analysis.stats import ci95, welch_ci95
from ccfair.errors import ResultsError
from ccfair.results.columns import check_columns
from ccfair.spec.identity import IdentityJson, spec_identity
from ccfair.spec.resolved import DERIVED_FLOW_KEYS, DERIVED_LINK_KEYS

if TYPE_CHECKING:  # the directory object hands itself in
    from ccfair.results.directory import Results

__all__ = ["DEFAULT_METRICS", "CompareWarning", "compare_results", "spec_differences"]


class CompareWarning(UserWarning):
    """Two points were matched by their scenario's name although their scenarios differ."""


#: The run metrics compared by default (with every ``<cca>_share_frac`` both sides have).
DEFAULT_METRICS = (
    "goodput_mbps",
    "jain_index",
    "utilisation_frac",
    "loss_frac",
    "queue_wait_mean_ms",
)


def compare_results(a: Results, b: Results, values: Sequence[str] | None) -> pd.DataFrame:
    """The comparison table of :meth:`ccfair.Results.compare` (B - A per matched point and
    metric)."""
    a_runs, b_runs = a.run_metrics(), b.run_metrics()
    if values is None:
        shares = sorted(
            c for c in set(a_runs.columns) & set(b_runs.columns) if c.endswith("_share_frac")
        )
        values = [*DEFAULT_METRICS, *shares]
    else:
        for side in (a_runs, b_runs):
            check_columns(side, values, "values", table="the run metrics")
    labels, a_keys, b_keys = _match(a, b, a_runs, b_runs)
    a_groups = dict(tuple(a_runs.groupby(a_keys, sort=False)))
    b_groups = dict(tuple(b_runs.groupby(b_keys, sort=False)))
    matched = [k for k in a_groups if k in b_groups]
    if not matched:
        raise ResultsError(_no_match(a, b, a_runs, b_runs))
    rows = []
    for key in matched:
        ga, gb = a_groups[key], b_groups[key]
        label = labels[key]
        for v in values:
            xa = ga[v].to_numpy(dtype=float)
            xb = gb[v].to_numpy(dtype=float)
            xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
            diff_ci = welch_ci95(xa, xb)
            diff = float(xb.mean() - xa.mean()) if len(xa) and len(xb) else np.nan
            rows.append(
                {
                    **label,
                    "metric": v,
                    "a_mean": float(xa.mean()) if len(xa) else np.nan,
                    "a_ci95": ci95(xa),
                    "a_n": len(xa),
                    "b_mean": float(xb.mean()) if len(xb) else np.nan,
                    "b_ci95": ci95(xb),
                    "b_n": len(xb),
                    "diff": diff,
                    "diff_ci95": diff_ci,
                    "significant": bool(abs(diff) > diff_ci) if np.isfinite(diff_ci) else False,
                }
            )
    out = pd.DataFrame(rows)
    if "baseline" in out.columns and (out["baseline"] == "").all():
        out = out.drop(columns=["baseline"])
    out.attrs["unmatched"] = {
        "a": sum(k not in b_groups for k in a_groups),
        "b": sum(k not in a_groups for k in b_groups),
    }
    return out


def _match(
    a: Results, b: Results, a_runs: pd.DataFrame, b_runs: pd.DataFrame
) -> tuple[dict[Any, dict[str, Any]], pd.Series, pd.Series]:
    """Each run's match key on both sides (a Series aligned with its runs) and the labels
    of each key; refuses what would pool points."""
    if a.grid_keys and sorted(a.grid_keys) == sorted(b.grid_keys):
        keys = list(a.grid_keys)
        a_keys = _label_keys(a_runs, keys)
        b_keys = _label_keys(b_runs, keys)
        how = f"grid labels ({', '.join(keys)})"
    else:
        if a.grid_keys and b.grid_keys:
            only = [
                (r, k) for r, o in ((a, b), (b, a)) for k in r.grid_keys if k not in o.grid_keys
            ]
            res, key = only[0]
            raise ResultsError(
                f"compare: {res.root} has the grid axis {key} ({len(res.axes[key])} values) "
                f"that the other directory lacks, so its points match none or several of the "
                f"other's; compare directories with the same grid keys, or one value of the "
                f"axis (Results.select({key}=...))"
            )
        keys = ["scenario", *dict.fromkeys([*a.grid_keys, *b.grid_keys])]
        a_keys = _scenario_keys(a, a_runs)
        b_keys = _scenario_keys(b, b_runs)
        how = "scenario (normalised, seed and backend aside)"
        b_keys = _by_name(a, b, a_runs, b_runs, a_keys, b_keys)
    for res, runs, match in ((a, a_runs, a_keys), (b, b_runs, b_keys)):
        points = runs.groupby(match, sort=False)["point_key"].nunique()
        if (points > 1).any():
            key = points.index[int(np.argmax(points.to_numpy() > 1))]
            sample = runs[[m == key for m in match]]
            raise ResultsError(
                f"compare: {res.root} holds {int(points.max())} points of one {how} "
                f"(backends {', '.join(sorted(set(sample['backend'])))}; e.g. runs "
                f"{', '.join(sample['run_id'].head(2))}): comparing them as one would pool "
                "them; compare directories that hold one point per scenario"
            )
    labels: dict[Any, dict[str, Any]] = {}
    for runs, match in ((b_runs, b_keys), (a_runs, a_keys)):  # A's labels win
        for key, row in zip(match, runs.to_dict("records"), strict=True):
            labels[key] = {
                **{k: row.get(k) for k in keys if k in row},
                "baseline": row["baseline"] if isinstance(row["baseline"], str) else "",
            }
    return labels, a_keys, b_keys


def _label_keys(runs: pd.DataFrame, keys: list[str]) -> pd.Series:
    baseline = runs["baseline"].fillna("")
    parts = [runs[k].astype(str) for k in keys]
    return pd.Series(
        [tuple(p) for p in zip(*parts, baseline, strict=True)], index=runs.index, dtype=object
    )


def _scenario_keys(res: Results, runs: pd.DataFrame) -> pd.Series:
    specs = res.specs()
    identity = {rid: IdentityJson(spec).point_key("") for rid, spec in specs.items()}
    baseline = runs["baseline"].fillna("")
    return pd.Series(
        [(identity[rid], b) for rid, b in zip(runs["run_id"], baseline, strict=True)],
        index=runs.index,
        dtype=object,
    )


def _by_name(
    a: Results,
    b: Results,
    a_runs: pd.DataFrame,
    b_runs: pd.DataFrame,
    a_keys: pd.Series,
    b_keys: pd.Series,
) -> pd.Series:
    """B's keys, where a point of each side without a partner is the only one of its side
    with its scenario's name (and baseline): then B's point takes A's key, with a warning
    naming the fields where the two scenarios differ."""
    a_left = a_runs[~a_keys.isin(set(b_keys))]
    b_left = b_runs[~b_keys.isin(set(a_keys))]
    if a_left.empty or b_left.empty:
        return b_keys
    out = b_keys.copy()

    def named(runs: pd.DataFrame, keys: pd.Series) -> dict[tuple[str, str], list[Any]]:
        found: dict[tuple[str, str], list[Any]] = {}
        for name, base, key in zip(
            runs["scenario"], runs["baseline"].fillna(""), keys[runs.index], strict=True
        ):
            found.setdefault((name, base), [])
            if key not in found[(name, base)]:
                found[(name, base)].append(key)
        return found

    a_named, b_named = named(a_left, a_keys), named(b_left, b_keys)
    for name, theirs in b_named.items():
        mine = a_named.get(name, [])
        if len(mine) != 1 or len(theirs) != 1:
            continue  # none, or ambiguous: left without a partner
        a_rid = a_left[[k == mine[0] for k in a_keys[a_left.index]]]["run_id"].iloc[0]
        b_rid = b_left[[k == theirs[0] for k in b_keys[b_left.index]]]["run_id"].iloc[0]
        differ = spec_differences(_without_seed(a.specs()[a_rid]), _without_seed(b.specs()[b_rid]))
        for index, key in b_keys.items():  # B's point's runs take A's key
            if key == theirs[0]:
                out.at[index] = mine[0]
        warnings.warn(
            CompareWarning(
                f"compare: matched the one point of scenario {name[0]!r} of each side by its "
                f"name; their scenarios differ in {_shown(differ)}"
            ),
            stacklevel=5,
        )
    return out


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")


def _no_match(a: Results, b: Results, a_runs: pd.DataFrame, b_runs: pd.DataFrame) -> str:
    """Why two directories share no point: the fields where B's first scenario differs from
    the nearest of A's (fewest differing fields)."""
    head = f"compare: {a.root} and {b.root} share no grid point or scenario"
    if a.grid_keys and sorted(a.grid_keys) == sorted(b.grid_keys):
        return f"{head} (no point has the grid labels of a point of the other)"
    a_specs, b_specs = a.specs(), b.specs()
    theirs = _without_seed(b_specs[b_runs["run_id"].iloc[0]])
    nearest = min(
        (spec_differences(_without_seed(a_specs[rid]), theirs) for rid in a_runs["run_id"]),
        key=len,
    )
    names = sorted(set(a_runs["scenario"]) | set(b_runs["scenario"]))
    count = ", ".join(
        f"{side.root} holds {runs[runs['scenario'] == n]['point_key'].nunique()} of {n!r}"
        for n in names[:2]
        for side, runs in ((a, a_runs), (b, b_runs))
    )
    return (
        f"{head}: points match by their whole normalised scenario (seed and backend aside), "
        f"or by name where each side has one point of that name ({count}); the closest "
        f"scenarios differ in {_shown(nearest)}"
    )


def _without_seed(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A spec's identity without its seed and the keys derived from the others (a buffer's
    packets from its BDPs...), so that a difference names what was set."""
    out = {k: v for k, v in spec_identity(dict(spec)).items() if k != "seed"}
    for part, derived in (("links", DERIVED_LINK_KEYS), ("flows", DERIVED_FLOW_KEYS)):
        if isinstance(out.get(part), list):
            out[part] = [
                {k: v for k, v in item.items() if k not in derived}
                if isinstance(item, dict)
                else item
                for item in out[part]
            ]
    return out


def spec_differences(a: Any, b: Any, path: str = "") -> list[str]:
    """The field paths where two normalised specs differ.

    Example:
        >>> spec_differences({"duration": "2s", "links": [{"rate": 1}]},
        ...                  {"duration": "3s", "links": [{"rate": 2}]})
        ['duration', 'links[0].rate']
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for k in dict.fromkeys([*a, *b]):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(sub)
            else:
                out += spec_differences(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in spec_differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [path or "(the whole spec)"]
