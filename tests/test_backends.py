"""The backend registry and interface (issue 12, part 1): backends are registered objects
whose capabilities callers ask, not strings compared. None of these tests runs the kernel
backend: a third backend is registered for the test (the simulator under another name)."""

from __future__ import annotations

import doctest
import subprocess
import sys
import types
from typing import Any

import ccfair
import ccfair.backends as backends
import pytest
from ccfair.backends.base import CAPABILITIES, Backend, BackendRun
from ccfair.backends.sim import BACKEND as SIM
from ccfair.errors import SpecError
from ccfair.execution.runs import run_many
from ccfair.execution.threads import run_in_threads
from ccfair.spec import parts
from ccfair.spec.identity import run_id_of


class _Echo(Backend):
    """The simulator under another name, recording what drivers ask of it."""

    name = "echo"
    summary = "echo: the simulator under another name (tests)"
    title = "the echo backend"
    docs = "tests/test_backends.py"

    def __init__(self, *, real_time: bool = False, late: bool = False, fail: bool = False):
        self.real_time = real_time  # type: ignore[misc]
        self.late = late
        self.fail = fail
        self.calls: list[str] = []

    def check(self, resolved: Any, *, force_bpf: bool = False) -> None:
        self.calls.append("check")

    def preflight(self) -> None:
        self.calls.append("preflight")

    def run(self, resolved, run_id, engine_spec, limits, *, force_bpf=False) -> BackendRun:
        if self.fail:
            raise RuntimeError("echo failed")
        out = SIM.run(resolved, run_id, engine_spec, limits)
        return BackendRun(out.raw, None, ["forwarder lateness 9 ms"] if self.late else [])

    def is_late(self, flags: str) -> bool:
        return "lateness" in flags

    def stop_all(self) -> None:
        self.calls.append("stop_all")


@pytest.fixture
def echo(monkeypatch):
    """Register ``_Echo`` as backend "echo": one registry line and its module."""
    backend = _Echo()
    module = types.ModuleType("ccfair_test_echo_backend")
    module.BACKEND = backend
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends.REGISTRY, "echo", module.__name__)
    backends._load.cache_clear()
    yield backend
    backends._load.cache_clear()


def _sc(**kw: Any) -> ccfair.Scenario:
    return ccfair.dumbbell(2, "reno", duration="1s", **kw)


def test_the_registry_lists_the_simulator_and_the_kernel_each_from_its_module():
    assert backends.names()[:2] == ("sim", "kernel")
    assert parts.BACKENDS == backends.names()
    for name in backends.names():
        b = backends.get(name)
        assert b.name == name and b.summary and b.title and b.docs
        for capability in CAPABILITIES:
            assert isinstance(getattr(b, capability), bool), (name, capability)
    assert "kernel" in [b.name for b in backends.with_capability("real_time")]
    assert not any(getattr(SIM, c) for c in CAPABILITIES)
    # Only a backend that can refuse a scenario costs drivers a second resolution of each.
    assert not SIM.checks_scenarios and backends.get("kernel").checks_scenarios


def test_the_cli_offers_the_registered_backends():
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "run", "--help"], capture_output=True, text=True
    )
    assert "{" + ",".join(backends.names()) + "}" in out.stdout


@pytest.mark.parametrize(
    ("call", "path", "closest"),
    [
        (lambda: ccfair.run(_sc(), backend="kernal"), "backend", "kernel"),
        (lambda: run_many([_sc()], backend="simm"), "backend", "sim"),
        (
            lambda: ccfair.Scenario.from_dict({**_sc().to_dict(), "backend": "sin"}),
            "backend",
            "sim",
        ),
        (
            lambda: ccfair.Sweep.from_dict(
                {"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}, "backend": "kernels"}
            ),
            "backend",
            "kernel",
        ),
    ],
    ids=["run", "run_many", "scenario", "sweep"],
)
def test_an_unknown_backend_names_the_field_the_value_and_the_closest_backend(call, path, closest):
    with pytest.raises(SpecError) as err:
        call()
    assert err.value.path == path
    assert f'is not a backend; did you mean "{closest}"?' in str(err.value)
    assert f"(backends: {', '.join(backends.names())})" in str(err.value)


def test_a_backend_lacking_a_capability_is_refused_naming_those_that_have_it():
    with pytest.raises(SpecError) as err:
        ccfair.run(_sc(), force_bpf=True)
    assert err.value.path == "force_bpf"
    text = str(err.value)
    assert 'applies to backend "kernel" or "veth" only' in text
    assert 'backend "sim" lacks bpf_programs' in text
    with pytest.raises(KeyError, match="is not a capability"):
        backends.with_capability("teleport")


def test_a_registry_line_naming_a_module_without_its_backend_is_an_error(monkeypatch):
    module = types.ModuleType("ccfair_test_wrong_backend")
    module.BACKEND = SIM  # named "sim", registered as "wrong"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends.REGISTRY, "wrong", module.__name__)
    backends._load.cache_clear()
    try:
        with pytest.raises(TypeError, match="is not a Backend named 'wrong'"):
            backends.get("wrong")
    finally:
        backends._load.cache_clear()


def test_a_third_backend_runs_through_the_same_entry_points(echo):
    sc = _sc()
    sim = ccfair.run(sc)
    mine = ccfair.run(sc, backend="echo")
    assert mine.runs.iloc[0]["backend"] == "echo"
    assert mine.run_id == run_id_of(sc.resolve().normalized, "echo") != sim.run_id
    assert mine.flows["goodput_mbps"].tolist() == sim.flows["goodput_mbps"].tolist()
    # Scenarios and sweeps accept the new name; its capabilities decide the rest.
    assert ccfair.Scenario.from_dict({**sc.to_dict(), "backend": "echo"}).backend == "echo"
    with pytest.raises(SpecError, match='applies to backend "kernel" or "veth" only'):
        ccfair.run(sc, backend="echo", force_bpf=True)


def test_run_many_checks_every_scenario_on_its_backend_before_running(echo):
    out = run_many([_sc(), _sc(seed=2)], backend="echo")
    assert [r.runs.iloc[0]["backend"] for r in out] == ["echo", "echo"]
    assert echo.calls == ["check", "preflight", "check", "preflight"]


def test_a_failing_run_stops_the_backends_runs_and_propagates(echo):
    echo.fail = True
    with pytest.raises(RuntimeError, match="echo failed"):
        run_many([_sc(), _sc(seed=2)], backend="echo", jobs=2)
    assert "stop_all" in echo.calls


def test_parallel_real_time_runs_that_were_late_are_reported(echo):
    echo.real_time = True
    echo.late = True
    said: list[str] = []
    run_many([_sc(), _sc(seed=2)], backend="echo", jobs=2, warn=said.append)
    assert len(said) == 1 and said[0].startswith("2 of 2 echo runs with 2 parallel jobs")
    # The same runs on a backend that is not real time: nothing to say.
    echo.real_time = False
    said.clear()
    run_many([_sc(), _sc(seed=2)], backend="echo", jobs=2, warn=said.append)
    assert said == []


def test_run_in_threads_keeps_the_order_and_reports_each_result():
    seen: list[tuple[int, int]] = []
    out = run_in_threads(5, lambda i: i * 10, jobs=3, on_result=lambda i, r: seen.append((i, r)))
    assert out == [0, 10, 20, 30, 40]
    assert sorted(seen) == [(i, 10 * i) for i in range(5)]


@pytest.mark.parametrize(
    "module", ["ccfair.backends", "ccfair.backends.sim", "ccfair.backends.kernel"]
)
def test_docstring_examples_run(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
