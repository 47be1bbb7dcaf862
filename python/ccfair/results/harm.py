"""Harm (Ware et al., HotNets 2019) from a results directory's tables (:meth:`ccfair.Results.harm`):
the flows of each algorithm A of a mixed run against the same flows in its baseline run, the same
scenario and seed with every flow running A, wherever that run is in the directory.

The baseline of a run for A (:func:`ccfair.spec.grid.baseline_spec`) is the same normalised spec
with every flow running A with the (already normalised) parameters of the run's first A flow. So
runs are indexed by their spec without the flows' algorithms ("skeleton") and by what each flow
runs: finding a baseline is a lookup, with no spec resolved again (that costs milliseconds per
run).

Example:
    >>> import pandas as pd
    >>> specs = {"mixed": {"flows": [{"name": "a", "cca": "bbr"}, {"name": "b", "cca": "cubic"}]},
    ...          "base": {"flows": [{"name": "a", "cca": "cubic"}, {"name": "b", "cca": "cubic"}]}}
    >>> runs = pd.DataFrame({"run_id": ["mixed", "base"], "backend": ["sim", "sim"]})
    >>> flows = pd.DataFrame({"run_id": ["mixed", "mixed", "base", "base"],
    ...                       "cca": ["bbr", "cubic", "cubic", "cubic"],
    ...                       "flow_name": ["a", "b", "a", "b"],
    ...                       "goodput_mbps": [30.0, 10.0, 20.0, 20.0],
    ...                       "rtt_mean_ms": [50.0, 50.0, 40.0, 40.0]})
    >>> harm_table(runs, flows, specs)[["incumbent", "contender", "harm_goodput_frac",
    ...                                 "harm_rtt_frac"]].to_dict("records")
    [{'incumbent': 'cubic', 'contender': 'bbr', 'harm_goodput_frac': 0.5, 'harm_rtt_frac': 0.2}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["HARM_COLUMNS", "harm_table"]

#: The columns of :func:`harm_table`, in order.
HARM_COLUMNS = [
    "run_id",
    "baseline_run_id",
    "incumbent",
    "contender",
    "goodput_mbps",
    "baseline_mbps",
    "harm_goodput_frac",
    "rtt_ms",
    "baseline_rtt_ms",
    "harm_rtt_frac",
]


def harm_table(
    runs: pd.DataFrame, flows: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per mixed run and incumbent algorithm whose baseline run is among ``runs``
    (:data:`HARM_COLUMNS`): the incumbent's goodput and mean RTT with the contenders and in
    its baseline, and the harm to each. ``flows`` is the runs' flows table and ``specs`` their
    normalised specs by run id."""
    flows = flows[["run_id", "cca", "flow_name", "goodput_mbps", "rtt_mean_ms"]]
    backend = dict(zip(runs["run_id"], runs["backend"], strict=True))
    skeleton, by_key = _baseline_index(specs, backend)
    pairs = _baseline_pairs(flows, specs, skeleton, by_key)
    return _harm_rows(flows, pairs)


def _dumps(x: Any) -> str:
    """Canonical JSON, so equal specs give equal keys."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def _baseline_index(
    specs: Mapping[str, Mapping[str, Any]], backend: Mapping[str, str]
) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """(run id -> skeleton, (skeleton, what the flows run) -> run id): a baseline by lookup."""
    skeleton: dict[str, str] = {}
    by_key: dict[tuple[str, str], str] = {}
    for rid, spec in specs.items():
        bare = {
            **spec,
            "flows": [
                {k: v for k, v in f.items() if k not in ("cca", "cca_params")}
                for f in spec["flows"]
            ],
        }
        skeleton[rid] = backend[rid] + _dumps(bare)
        what = _dumps([[f["cca"], f.get("cca_params", {})] for f in spec["flows"]])
        by_key[(skeleton[rid], what)] = rid
    return skeleton, by_key


def _baseline_pairs(
    flows: pd.DataFrame,
    specs: Mapping[str, Mapping[str, Any]],
    skeleton: Mapping[str, str],
    by_key: Mapping[tuple[str, str], str],
) -> pd.DataFrame:
    """Each mixed run's algorithms whose baseline is present: a run of one algorithm has none."""
    pairs = []
    for rid in flows["run_id"].unique():
        spec_flows = specs[rid]["flows"]
        ccas = list(dict.fromkeys(f["cca"] for f in spec_flows))
        if len(ccas) < 2:
            continue
        for cca in ccas:
            params = next(f.get("cca_params", {}) for f in spec_flows if f["cca"] == cca)
            what = _dumps([[cca, params] for _ in spec_flows])
            brid = by_key.get((skeleton[rid], what))
            if brid is not None:
                contender = "+".join(c for c in ccas if c != cca)
                pairs.append((rid, cca, brid, contender))
    return pd.DataFrame(pairs, columns=["run_id", "cca", "baseline_run_id", "contender"])


def _harm_rows(flows: pd.DataFrame, pair_frame: pd.DataFrame) -> pd.DataFrame:
    """The harm of each pair: the incumbent's flows, each next to the same flow in its baseline."""
    mine = flows.merge(pair_frame, on=["run_id", "cca"], how="inner")
    base = flows[["run_id", "flow_name", "goodput_mbps", "rtt_mean_ms"]].rename(
        columns={
            "run_id": "baseline_run_id",
            "goodput_mbps": "baseline_mbps",
            "rtt_mean_ms": "baseline_rtt_ms",
        }
    )
    mine = mine.merge(base, on=["baseline_run_id", "flow_name"], how="left")
    agg = (
        mine.groupby(["run_id", "cca"], sort=False)
        .agg(
            baseline_run_id=("baseline_run_id", "first"),
            contender=("contender", "first"),
            goodput_mbps=("goodput_mbps", "sum"),
            baseline_mbps=("baseline_mbps", "sum"),
            rtt_ms=("rtt_mean_ms", "mean"),
            baseline_rtt_ms=("baseline_rtt_ms", "mean"),
        )
        .reset_index()
        .rename(columns={"cca": "incumbent"})
    )
    base_mbps, with_rtt = agg["baseline_mbps"], agg["rtt_ms"]
    agg["harm_goodput_frac"] = ((base_mbps - agg["goodput_mbps"]) / base_mbps).where(base_mbps > 0)
    agg["harm_rtt_frac"] = ((with_rtt - agg["baseline_rtt_ms"]) / with_rtt).where(with_rtt > 0)
    rows = agg[HARM_COLUMNS].to_dict("records")
    return pd.DataFrame(rows, columns=HARM_COLUMNS)
