"""Model predictions next to measurements: the BBR share of Ware et al. (IMC 2019).

Ware, Mukerjee, Seshan and Sherry, "Modeling BBR's Interactions with Loss-Based Congestion
Control", IMC 2019; equations as condensed in docs/reference.md section 6.1
(from an independent reproduction that numbers them as the paper does; the paper PDF itself was
not available to us). Symbols:

- ``c``: bottleneck capacity in packets/s (1500 B packets);
- ``l``: base (propagation) RTT in s, equal for all flows;
- ``q``: bottleneck buffer in packets; ``X = q / (c l)``, the buffer in BDPs;
- ``N``: number of BBR flows (the number of loss-based flows is not an input).

Full N-flow form (eq. 7-11): the loss-based flows' fraction is
``p = 1/2 - 1/(2X) - 4N/q`` (0 if negative: BBR takes everything); BBR's in-flight cap
``2 BtlBw RTprop`` binds, so BBR's share is ``1 - p`` while not in PROBE_RTT. PROBE_RTT costs
``Probe_time = (q/c + 0.2 + l) (d/10)`` of every ``d`` seconds (drain a full queue, 200 ms at
4 packets, one RTT; once per 10 s), so ``BBR_frac = (1 - p) (d - Probe_time) / d``, which does
not depend on ``d``. ccfair takes the 0.2 s and 10 s from the BBR flows' ``probe_rtt_ms`` and
``min_rtt_win_sec`` parameters (Linux defaults 200 ms and 10 s).

Simple form: ``1 - p`` with ``p = 1/2 - 1/(2X)``, i.e. the same balance of in-flight cap and
queue share without the PROBE_RTT terms (no ``4N/q``, no PROBE_RTT time). The issue names this
"the simplified form printed in the Harada study"; that study's text was not available to us,
so this is our reading: the N-independent steady state of Ware's model.

Assumptions of the model (recorded per point in :func:`model_table`): bulk flows from a
synchronised start, equal base RTTs, one drop-tail bottleneck shared by every flow, a full
queue (throughput share = queue share), stock BBRv1 (no RTprop modification).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.algorithms import loss_based
from ccfair.spec.topology import PACKET_BYTES, bottlenecks
from ccfair.units import parse_duration, parse_rate

if TYPE_CHECKING:  # a table is made of a results directory; pandas is imported there
    import pandas as pd

    from ccfair.results.directory import Results

__all__ = ["LOSS_BASED", "model_table", "ware_full_share", "ware_p", "ware_simple_share"]

#: Algorithms the model treats as loss-based: the registry's loss-based family
#: (ccfair.algorithms), so that a new loss-based algorithm enters the model table.
LOSS_BASED = loss_based()


def ware_p(x_bdp: float, n_bbr: int, q_pkts: float) -> float:
    """Loss-based flows' fraction ``p = 1/2 - 1/(2X) - 4N/q`` (eq. 8), floored at 0.

    Example:
        >>> round(ware_p(4.0, 1, 400.0), 4)
        0.365
    """
    p = 0.5 - 1.0 / (2.0 * x_bdp) - 4.0 * n_bbr / q_pkts
    return max(0.0, p)


def ware_simple_share(x_bdp: float) -> float:
    """BBR's share without the PROBE_RTT terms: ``1/2 + 1/(2X)``, at most 1.

    Example:
        >>> ware_simple_share(1.0), ware_simple_share(4.0)
        (1.0, 0.625)
    """
    return min(1.0, 0.5 + 1.0 / (2.0 * x_bdp))


def ware_full_share(
    c_pps: float,
    l_s: float,
    q_pkts: float,
    n_bbr: int,
    *,
    probe_rtt_s: float = 0.2,
    min_rtt_win_s: float = 10.0,
) -> float:
    """BBR's share with PROBE_RTT (eq. 7-11): ``(1 - p)(1 - (q/c + probe + l) / win)``.

    Example (50 Mbit/s, 40 ms, 2 BDP = 333 packets, one BBR flow):
        >>> round(ware_full_share(50e6 / 12000, 0.040, 333, 1), 4)
        0.7379
    """
    x_bdp = q_pkts / (c_pps * l_s)
    p = ware_p(x_bdp, n_bbr, q_pkts)
    probe = (q_pkts / c_pps + probe_rtt_s + l_s) / min_rtt_win_s
    return (1.0 - p) * max(0.0, 1.0 - probe)


def ware_inputs(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The model's inputs for a normalised spec, or None if it is not one BBR-vs-loss-based
    bottleneck (every flow BBR, Reno or CUBIC, both kinds present, one shared bottleneck).

    Example:
        >>> import ccfair
        >>> spec = ccfair.dumbbell(2, ["cubic", "bbr"], buffer_bdp=2.0).resolve().normalized
        >>> w = ware_inputs(spec)
        >>> w["q_pkts"], round(w["x_bdp"], 3), w["n_bbr"], w["n_loss"]
        (333.0, 1.998, 1, 1)
    """
    flows = spec["flows"]
    ccas = [f["cca"] for f in flows]
    n_bbr = sum(c == "bbr" for c in ccas)
    loss = loss_based()
    if n_bbr == 0 or n_bbr == len(ccas) or any(c != "bbr" and c not in loss for c in ccas):
        return None
    bns = bottlenecks(spec)
    if len(bns) != 1:
        return None
    name, _direction = bns[0]
    link = next(link for link in spec["links"] if link["name"] == name)
    c_pps = (parse_rate(link["rate"]) or 0) / (8 * PACKET_BYTES)
    rtts = [(parse_duration(f["base_rtt"]) or 0) / 1e9 for f in flows]
    l_s = float(np.mean(rtts))
    q = float(link["buffer_pkts"])
    bbr_params = [f.get("cca_params", {}) for f in flows if f["cca"] == "bbr"]
    first = bbr_params[0]
    stock = all(p.get("rtprop_trigger", "off") == "off" for p in bbr_params)
    return {
        "bottleneck": name,
        "c_pps": c_pps,
        "l_s": l_s,
        "q_pkts": q,
        "x_bdp": q / (c_pps * l_s),
        "n_bbr": n_bbr,
        "n_loss": len(ccas) - n_bbr,
        "probe_rtt_s": float(first.get("probe_rtt_ms", 200)) / 1e3,
        "min_rtt_win_s": float(first.get("min_rtt_win_sec", 10)),
        "equal_rtt": max(rtts) - min(rtts) < 1e-9,
        "sync_start": all((parse_duration(f.get("start", 0)) or 0) == 0 for f in flows),
        "stock_bbr": stock,
    }


def model_table(results: Results) -> pd.DataFrame:
    """Measured BBR share next to both forms of the model, one row per point where the
    model applies: the grid labels, ``rep``, the inputs (``c_pps``, ``l_s``, ``q_pkts``,
    ``x_bdp``, ``n_bbr``, ``n_loss``), the assumption flags (``equal_rtt``, ``sync_start``,
    ``stock_bbr``), ``measured`` (BBR flows' goodput / all goodput), ``ware_simple`` and
    ``ware_full``. Empty if no point has BBR against loss-based flows.

    Example:
        >>> from ccfair.results.directory import Results
        >>> model_table(Results("results/harada-dumbbell")).ware_full  # doctest: +SKIP
    """
    import pandas as pd

    specs = results.specs()
    flows = results.table("flows")
    goodput = flows.groupby("run_id")["goodput_mbps"].sum()
    bbr = flows[flows["cca"] == "bbr"].groupby("run_id")["goodput_mbps"].sum()
    rows = []
    for rid in results.run_ids:
        inputs = ware_inputs(specs[rid])
        if inputs is None:
            continue
        total = float(goodput.get(rid, 0.0))
        rows.append(
            {
                "run_id": rid,
                **inputs,
                "measured": float(bbr.get(rid, 0.0)) / total if total > 0 else np.nan,
                "ware_simple": ware_simple_share(inputs["x_bdp"]),
                "ware_full": ware_full_share(
                    inputs["c_pps"],
                    inputs["l_s"],
                    inputs["q_pkts"],
                    inputs["n_bbr"],
                    probe_rtt_s=inputs["probe_rtt_s"],
                    min_rtt_win_s=inputs["min_rtt_win_s"],
                ),
            }
        )
    columns = [
        "run_id",
        "bottleneck",
        "c_pps",
        "l_s",
        "q_pkts",
        "x_bdp",
        "n_bbr",
        "n_loss",
        "probe_rtt_s",
        "min_rtt_win_s",
        "equal_rtt",
        "sync_start",
        "stock_bbr",
        "measured",
        "ware_simple",
        "ware_full",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    return results.points().merge(frame, on="run_id", how="inner", suffixes=("", "_of_run"))
