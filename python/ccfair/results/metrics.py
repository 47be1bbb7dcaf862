"""The metric tables of a results directory, computed from its tables
(:meth:`ccfair.Results.run_metrics`, :meth:`ccfair.Results.ccas`): per run over its flows
(goodput, Jain index, each algorithm's share, the stability of the flows' goodput) and over
its bottleneck links (utilisation, loss rate, queue wait, buffer and queue size), and per run
and algorithm. The definitions are those of :mod:`ccfair.results.directory`.

Everything here is vectorised over the runs: a report of a thousand runs must not loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ccfair.analysis.flows import STABILITY_COLUMNS
from ccfair.spec.topology import PACKET_BYTES, bottlenecks

__all__ = ["cca_table", "run_metric_table"]


def run_metric_table(
    flows: pd.DataFrame,
    labelled_flows: pd.DataFrame,
    link_summary: pd.DataFrame,
    specs: dict[str, dict[str, Any]],
    points: pd.DataFrame,
) -> pd.DataFrame:
    """The run metrics, one row per point and run (``points``'s rows of finished runs): from
    the ``flows`` table as stored, the flows with their stability columns
    (``Results.flows``), the link summaries and the runs' normalised specs (for their
    bottlenecks)."""
    per_run = _flow_metrics(flows)
    stability = labelled_flows.drop_duplicates(["run_id", "flow"])
    per_run = per_run.join(stability.groupby("run_id")[list(STABILITY_COLUMNS)].mean())
    names, bn_frame = _bottleneck_keys(specs, per_run.index)
    per_run["bottleneck"] = names
    agg = _bottleneck_metrics(_bottleneck_links(link_summary, bn_frame))
    frame = per_run.join(agg, how="left").reset_index()
    return points.merge(frame, on="run_id", how="inner", suffixes=("", "_of_run"))


def cca_table(flows: pd.DataFrame, point_columns: Sequence[str]) -> pd.DataFrame:
    """One row per point, run and algorithm of ``flows`` (``Results.flows``), grouped by the
    columns that say which point a row belongs to: a run shared by two points is counted
    under each."""
    data = flows.assign(baseline=flows["baseline"].fillna(""))
    # Per point and run: a run shared by two points is in the table under each.
    total = data.groupby(["run_id", "point_index"])["goodput_mbps"].transform("sum")
    data = data.assign(_total=total)
    out = (
        data.groupby([*point_columns, "cca"], sort=False, dropna=False)
        .agg(
            flow_count=("flow_name", "count"),
            goodput_mbps=("goodput_mbps", "sum"),
            total_mbps=("_total", "first"),
            per_flow_mbps=("goodput_mbps", "mean"),
            rtt_mean_ms=("rtt_mean_ms", "mean"),
            rtt_p95_ms=("rtt_p95_ms", "mean"),
            qdelay_p95_ms=("qdelay_p95_ms", "mean"),
            goodput_1s_cv=("goodput_1s_cv", "mean"),
            goodput_1s_swing_mbps=("goodput_1s_swing_mbps", "mean"),
            retrans_pkts=("retrans_pkts", "sum"),
        )
        .reset_index()
    )
    out["share_frac"] = out["goodput_mbps"] / out["total_mbps"]
    out["baseline"] = out["baseline"].replace("", None)
    return out.drop(columns=["goodput_mbps", "total_mbps"])


def _flow_metrics(flows: pd.DataFrame) -> pd.DataFrame:
    """Per run over its flows: vectorised, since a report of a thousand runs must not loop."""
    goodput = flows["goodput_mbps"].astype(float)
    by_run = flows.assign(_g=goodput, _g2=goodput * goodput).groupby("run_id", sort=False)
    per_run = pd.DataFrame(
        {
            "n_flows": by_run["_g"].count(),
            "goodput_mbps": by_run["_g"].sum(),
            "_sumsq": by_run["_g2"].sum(),
        }
    )
    denom = per_run["n_flows"] * per_run["_sumsq"]
    per_run["jain_index"] = (per_run["goodput_mbps"] ** 2 / denom).where(denom > 0)
    per_run = per_run.drop(columns="_sumsq")
    by_cca = flows.assign(_g=goodput).groupby(["run_id", "cca"], sort=False)["_g"].sum()
    total = per_run["goodput_mbps"]
    for cca in dict.fromkeys(flows["cca"]):
        mine = by_cca.xs(cca, level="cca").reindex(per_run.index)
        per_run[f"{cca}_share_frac"] = (mine / total).where(total > 0)
    return per_run


def _bottleneck_keys(
    specs: dict[str, dict[str, Any]], run_ids: pd.Index
) -> tuple[pd.Series, pd.DataFrame]:
    """The runs' bottlenecks: their names per run, and rows to select their link summaries."""
    keys = []
    names = {}
    for rid in run_ids:
        bn = bottlenecks(specs[rid])
        names[rid] = ",".join(f"{n}:{d}" for n, d in bn)
        keys += [(rid, n, d) for n, d in bn]
    return pd.Series(names), pd.DataFrame(keys, columns=["run_id", "link_name", "direction"])


def _bottleneck_links(links: pd.DataFrame, bn_frame: pd.DataFrame) -> pd.DataFrame:
    """The bottlenecks' link summaries, with what run metrics take of each (drops, waits)."""
    sel = links.assign(
        link_name=links["link_name"].astype(str), direction=links["direction"].astype(str)
    ).merge(bn_frame, on=["run_id", "link_name", "direction"], how="inner")
    service_ms = PACKET_BYTES * 8 / (sel["rate_mbps"] * 1e6) * 1e3
    # The sampled queue's 99th percentile in packets and in BDPs of the buffer's
    # reference path (buffer_pkts / buffer_bdp): where it stays below the buffer and
    # nothing is dropped, the buffer never filled.
    q99_pkts = sel["queue_delay_p99_ms"] * sel["rate_mbps"] * 1e3 / (PACKET_BYTES * 8)
    aqm_drops = sel["drop_aqm_pkts"] if "drop_aqm_pkts" in sel.columns else 0
    sojourn_p95 = sel["sojourn_p95_ms"] if "sojourn_p95_ms" in sel.columns else float("nan")
    return sel.assign(
        _drops=sel["drop_queue_pkts"] + aqm_drops + sel["drop_random_pkts"],
        _sojourn_p95=sojourn_p95,
        _wait=(sel["sojourn_mean_ms"] - service_ms).clip(lower=0),
        _q99=q99_pkts,
        _q99_bdp=q99_pkts / (sel["buffer_pkts"] / sel["buffer_bdp"]),
    )


def _bottleneck_metrics(sel: pd.DataFrame) -> pd.DataFrame:
    """Per run over its bottlenecks (:func:`_bottleneck_links`): a run may have several."""
    agg = sel.groupby("run_id", sort=False).agg(
        utilisation_frac=("utilisation_frac", "mean"),
        _arrivals=("arrival_pkts", "sum"),
        _drops=("_drops", "sum"),
        queue_wait_mean_ms=("_wait", "mean"),
        queue_delay_p95_ms=("queue_delay_p95_ms", "max"),
        buffer_pkts=("buffer_pkts", "mean"),
        buffer_bdp=("buffer_bdp", "mean"),
        drop_queue_pkts=("drop_queue_pkts", "sum"),
        queue_p99_pkts=("_q99", "max"),
        queue_p99_bdp=("_q99_bdp", "max"),
        sojourn_p95_ms=("_sojourn_p95", "max"),
    )
    arrivals = agg.pop("_arrivals").astype(float)
    drops = agg.pop("_drops").astype(float)
    agg.insert(1, "loss_frac", (drops / arrivals).where(arrivals > 0))
    for col in ("buffer_pkts", "drop_queue_pkts"):
        agg[col] = agg[col].astype(float)
    return agg
