"""The built-in scenario shapes: :func:`dumbbell` and :func:`parking_lot` (the functions of
the builders registered in :mod:`ccfair.spec.builders`), and :func:`default_scenario`, the
dumbbell ``ccfair run`` runs without arguments.

Example:
    >>> [f.cca for f in dumbbell(2, ["reno", "bbr"]).flows]
    ['reno', 'bbr']
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from ccfair.errors import SpecError, show
from ccfair.limits import MAX_FLOWS, MAX_LINKS, MAX_NODES
from ccfair.spec.parts import DurationLike, RateLike, SizeLike, check_rate
from ccfair.spec.queues import LINUX_LIMIT_PKTS, split_queue_value
from ccfair.spec.scenario import Scenario
from ccfair.units import DURATION_HINT, parse_duration, plain

__all__ = ["MAX_PARKING_LOT_HOPS", "default_scenario", "dumbbell", "parking_lot"]


_Builder = typing.TypeVar("_Builder", bound=typing.Callable[..., Scenario])


def _plain_arguments(builder: _Builder) -> _Builder:
    """A builder that takes numpy's numbers (``np.float64(0.01)``, ``np.int64(2)``) as the
    Python numbers they hold (:func:`ccfair.units.plain`)."""

    @functools.wraps(builder)
    def wrapper(*args: Any, **kwargs: Any) -> Scenario:
        return builder(*plain(args), **plain(kwargs))

    return typing.cast(_Builder, wrapper)


def _per_flow(arg: str, value: Any, n: int, *, scalar_types: tuple[type, ...]) -> list[Any]:
    """Expand a scalar to ``n`` copies, or check a per-item list has ``n`` entries."""
    if value is None or isinstance(value, scalar_types):
        return [value] * n
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = list(value)
        if len(items) != n:
            raise SpecError(arg, items, f"has {len(items)} entries; expected {n} (one per item)")
        return items
    raise SpecError(arg, value, "is neither a single value nor a list of per-item values")


def _arg_check(arg: str, value: Any, check: typing.Callable[[Any], Any]) -> None:
    try:
        check(value)
    except ValueError as exc:
        raise SpecError(arg, value, str(exc), with_value=False) from None


def _set_host(spec: dict[str, Any], testbed: str | None, kernel: str | None) -> None:
    """The builder's ``testbed`` and ``kernel`` (None: the scenario's defaults)."""
    if testbed is not None:
        spec["testbed"] = testbed
    if kernel is not None:
        spec["kernel"] = kernel


def _check_tcp_arg(tcp: Any) -> None:
    if tcp is not None and not isinstance(tcp, Mapping):
        raise SpecError("tcp", tcp, "is not a table of TCP options (e.g. {init_cwnd = 10})")


def _dur_arg(what: str, *, positive: bool = False) -> typing.Callable[[Any], int]:
    def check(value: Any) -> int:
        ns = parse_duration(value)
        if ns is None:
            raise ValueError(f"{show(value)} is not a duration ({DURATION_HINT})")
        if ns < 0 or (positive and ns == 0):
            raise ValueError(f"{show(value)} is not a valid {what}")
        return ns

    return check


def _buffer_entry(
    buffer_bdp: float | None, buffer_pkts: int | None, reference: str, queue: str = "droptail"
) -> dict[str, Any]:
    """A bottleneck's buffer: ``buffer_pkts`` packets, ``buffer_bdp`` BDPs, or by default 2
    BDPs, or a queue discipline's Linux limit (:data:`LINUX_LIMIT_PKTS`)."""
    if buffer_bdp is not None and buffer_pkts is not None:
        raise SpecError(
            "buffer_pkts",
            buffer_pkts,
            f"and buffer_bdp = {show(buffer_bdp)} are both given; choose one",
        )
    if buffer_pkts is None and buffer_bdp is None and queue in LINUX_LIMIT_PKTS:
        buffer_pkts = LINUX_LIMIT_PKTS[queue]
    if buffer_pkts is not None:
        return {"packets": buffer_pkts, "reference": reference}
    return {"bdp": 2.0 if buffer_bdp is None else buffer_bdp, "reference": reference}


#: A builder's ``bottleneck_queue``: a queue name, or a table of the queue and its options.
QueueLike = str | Mapping[str, Any] | None


def _set_queue(link: dict[str, Any], queue: str | None, qdisc: dict[str, Any] | None) -> None:
    """Put the bottleneck's queue (and a discipline's options) on ``link``; the default
    drop-tail queue is left out, as a link that does not name one."""
    if queue is not None and queue != "droptail":
        link["queue"] = queue
    if qdisc is not None:
        link["qdisc"] = dict(qdisc)


def _measure_entry(measure: Any) -> Any:
    if measure is None or isinstance(measure, Mapping):
        return measure
    if isinstance(measure, Sequence) and not isinstance(measure, str) and len(measure) == 2:
        return {"start": measure[0], "end": measure[1]}
    raise SpecError("measure", measure, 'is not a window: give (start, end) or {"start": ...}')


def _apply_start_jitter(flows: list[dict[str, Any]], start_jitter: Any) -> None:
    if start_jitter not in (0, None, "0", "0s"):
        _arg_check("start_jitter", start_jitter, _dur_arg("start_jitter"))
        for f in flows:
            f["start_jitter"] = start_jitter


def _flow_entry(
    name: str, src: str, dst: str, cca: str, params: Any, start: Any, stop: Any, size: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "src": src,
        "dst": dst,
        "cca": cca,
        "start": start if start is not None else 0,
    }
    if params:
        entry["cca_params"] = params
    if stop is not None:
        entry["stop"] = stop
    if size is not None:
        entry["size"] = size
    return entry


def _check_count(arg: str, value: Any, noun: str, most: int, too_many: str) -> int:
    """A builder's number of flows or hops, checked before anything is built: a huge count
    would fill memory with entries long before the scenario's own bound (_check_bounds)
    could refuse them."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(arg, value, f"is not a positive integer number of {noun}")
    if value > most:
        raise SpecError(arg, value, f"{too_many} (at most {most})")
    return value


def _check_run_args(
    duration: Any, tcp: Any, bottleneck_queue: QueueLike
) -> tuple[str | None, dict[str, Any] | None]:
    """Check the arguments every shape takes alike, and split ``bottleneck_queue`` into the
    queue's name and its discipline's options (None, None: the default drop-tail queue)."""
    _arg_check("duration", duration, _dur_arg("duration", positive=True))
    _check_tcp_arg(tcp)
    if bottleneck_queue is None:
        return None, None
    return split_queue_value(bottleneck_queue, "bottleneck_queue")


def _shape_scenario(
    header: dict[str, Any],
    nodes: list[str],
    links: list[dict[str, Any]],
    flows: list[dict[str, Any]],
    start_jitter: Any,
    measure: Any,
    tcp: Mapping[str, Any] | None,
    testbed: str | None,
    kernel: str | None,
) -> Scenario:
    """The scenario of a shape's nodes, links and flows under ``header`` (name, duration,
    seed, sample interval), with the run settings every builder applies alike."""
    _apply_start_jitter(flows, start_jitter)
    spec: dict[str, Any] = {**header, "nodes": nodes, "links": links, "flows": flows}
    if measure is not None:
        spec["measure"] = _measure_entry(measure)
    if tcp:
        spec["tcp"] = dict(tcp)
    _set_host(spec, testbed, kernel)
    return Scenario.from_dict(spec)


def _dumbbell_bottleneck(
    rate: RateLike,
    delay: DurationLike,
    buffer: dict[str, Any],
    loss: float,
    queue: str | None,
    qdisc: dict[str, Any] | None,
) -> dict[str, Any]:
    """The dumbbell's one shared link, s1-s2, named so sweeps and tables can find it."""
    bottleneck: dict[str, Any] = {
        "name": "bottleneck",
        "between": ["s1", "s2"],
        "rate": rate,
        "delay": delay,
        "buffer": buffer,
    }
    if loss:
        bottleneck["loss"] = loss
    _set_queue(bottleneck, queue, qdisc)
    return bottleneck


def _dumbbell_links(
    senders: list[str],
    receivers: list[str],
    access_rate: RateLike,
    access_delays: list[Any],
    receiver_delays: list[Any],
    bottleneck: dict[str, Any],
) -> list[dict[str, Any]]:
    """The dumbbell's links in the documented order (link indices are part of the spec):
    the senders' access links, the bottleneck, the receivers' access links."""
    links: list[dict[str, Any]] = [
        {"between": [h, "s1"], "rate": access_rate, "delay": d}
        for h, d in zip(senders, access_delays, strict=True)
    ]
    links.append(bottleneck)
    links += [
        {"between": ["s2", h], "rate": access_rate, "delay": d}
        for h, d in zip(receivers, receiver_delays, strict=True)
    ]
    return links


def _dumbbell_flows(
    senders: list[str],
    receivers: list[str],
    ccas: list[Any],
    params: list[Any],
    starts: list[Any],
    stops: list[Any],
    sizes: list[Any],
) -> list[dict[str, Any]]:
    """Flow ``flow<i>`` from the i-th sender to the i-th receiver, with its own per-flow
    arguments."""
    return [
        _flow_entry(
            f"flow{i + 1}",
            senders[i],
            receivers[i],
            ccas[i],
            params[i],
            starts[i],
            stops[i],
            sizes[i],
        )
        for i in range(len(senders))
    ]


@_plain_arguments
def dumbbell(
    n_flows: int = 2,
    ccas: str | Sequence[str] = "cubic",
    *,
    bottleneck_rate: RateLike = "50Mbit/s",
    bottleneck_delay: DurationLike = "18ms",
    buffer_bdp: float | None = None,
    buffer_pkts: int | None = None,
    buffer_reference: str = "flow1",
    bottleneck_loss: float = 0.0,
    bottleneck_queue: QueueLike = None,
    access_rate: RateLike = "1Gbit/s",
    access_delay: DurationLike | Sequence[DurationLike] = "1ms",
    receiver_delay: DurationLike | Sequence[DurationLike] = "1ms",
    starts: DurationLike | Sequence[DurationLike] = 0,
    start_jitter: DurationLike = 0,
    stops: DurationLike | None | Sequence[DurationLike | None] = None,
    sizes: SizeLike | None | Sequence[SizeLike | None] = None,
    cca_params: Mapping[str, Any] | None | Sequence[Mapping[str, Any] | None] = None,
    tcp: Mapping[str, Any] | None = None,
    testbed: str | None = None,
    kernel: str | None = None,
    duration: DurationLike = "60s",
    seed: int = 1,
    sample_interval: DurationLike = "10ms",
    measure: tuple[DurationLike, DurationLike] | Mapping[str, Any] | None = None,
    name: str = "dumbbell",
) -> Scenario:
    """A dumbbell: ``n_flows`` senders -> switch s1 -> bottleneck -> switch s2 -> receivers.

    Nodes ``h1..hn`` (senders), ``s1``, ``s2``, ``h{n+1}..h{2n}`` (receivers); flow ``flow<i>``
    goes from ``h<i>`` to ``h<n+i>``. Links, in this order: ``h<i>-s1`` (access, rate
    ``access_rate``, delay ``access_delay[i]``), ``bottleneck`` (``s1``-``s2``), then
    ``s2-h<n+i>`` (rate ``access_rate``, delay ``receiver_delay[i]``). Access links keep the
    default buffer (1000 packets). The bottleneck buffer is ``buffer_bdp`` x BDP
    (default 2.0) or ``buffer_pkts`` packets, with ``buffer_reference`` (default flow 1) as
    the BDP reference path either way.

    ``bottleneck_queue`` is the bottleneck's queue (docs/spec.md, "Queue disciplines"): a
    name (``"droptail"``, the default, ``"netem"``, ``"codel"``, ``"fq_codel"``, ``"pie"``,
    ``"red"``) or a table of the name and the discipline's options (``{"queue": "codel",
    "ecn": True, "target": "5ms"}``). With a discipline and neither ``buffer_bdp`` nor
    ``buffer_pkts``, the buffer is the discipline's Linux limit (10240 packets for fq_codel,
    1000 for the others).

    Per-flow arguments (``ccas``, ``access_delay``, ``receiver_delay``, ``starts``, ``stops``,
    ``sizes``, ``cca_params``) take one value for all flows or a list with one per flow.
    ``start_jitter`` gives every flow a seeded random start offset in ``[0, start_jitter]``.

    Example (docs/experiments.md harada-dumbbell, D = 2 ms, alpha = 2):
        >>> sc = dumbbell(2, ["reno", "reno"], bottleneck_delay="2ms", buffer_bdp=2.0)
        >>> [(f.src, f.dst) for f in sc.flows]
        [('h1', 'h3'), ('h2', 'h4')]
        >>> sc.resolve().link("bottleneck").buffer_pkts
        67
        >>> aqm = dumbbell(2, "cubic", bottleneck_queue={"queue": "codel", "ecn": True})
        >>> link = aqm.resolve().link("bottleneck")
        >>> link.queue, link.qdisc["ecn"], link.buffer_pkts
        ('codel', True, 1000)
    """
    n = _check_count("n_flows", n_flows, "flows", MAX_FLOWS, "is more flows than a scenario has")
    cca_list = _per_flow("ccas", ccas, n, scalar_types=(str,))
    acc = _per_flow("access_delay", access_delay, n, scalar_types=(str, int, float))
    rcv = _per_flow("receiver_delay", receiver_delay, n, scalar_types=(str, int, float))
    start_list = _per_flow("starts", starts, n, scalar_types=(str, int, float))
    stop_list = _per_flow("stops", stops, n, scalar_types=(str, int, float))
    size_list = _per_flow("sizes", sizes, n, scalar_types=(str, int))
    params = _per_flow("cca_params", cca_params, n, scalar_types=(Mapping,))
    _arg_check("bottleneck_rate", bottleneck_rate, check_rate)
    _arg_check("access_rate", access_rate, check_rate)
    _arg_check("bottleneck_delay", bottleneck_delay, _dur_arg("delay"))
    for arg, values in (("access_delay", acc), ("receiver_delay", rcv)):
        for v in values:
            _arg_check(arg, v, _dur_arg("delay"))
    queue, qdisc = _check_run_args(duration, tcp, bottleneck_queue)

    senders = [f"h{i}" for i in range(1, n + 1)]
    receivers = [f"h{n + i}" for i in range(1, n + 1)]
    buffer = _buffer_entry(buffer_bdp, buffer_pkts, buffer_reference, queue or "droptail")
    bottleneck = _dumbbell_bottleneck(
        bottleneck_rate, bottleneck_delay, buffer, bottleneck_loss, queue, qdisc
    )
    links = _dumbbell_links(senders, receivers, access_rate, acc, rcv, bottleneck)
    flows = _dumbbell_flows(senders, receivers, cca_list, params, start_list, stop_list, size_list)
    header = {"name": name, "duration": duration, "seed": seed, "sample_interval": sample_interval}
    nodes = [*senders, "s1", "s2", *receivers]
    return _shape_scenario(header, nodes, links, flows, start_jitter, measure, tcp, testbed, kernel)


def _parking_lot_bottlenecks(
    routers: list[str],
    rates: list[Any],
    delays: list[Any],
    buffer_bdp: float | None,
    buffer_pkts: int | None,
    queue: str | None,
    qdisc: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Bottleneck ``L<i>`` between routers i and i + 1, its buffer's BDP referenced to cross
    flow i, the one-hop path over it."""
    links: list[dict[str, Any]] = [
        {
            "name": f"L{i}",
            "between": [routers[i - 1], routers[i]],
            "rate": rates[i - 1],
            "delay": delays[i - 1],
            "buffer": _buffer_entry(buffer_bdp, buffer_pkts, f"cross{i}", queue or "droptail"),
        }
        for i in range(1, len(rates) + 1)
    ]
    for link in links:
        _set_queue(link, queue, qdisc)
    return links


def _parking_lot_access_links(
    hops: int, access_rate: RateLike, access_delay: DurationLike
) -> list[dict[str, Any]]:
    """Every host's access link, in the documented order: the main sender's, each cross
    flow's sender and receiver in hop order, the main receiver's last."""

    def access(a: str, b: str) -> dict[str, Any]:
        return {"between": [a, b], "rate": access_rate, "delay": access_delay}

    links = [access("h1", "r1")]
    for i in range(1, hops + 1):
        links.append(access(f"h{2 * i}", f"r{i}"))
        links.append(access(f"r{i + 1}", f"h{2 * i + 1}"))
    links.append(access(f"r{hops + 1}", f"h{2 * hops + 2}"))
    return links


def _parking_lot_flows(
    hops: int,
    main_cca: str,
    main_params: Mapping[str, Any] | None,
    main_start: Any,
    cross_ccas: list[Any],
    cross_params: list[Any],
    cross_starts: list[Any],
) -> list[dict[str, Any]]:
    """The main flow over every hop, then cross flow ``cross<i>`` over hop i alone."""
    flows = [
        _flow_entry("main", "h1", f"h{2 * hops + 2}", main_cca, main_params, main_start, None, None)
    ]
    flows += [
        _flow_entry(
            f"cross{i}",
            f"h{2 * i}",
            f"h{2 * i + 1}",
            cross_ccas[i - 1],
            cross_params[i - 1],
            cross_starts[i - 1],
            None,
            None,
        )
        for i in range(1, hops + 1)
    ]
    return flows


#: The longest parking lot within a scenario's bounds: ``hops + 1`` flows, ``3 x hops + 2``
#: links and ``3 x hops + 3`` nodes (ccfair.limits).
MAX_PARKING_LOT_HOPS = min(MAX_FLOWS - 1, (MAX_LINKS - 2) // 3, (MAX_NODES - 3) // 3)


@_plain_arguments
def parking_lot(
    hops: int = 10,
    main_cca: str = "cubic",
    cross_cca: str | Sequence[str] = "cubic",
    *,
    rate: RateLike | Sequence[RateLike] = "50Mbit/s",
    delay: DurationLike | Sequence[DurationLike] = "18ms",
    buffer_bdp: float | None = None,
    buffer_pkts: int | None = None,
    bottleneck_queue: QueueLike = None,
    access_rate: RateLike = "1Gbit/s",
    access_delay: DurationLike = "1ms",
    main_params: Mapping[str, Any] | None = None,
    cross_params: Mapping[str, Any] | None | Sequence[Mapping[str, Any] | None] = None,
    main_start: DurationLike = 0,
    cross_starts: DurationLike | Sequence[DurationLike] = 0,
    start_jitter: DurationLike = 0,
    tcp: Mapping[str, Any] | None = None,
    testbed: str | None = None,
    kernel: str | None = None,
    duration: DurationLike = "60s",
    seed: int = 1,
    sample_interval: DurationLike = "10ms",
    measure: tuple[DurationLike, DurationLike] | Mapping[str, Any] | None = None,
    name: str = "parking-lot",
) -> Scenario:
    """A parking lot of ``hops`` bottlenecks in series (docs/experiments.md harada-2hop/-10hop).

    Routers ``r1..r{k+1}`` in a chain joined by bottleneck links ``L1..Lk`` (``Li`` joins
    ``r<i>`` and ``r<i+1>``; rate ``rate``, delay ``delay``, scalars or one per hop). Main
    flow ``main`` from ``h1`` (at ``r1``) to ``h{2k+2}`` (at ``r{k+1}``) crosses every
    bottleneck; cross flow ``cross<i>`` from ``h{2i}`` (at ``r<i>``) to ``h{2i+1}``
    (at ``r<i+1>``) crosses only ``Li``. Every host has an access link
    (``access_rate``, ``access_delay``, default buffer). ``Li``'s buffer is ``buffer_bdp``
    x BDP (default 2.0) or ``buffer_pkts`` packets, with cross flow ``i`` (the one-hop path)
    as the BDP reference. ``bottleneck_queue`` is every ``Li``'s queue, as for
    :func:`dumbbell`.

    Example (harada-2hop):
        >>> sc = parking_lot(2, "reno", "reno", delay="2ms")
        >>> r = sc.resolve()
        >>> r.flow("main").node_path
        ['h1', 'r1', 'r2', 'r3', 'h6']
        >>> r.flow("cross2").node_path, r.link("L2").buffer_pkts
        (['h4', 'r2', 'r3', 'h5'], 67)
    """
    # hops + 1 flows and 3 x hops + 2 links: checked before anything is built.
    k = _check_count(
        "hops", hops, "hops", MAX_PARKING_LOT_HOPS, "is more hops than a scenario holds"
    )
    cross = _per_flow("cross_cca", cross_cca, k, scalar_types=(str,))
    rates = _per_flow("rate", rate, k, scalar_types=(str, int, float))
    delays = _per_flow("delay", delay, k, scalar_types=(str, int, float))
    cparams = _per_flow("cross_params", cross_params, k, scalar_types=(Mapping,))
    cstarts = _per_flow("cross_starts", cross_starts, k, scalar_types=(str, int, float))
    for v in rates:
        _arg_check("rate", v, check_rate)
    for v in delays:
        _arg_check("delay", v, _dur_arg("delay"))
    _arg_check("access_rate", access_rate, check_rate)
    _arg_check("access_delay", access_delay, _dur_arg("delay"))
    queue, qdisc = _check_run_args(duration, tcp, bottleneck_queue)

    routers = [f"r{i}" for i in range(1, k + 2)]
    hosts = [f"h{i}" for i in range(1, 2 * k + 3)]
    links = _parking_lot_bottlenecks(routers, rates, delays, buffer_bdp, buffer_pkts, queue, qdisc)
    links += _parking_lot_access_links(k, access_rate, access_delay)
    flows = _parking_lot_flows(k, main_cca, main_params, main_start, cross, cparams, cstarts)
    header = {"name": name, "duration": duration, "seed": seed, "sample_interval": sample_interval}
    nodes = [*hosts, *routers]
    return _shape_scenario(header, nodes, links, flows, start_jitter, measure, tcp, testbed, kernel)


def default_scenario() -> Scenario:
    """The built-in scenario of ``ccfair run`` without arguments: BBR against CUBIC on a
    50 Mbit/s dumbbell with 18 ms bottleneck delay (40 ms RTT) and a 2 BDP buffer, 30 s
    (the Harada dumbbell at D = 18 ms, alpha = 2).

    Example:
        >>> default_scenario().resolve().link("bottleneck").buffer_pkts
        333
    """
    return dumbbell(
        2,
        ["bbr", "cubic"],
        bottleneck_rate="50Mbit/s",
        bottleneck_delay="18ms",
        buffer_bdp=2.0,
        duration="30s",
        name="default-bbr-vs-cubic",
    )
