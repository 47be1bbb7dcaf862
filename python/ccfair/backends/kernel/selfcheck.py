"""The kernel backend's self-checks: the bounds a run must stay within to count as reliable
(docs/kernel.md), and the flags of a run that exceeded them.

Example:
    >>> Bounds().lateness_p99_us
    500.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LATENESS_FLAGS", "Bounds", "assess", "rate_ratio_min", "stall_bound_us"]


@dataclass(frozen=True)
class Bounds:
    """Limits a kernel run must stay within to count as reliable (docs/kernel.md).

    Example:
        >>> Bounds().lateness_p99_us
        500.0
    """

    #: 99th percentile of the forwarder's lateness (actual minus scheduled time of every
    #: packet event).
    lateness_p99_us: float = 500.0
    #: 99.9th percentile of the lateness.
    lateness_p999_us: float = 2000.0
    #: CPU time of the forwarder thread over wall time.
    forwarder_cpu: float = 0.8
    #: Achieved over configured rate of every link direction busy for at least
    #: ``rate_min_busy_s`` seconds.
    rate_ratio: float = 0.99
    rate_min_busy_s: float = 1.0
    #: Sampling grid points missed by senders and receivers, as a fraction of all.
    missed_samples: float = 0.01
    #: 99th percentile of the senders' sampling lateness (sample time minus grid point).
    sampling_p99_us: float = 2000.0
    #: Largest lateness of a handshake packet (its RTT sample enters Linux's min RTT). The
    #: emulator aborts an attempt beyond it (``max_handshake_lateness_us``, the same value).
    handshake_max_us: float = 500.0
    #: Largest lateness of any packet event, as a fraction of the smallest round-trip
    #: propagation time of the scenario's flows, and at least ``stall_floor_us``: a stall of
    #: a tenth of an RTT delays a whole window of ACKs (and can end a slow start early).
    stall_rtt_fraction: float = 0.1
    stall_floor_us: float = 1000.0


#: Flags that say the machine could not keep up (as opposed to, e.g., a host queue drop).
LATENESS_FLAGS = (
    "forwarder lateness",
    "forwarder stall",
    "forwarder CPU",
    "achieved link rate",
    "sampling",
)


def assess(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> list[str]:
    """The self-check bounds a run exceeded, one short sentence each (empty: reliable).

    Example:
        >>> assess({"forwarder": {"lateness": {"p99_us": 900.0, "p999_us": 1000.0},
        ...     "cpu_frac": 0.1, "rates": []}, "missed_samples": 0, "host_tx_drops": 0})
        ['forwarder lateness p99 900 us > 500 us']
    """
    flags = []
    fwd = selfcheck["forwarder"]
    late = fwd.get("lateness", {})
    if _gt(late.get("p99_us"), bounds.lateness_p99_us):
        flags.append(
            f"forwarder lateness p99 {late['p99_us']:.0f} us > {bounds.lateness_p99_us:.0f} us"
        )
    if _gt(late.get("p999_us"), bounds.lateness_p999_us):
        flags.append(
            f"forwarder lateness p99.9 {late['p999_us']:.0f} us > {bounds.lateness_p999_us:.0f} us"
        )
    if _gt(fwd.get("cpu_frac"), bounds.forwarder_cpu):
        flags.append(f"forwarder CPU {fwd['cpu_frac']:.0%} > {bounds.forwarder_cpu:.0%}")
    handshake = fwd.get("handshake_lateness", {})
    if _gt(handshake.get("max_us"), bounds.handshake_max_us):
        flags.append(
            f"a handshake packet was {handshake['max_us']:.0f} us late (> "
            f"{bounds.handshake_max_us:.0f} us): Linux's min RTT may read high"
        )
    stall_us = stall_bound_us(selfcheck, bounds)
    if _gt(late.get("max_us"), stall_us):
        episodes = fwd.get("stall_episodes") or []
        over = [t for t, ms in episodes if ms * 1e3 > stall_us]
        when = f", beyond the bound at {', '.join(f'{t:.1f}' for t in over[:5])} s" if over else ""
        steal = selfcheck.get("steal_ms") or 0
        host = (
            f"; meanwhile the hypervisor took {steal:.0f} ms of CPU (steal time)" if steal else ""
        )
        flags.append(
            f"forwarder stall: an event {late['max_us'] / 1e3:.1f} ms late (> {stall_us / 1e3:.1f} "
            f"ms, a tenth of the smallest base RTT); {fwd.get('stalls', 0)} stalls over "
            f"{fwd.get('stall_threshold_us', 0) / 1e3:g} ms{when}{host}"
        )
    ratio = rate_ratio_min(selfcheck, bounds)
    if ratio is not None and ratio < bounds.rate_ratio:
        flags.append(f"achieved link rate {ratio:.2%} of configured < {bounds.rate_ratio:.0%}")
    sampling = selfcheck.get("sampling_lateness", {})
    if _gt(sampling.get("p99_us"), bounds.sampling_p99_us):
        flags.append(
            f"sampling lateness p99 {sampling['p99_us']:.0f} us > {bounds.sampling_p99_us:.0f} us"
        )
    expected = selfcheck.get("expected_samples") or 0
    missed = selfcheck.get("missed_samples", 0)
    if expected and missed / expected > bounds.missed_samples:
        flags.append(f"{missed} of {expected} sampling points missed")
    if selfcheck.get("host_tx_drops", 0):
        flags.append(f"{selfcheck['host_tx_drops']} packets dropped by host TUN queues")
    if fwd.get("write_errors", 0):
        flags.append(f"{fwd['write_errors']} failed writes to TUN devices")
    return flags


def stall_bound_us(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> float:
    """The largest lateness a run may show: ``stall_rtt_fraction`` of its smallest base RTT
    (``min_base_rtt_us`` in the self-check record), at least ``stall_floor_us``.

    Example:
        >>> stall_bound_us({"min_base_rtt_us": 8000.0})
        1000.0
        >>> stall_bound_us({"min_base_rtt_us": 204000.0})
        20400.0
    """
    rtt = selfcheck.get("min_base_rtt_us")
    if not isinstance(rtt, int | float) or rtt != rtt:
        return bounds.stall_floor_us
    return max(bounds.stall_floor_us, bounds.stall_rtt_fraction * rtt)


def rate_ratio_min(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> float | None:
    """Lowest achieved/configured rate over link directions busy long enough to judge."""
    ratios = [
        r["achieved_bps"] / r["rate_bps"]
        for r in selfcheck["forwarder"].get("rates", [])
        if r["busy_s"] >= bounds.rate_min_busy_s and r["achieved_bps"] is not None
    ]
    return min(ratios) if ratios else None


def _gt(value: Any, bound: float) -> bool:
    return isinstance(value, int | float) and value == value and value > bound
