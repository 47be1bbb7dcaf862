"""``ccfair report``, ``plot``, ``compare`` and ``metrics``: a results directory read back."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import pandas as pd

from ccfair.analysis.models import model_table
from ccfair.cli.common import fail
from ccfair.cli.output import notice, print_json, records, say_unless
from ccfair.errors import ResultsError, SpecError, show
from ccfair.present.style import save
from ccfair.present.timeseries import timeseries
from ccfair.report.page import write_report
from ccfair.results.compare import CompareWarning
from ccfair.results.directory import Results
from ccfair.store.directory import table_folder
from ccfair.units import parse_duration


def cmd_report(args: argparse.Namespace) -> int:
    path = write_report(args.results, args.out, log=say_unless(args.quiet))
    if args.json:
        print_json({"report": path})
    else:
        print(path)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    res = Results(args.results)
    ids = res.run_ids if args.all else args.run_ids
    if not ids and len(res.run_ids) == 1:
        ids = res.run_ids  # a directory of one run needs no run id
    if not ids:
        return fail(f"plot: {res.root} holds {len(res.run_ids)} runs; give RUN_ID... or --all")
    unknown = [r for r in ids if r not in set(res.run_ids)]
    if unknown:
        raise ResultsError(f"{res.root}: no finished run {show(unknown[0])}")
    window = _parse_window(args.window)
    if not (args.smooth >= 0 and math.isfinite(args.smooth)):
        raise SpecError("--smooth", args.smooth, "is not a window of 0 or more seconds")
    if args.out is not None and not args.out.strip():
        raise SpecError("--out", args.out, "is not a directory path")
    # The default folder is the results directory's own: a link there is refused.
    out = Path(args.out) if args.out is not None else table_folder(res.root, "figures")
    pts = res.points().drop_duplicates("run_id").set_index("run_id")
    written = []
    for i, rid in enumerate(ids, 1):
        label = None
        if rid in pts.index and res.grid_keys:
            row = pts.loc[rid]
            label = ", ".join(f"{k}={row[k]}" for k in res.grid_keys) + f", rep {row['rep']}"
        try:
            fig = timeseries(
                res, rid, title=label, flows=args.flows, window=window, smooth_s=args.smooth
            )
        except ValueError as exc:  # a flow or window that does not fit the run
            raise SpecError("plot", None, str(exc), with_value=False) from None
        paths = save(fig, out, f"timeseries-{rid}", formats=args.format)
        written.append({"run_id": rid, "files": paths})
        if args.json:
            say_unless(args.quiet)(f"[{i}/{len(ids)}] {rid}")
        elif not args.quiet:
            print(f"[{i}/{len(ids)}] {', '.join(str(p) for p in paths)}", flush=True)
    if args.json:
        print_json(written)
    return 0


def _parse_window(text: str | None) -> tuple[float, float] | None:
    """``--window START:END`` in seconds (either may be a duration like ``2s``)."""
    if text is None:
        return None

    def seconds(part: str) -> float:
        try:
            return float(part)
        except ValueError:
            ns = parse_duration(part.strip())
            if ns is None:
                raise SpecError(
                    "--window", text, "is not START:END in seconds, e.g. 5:20"
                ) from None
            return ns / 1e9

    parts = text.split(":")
    if len(parts) != 2:
        raise SpecError("--window", text, "is not START:END in seconds, e.g. 5:20")
    lo, hi = seconds(parts[0]), seconds(parts[1])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise SpecError("--window", text, "is not a window of finite times, e.g. 5:20")
    if not lo < hi:
        raise SpecError("--window", text, "start is not before end")
    return lo, hi


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = Results(args.a), Results(args.b)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CompareWarning)
            frame = a.compare(b, values=args.metric)
    except SpecError as exc:  # name the option, not the Python argument
        raise SpecError("--metric", exc.value, exc.message, with_value=False) from None
    for w in caught:  # points matched by name although their scenarios differ
        print(f"warning: {w.message}", file=sys.stderr)
    if frame.empty:  # one error line, exit 2, like every failure (module docstring)
        return fail(f"compare: {a.root} and {b.root} share no grid point or scenario")
    unmatched = frame.attrs.get("unmatched", {})
    for side, root in (("a", a.root), ("b", b.root)):
        if unmatched.get(side):
            print(f"note: {unmatched[side]} point(s) of {root} have no match", file=sys.stderr)
    if args.csv is not None or args.json:
        _write_table(frame, args)
        return 0
    print(f"A = {a.root} ({len(a.run_ids)} runs), B = {b.root} ({len(b.run_ids)} runs)")
    print("diff = B - A; diff_ci95: Welch 95% interval half-width; * where it excludes 0")
    shown = frame.assign(significant=frame["significant"].map({True: "*", False: ""}))
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    res = Results(args.results)
    if args.table == "points":
        frame = res.points()
    elif args.table == "flows":
        frame = res.flows
        if not args.per_run:
            frame = res.point_summary(
                frame, ["goodput_mbps", "share_frac", "rtt_p95_ms"], ["flow_name", "cca"]
            )
    elif args.table == "ccas":
        frame = res.ccas()
        if not args.per_run:
            frame = res.point_summary(
                frame, ["per_flow_mbps", "share_frac", "rtt_mean_ms"], ["cca"]
            )
    elif args.table == "harm":
        frame = res.harm()
        if not args.per_run and not frame.empty:
            frame = res.point_summary(
                frame, ["harm_goodput_frac", "harm_rtt_frac"], ["incumbent", "contender"]
            )
    elif args.table == "model":
        frame = model_table(res)
        if not args.per_run and not frame.empty:
            frame = res.point_summary(frame, ["measured", "ware_simple", "ware_full", "x_bdp"])
    else:
        frame = res.run_metrics()
        if not args.per_run:
            values = [
                "goodput_mbps",
                "jain_index",
                *[c for c in frame.columns if c.endswith("_share_frac")],
                "utilisation_frac",
                "loss_frac",
                "queue_wait_mean_ms",
            ]
            frame = res.point_summary(frame, values)
    missing = res.incomplete()
    if missing is not None:  # on stderr, once the table is made: CSV and JSON stay as asked
        print(f"warning: {missing}", file=sys.stderr)
    if args.csv is not None or args.json:
        _write_table(frame, args)
    else:
        with pd.option_context(
            "display.max_rows", None, "display.max_columns", None, "display.width", 200
        ):
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _write_table(frame: pd.DataFrame, args: argparse.Namespace) -> None:
    """``--json`` (records on stdout), ``--csv -`` (CSV on stdout) or ``--csv FILE`` (a
    notice on stderr)."""
    if args.json:
        if args.csv is not None:
            raise SpecError("--csv", args.csv, "and --json both print the table; give one")
        print_json(records(frame))
    elif not args.csv.strip():
        raise SpecError("--csv", args.csv, "is not a file path (or - for stdout)")
    elif args.csv == "-":
        frame.to_csv(sys.stdout, index=False)
    else:
        frame.to_csv(args.csv, index=False)
        notice(f"{len(frame)} rows -> {args.csv}")
