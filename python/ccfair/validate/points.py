"""The study's points: every run of the inputs (scenarios, scenario files, sweep files, a
preset's grid) with its repetitions, the scenario each side runs, and the algorithm pair a
point belongs to.

Example:
    >>> from ccfair.spec.shapes import dumbbell
    >>> [p.label for p in validation_points([dumbbell(1, "reno", name="a")])]
    ['a']
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccfair.algorithms import names as algorithm_names
from ccfair.errors import SpecError
from ccfair.presets import get as get_preset
from ccfair.spec.scenario import Scenario, as_scenario
from ccfair.spec.sweep import Sweep

#: The study's two sides, as registered in :mod:`ccfair.backends`: the model under test and
#: the reference it is compared with (the tables' columns say ``sim`` and ``kernel``).
MODEL_BACKEND = "sim"


REFERENCE_BACKEND = "kernel"


@dataclass(frozen=True)
class VPoint:
    """One run of the study: a grid point (``label``, ``params``) and a repetition.

    Attributes:
        label: the point's label (without the repetition).
        params: grid key -> value label (empty for a plain scenario).
        rep: repetition number (0-based).
        scenario: the scenario to run on both backends.
    """

    label: str
    params: dict[str, str]
    rep: int
    scenario: Scenario


def _is_sweep(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return "grid" in data or "base" in data


def _sweep_points(sw: Any) -> list[VPoint]:
    out = []
    for p in sw.expand():
        label = f"{sw.name}[" + ",".join(f"{k}={v}" for k, v in p.params.items()) + "]"
        if p.baseline is not None:
            label += f" baseline {p.baseline}"
        out.append(VPoint(label, {k: str(v) for k, v in p.params.items()}, p.rep, p.scenario))
    return out


def validation_points(
    inputs: Sequence[Scenario | str | os.PathLike[str]] = (),
    *,
    preset: str | None = None,
    quick: bool = False,
) -> list[VPoint]:
    """Every run of the study: the points of the inputs (scenarios, scenario files, sweep
    files) and of a preset's grid (``quick``: its reduced grid), with their repetitions.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> [p.label for p in validation_points([dumbbell(1, "reno", name="a")])]
        ['a']
    """
    out: list[VPoint] = []
    if preset is not None:
        out += _sweep_points(get_preset(preset).sweep(quick=quick))
    for item in inputs:
        if isinstance(item, Scenario):
            out.append(VPoint(item.name, {}, 0, item))
            continue
        path = Path(item)
        if path.is_file() and _is_sweep(path):
            out += _sweep_points(Sweep.from_toml(path))
            continue
        sc = as_scenario(path)
        out.append(VPoint(sc.name if sc.name != "scenario" else path.stem, {}, 0, sc))
    # Distinct labels for distinct plain scenarios of the same name.
    seen: dict[tuple[str, int], int] = {}
    unique = []
    for p in out:
        n = seen.get((p.label, p.rep), 0)
        seen[(p.label, p.rep)] = n + 1
        unique.append(p if n == 0 else VPoint(f"{p.label}#{n + 1}", p.params, p.rep, p.scenario))
    return unique


def expand_inputs(
    inputs: Sequence[Scenario | str | os.PathLike[str]],
) -> list[tuple[str, Scenario]]:
    """(label, scenario) for every run of the inputs, the repetition in the label when the
    inputs have several (see :func:`validation_points`).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> [label for label, _ in expand_inputs([dumbbell(1, "reno", name="a")])]
        ['a']
    """
    points = validation_points(inputs)
    reps = len({p.rep for p in points}) > 1
    return [(p.label + (f" r{p.rep}" if reps else ""), p.scenario) for p in points]


def sim_variant(sc: Scenario, hz: int | None, sim_tcp: Mapping[str, Any] | None = None) -> Scenario:
    """The scenario the simulator runs: at the kernel's ``HZ`` unless ``tcp.hz`` is set,
    and with the TCP options ``sim_tcp`` (e.g. the testbed's measured ``host_latency``, or
    ``tso = "linux"``) where the scenario does not set them itself.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> sim_variant(dumbbell(1, "cubic"), 250).tcp
        {'hz': 250}
        >>> sim_variant(dumbbell(1, "cubic"), None, {"tso": "linux"}).tcp
        {'tso': 'linux'}
    """

    def own(key: str) -> bool:
        return key in sc.tcp or any(key in f.tcp for f in sc.flows)

    extra = {k: v for k, v in (sim_tcp or {}).items() if not own(k)}
    if hz is not None and not own("hz") and "hz" not in extra:
        extra["hz"] = hz
    if not extra:
        return sc
    data = sc.to_dict()
    data["tcp"] = {**data.get("tcp", {}), **extra}
    data.pop("backend", None)
    return Scenario.from_dict(data)


def sim_tcp_label(sim_tcp: Mapping[str, Any] | None) -> str:
    """How a study's report names the simulator's TCP options.

    Example:
        >>> sim_tcp_label({"tso": "linux", "host_latency": {"measured": {}}})
        'tso = linux, host_latency = measured'
    """
    if not sim_tcp:
        return "defaults"
    show = [f"{k} = {next(iter(v)) if isinstance(v, Mapping) else v}" for k, v in sim_tcp.items()]
    return ", ".join(show)


def measured_host_latency(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``tcp.host_latency`` value of a turnaround measurement: the JSON that
    ``scripts/measure_host_latency.py --out FILE`` writes (its ``receiver_turnaround_us``
    and ``sender_turnaround_us``, 17 quantiles each).

    Example:
        >>> measured_host_latency("host_latency_10m.json")  # doctest: +SKIP
        {'measured': {'receiver_us': [...], 'sender_us': [...]}}
    """
    try:
        doc = json.loads(Path(path).read_text())
        table = {
            "receiver_us": [float(v) for v in doc["receiver_turnaround_us"]],
            "sender_us": [float(v) for v in doc["sender_turnaround_us"]],
        }
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise SpecError(
            "host_latency",
            str(path),
            f"is not a turnaround measurement of scripts/measure_host_latency.py ({exc})",
        ) from None
    return {"measured": table}


def kernel_variant(sc: Scenario, reference: str = REFERENCE_BACKEND) -> Scenario:
    return Scenario.from_dict({**sc.to_dict(), "backend": reference})


def with_kernel(sc: Scenario, kernel: str) -> Scenario:
    """``sc`` on hosts of ``kernel`` (its testbed unchanged), unless its hosts are idealised
    (no kernel) or already of that kernel.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> with_kernel(dumbbell(1, "bbr", kernel="4.15"), "6.18").kernel
        '6.18'
        >>> with_kernel(dumbbell(1, "bbr", testbed="ideal"), "6.18").kernel is None
        True
    """
    if sc.resolve().normalized["kernel"] in (None, kernel):
        return sc
    data = sc.to_dict()
    data["kernel"] = kernel
    return Scenario.from_dict(data)


def with_duration(sc: Scenario, duration: str) -> Scenario:
    data = sc.to_dict()
    data["duration"] = duration
    data.pop("measure", None)
    return Scenario.from_dict(data)


def pair_of(p: VPoint) -> str:
    """The algorithm pair a point belongs to: its ``ccas`` grid value when that lists
    algorithms (``"cubic-cubic"`` -> "cubic vs cubic"), else its flows' algorithms in flow
    order ("bbr vs cubic"; one algorithm: "copa alone"), which is also what a named value of
    the axis gets (``copa-vs-cubic = ["copa", "cubic"]``).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> pair_of(VPoint("x", {}, 0, dumbbell(2, ["reno", "bbr"])))
        'reno vs bbr'
        >>> pair_of(VPoint("x", {"ccas": "copa-alone"}, 0, dumbbell(4, "copa")))
        'copa alone'
    """
    if "ccas" in p.params:
        listed = re.split(r"[,+ -]+", p.params["ccas"].strip("[]"))
        if set(listed) <= set(algorithm_names()):
            return " vs ".join(listed)
    ccas = list(dict.fromkeys(f.cca for f in p.scenario.flows))
    return " vs ".join(ccas) if len(ccas) > 1 else f"{ccas[0]} alone"
