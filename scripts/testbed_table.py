"""Testbeds side by side: per grid point of a finished sweep with a `testbed` (or `kernel`)
axis, the first flow's mean share on each, and the points where they disagree most
(docs/validation/testbed/).

The first flow is the parking lots' main flow, the dumbbell's flow1 and the Copa grid's
first Copa flow. Shares are means over the repetitions.

    ccfair sweep scenarios/testbed/harada-dumbbell.toml --out results/testbed-dumbbell
    python3 scripts/testbed_table.py results/testbed-dumbbell --top 6
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


class ScriptError(Exception):
    """A problem with a directory: one line, exit status 2."""


def shares(directory: Path) -> pd.DataFrame:
    """One row per grid point (the axes other than the testbed), one column per testbed
    (or host kernel, for a sweep with a kernel axis and no testbed axis)."""
    try:
        sweep = json.loads((directory / "sweep.json").read_text())
    except (OSError, ValueError) as exc:
        raise ScriptError(f"{directory}: not a finished sweep's directory ({exc})") from None
    points = pd.DataFrame(
        [{"run_id": p["run_id"], **p["params"]} for p in sweep["points"] if not p["baseline"]]
    )
    axis = next((a for a in ("testbed", "kernel") if a in points), None)
    if axis is None:
        raise ScriptError(f"{directory}: the sweep has no testbed or kernel axis")
    flows = pd.read_parquet(directory / "flows", columns=["run_id", "flow", "share_frac"])
    first = flows[flows["flow"] == 0][["run_id", "share_frac"]]
    table = points.merge(first, on="run_id")
    axes = [c for c in points.columns if c not in ("run_id", axis)]
    wide = table.pivot_table(
        index=axes, columns=axis, values="share_frac", aggfunc="mean", sort=False
    )
    return wide[[p for p in dict.fromkeys(points[axis]) if p in wide]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="sweep results directories")
    ap.add_argument("--top", type=int, default=5, help="points to list per sweep")
    args = ap.parse_args()
    if args.top < 1:
        print(f"--top {args.top} is not a number of points (>= 1)", file=sys.stderr)
        return 2
    for d in args.dirs:
        try:
            wide = shares(d)
        except ScriptError as exc:
            print(exc, file=sys.stderr)
            return 2
        except (KeyError, TypeError, OSError, ValueError) as exc:  # a damaged sweep
            print(f"{d}: not a finished sweep of ccfair ({exc!r})", file=sys.stderr)
            return 2
        base = wide.columns[0]
        spread = (wide.max(axis=1) - wide.min(axis=1)) * 100
        print(f"\n### {d.name}: first flow's share, {len(wide)} points\n")
        print("| testbed | median share | median \\|diff\\| to " + base + " (pp) | largest (pp) |")
        print("|---|---|---|---|")
        for p in wide.columns:
            diff = (wide[p] - wide[base]).abs() * 100
            print(f"| {p} | {wide[p].median():.3f} | {diff.median():.2f} | {diff.max():.2f} |")
        print(f"\nThe {args.top} points where they disagree most:\n")
        print("| point | " + " | ".join(wide.columns) + " | spread (pp) |")
        print("|---|" + "---|" * (len(wide.columns) + 1))
        for key in spread.sort_values(ascending=False).index[: args.top]:
            label = ", ".join(
                f"{n}={v}"
                for n, v in zip(
                    wide.index.names, key if isinstance(key, tuple) else [key], strict=True
                )
            )
            cells = " | ".join(f"{wide.loc[key, p]:.3f}" for p in wide.columns)
            print(f"| {label} | {cells} | {spread[key]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
