"""Running scenarios: the one entry point shared by the CLI and Python users."""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.errors import SpecError
from ccfair.results import RunResult, build_result
from ccfair.spec import Scenario, dumbbell

BACKENDS = ("sim",)


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


def as_scenario(scenario: Scenario | dict[str, Any] | str | os.PathLike[str]) -> Scenario:
    """Accept a Scenario, a spec dict, or a path to a TOML file."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario)
    path = Path(scenario)
    if not path.exists():
        raise SpecError("scenario", str(path), "no such file")
    return Scenario.from_toml(path)


def run_id_of(normalized: dict[str, Any], backend: str) -> str:
    """Content hash of a normalised spec and backend: the same point never runs twice.

    Example:
        >>> run_id_of({"a": 1}, "sim") == run_id_of({"a": 1}, "sim")
        True
    """
    blob = json.dumps({"spec": normalized, "backend": backend}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def run(
    scenario: Scenario | dict[str, Any] | str | os.PathLike[str],
    *,
    backend: str = "sim",
) -> RunResult:
    """Run one scenario and return its tables.

    Raises :class:`ccfair.SpecError` (naming the field) before anything runs if the scenario
    is invalid.

    Example:
        >>> import ccfair
        >>> r = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
        >>> list(r.flows["name"])
        ['flow1', 'flow2']
    """
    if backend not in BACKENDS:
        raise SpecError("backend", backend, f"unknown backend; known: {', '.join(BACKENDS)}")
    sc = as_scenario(scenario)
    resolved = sc.resolve()
    rid = run_id_of(resolved.normalized, backend)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    raw = _core.run(resolved.engine_json)
    wall = time.perf_counter() - t0
    return build_result(
        resolved, raw, run_id=rid, backend=backend, started_at=started, wall_time_s=wall
    )
