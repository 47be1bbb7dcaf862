"""A scenario is resolved once on its way to the engine: the resolved record travels with the
run (to threads, worker processes and Dask) and nothing resolves it again.

Resolutions are counted by wrapping ``ccfair.spec.resolve.resolve``, the one function that
resolves (``Scenario.from_dict`` and ``Scenario.resolve`` call it through its module).
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import ccfair
import pytest
from ccfair.execution import cluster, workers
from ccfair.execution.runs import run_many
from ccfair.execution.sweeps import run_sweep
from ccfair.spec import resolve as resolution
from ccfair.spec.resolved import Resolved
from ccfair.spec.scenario import Scenario
from ccfair.spec.sweep import Sweep

SWEEP = {
    "name": "once",
    "base": {"builder": "dumbbell", "duration": "1s", "sample_interval": "100ms"},
    "grid": {"alpha": [0.5, 1, 2], "ccas": [["reno", "cubic"], ["bbr", "cubic"]]},
}


@pytest.fixture
def count(monkeypatch: pytest.MonkeyPatch) -> list[Scenario]:
    """The scenarios resolved from now on, in order (one entry per resolution)."""
    seen: list[Scenario] = []
    real = resolution.resolve

    def counted(sc: Scenario, raw: Any) -> Resolved:
        seen.append(sc)
        return real(sc, raw)

    monkeypatch.setattr(resolution, "resolve", counted)
    return seen


def test_a_built_scenario_is_resolved_once_and_run_without_resolving_again(count):
    sc = ccfair.dumbbell(2, "reno", duration="1s")
    assert len(count) == 1  # the builder validates: that resolution is kept
    r = ccfair.run(sc)
    assert len(count) == 1
    assert r.run_id == sc.resolve().identity_json.run_id("sim")
    assert len(count) == 1


def test_a_scenario_dict_is_resolved_once_by_run(count):
    r = ccfair.run(ccfair.dumbbell(2, "reno", duration="1s").to_dict())
    assert len(count) == 2  # the builder's scenario, then the dict's: one each
    assert r.flows["flow_name"].tolist() == ["flow1", "flow2"]


def test_run_takes_a_resolved_record_as_it_is(count):
    resolved = ccfair.dumbbell(1, "reno", duration="1s").resolve()
    before = len(count)
    r = ccfair.run(resolved)
    assert len(count) == before
    assert r.run_id == ccfair.run(ccfair.dumbbell(1, "reno", duration="1s")).run_id


def test_changing_a_scenario_resolves_it_again():
    sc = ccfair.dumbbell(2, "reno", duration="1s")
    first = sc.resolve()
    assert sc.resolve() is first
    sc.seed = 7
    assert sc.resolve() is not first and sc.resolve().engine_spec["seed"] == 7
    copy = sc.model_copy(update={"seed": 9})
    assert copy.resolve().engine_spec["seed"] == 9 and sc.resolve().engine_spec["seed"] == 7
    # The kept record is not part of what a scenario is.
    assert Scenario.from_dict(sc.to_dict()) == sc


def test_run_many_resolves_each_scenario_once(count):
    scs = [ccfair.dumbbell(1, cca, duration="1s") for cca in ("reno", "cubic")]
    assert len(count) == 2
    run_many(scs)
    assert len(count) == 2


def test_a_sweep_resolves_each_point_once_in_the_parent_and_its_workers_get_the_record(
    count, monkeypatch, tmp_path
):
    sweep = Sweep.from_dict(SWEEP)
    after_parse = len(count)  # the base is checked once when the sweep is read
    sent: list[tuple[str, Any]] = []
    real_send = workers._Worker.send

    def send(self: Any, run_id: str, resolved: Any, *args: Any) -> None:
        sent.append((run_id, resolved))
        real_send(self, run_id, resolved, *args)

    monkeypatch.setattr(workers._Worker, "send", send)
    outcome = run_sweep(sweep, tmp_path / "r", workers=1, progress=False, log=lambda m: None)
    assert outcome.total == 6 and len(outcome.executed) == 6 and not outcome.failed
    resolved_points = count[after_parse:]
    assert len(resolved_points) == 6  # one resolution per point, in the parent
    # Each worker process got its point's resolved record, the one the parent resolved.
    assert len(sent) == 6
    by_scenario = {id(sc): sc for sc in resolved_points}
    for run_id, resolved in sent:
        assert isinstance(resolved, Resolved)
        assert id(resolved.scenario) in by_scenario
        assert resolved.identity_json.run_id("sim") == run_id
    assert len({id(resolved.scenario) for _, resolved in sent}) == 6


def test_the_worker_task_carries_the_resolved_record_exactly():
    resolved = ccfair.dumbbell(2, ["bbr", "cubic"], duration="1s").resolve()
    line = workers.encode_resolved(resolved)
    assert "\n" not in line
    back = workers.decode_resolved(json.loads(json.dumps(line)))
    assert back.engine_json == resolved.engine_json
    assert back.normalized == resolved.normalized
    assert back.scenario == resolved.scenario
    # The worker has the record: asking the scenario for it resolves nothing.
    assert back.scenario.resolve() is back


def test_a_worker_runs_its_task_without_resolving(count, tmp_path):
    resolved = ccfair.dumbbell(2, "reno", duration="1s").resolve()
    rid = resolved.identity_json.run_id("sim")
    task = workers.decode_resolved(workers.encode_resolved(resolved))
    before = len(count)
    reply = workers.run_and_save(rid, task, "sim", str(tmp_path))
    res = workers.run_to_bytes(rid, task, "sim")
    assert len(count) == before
    assert reply["run_id"] == rid == res["run_id"] and "runs" in res["tables"]


def _calls(module: Any) -> set[str]:
    """The names every function of ``module`` calls (``f(...)``, ``x.f(...)``)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                out.add(func.id)
            elif isinstance(func, ast.Attribute):
                out.add(func.attr)
    return out


@pytest.mark.parametrize("module", [workers, cluster])
def test_the_workers_code_neither_resolves_nor_validates_a_scenario(module):
    calls = _calls(module)
    for name in ("resolve", "from_dict", "model_validate", "as_scenario", "from_normalized"):
        assert name not in calls, f"{module.__name__} calls {name}"


@pytest.mark.parametrize("scenario", [None, "file"])
def test_ccfair_run_with_a_seed_and_a_duration_resolves_once(count, tmp_path, capsys, scenario):
    """`ccfair run [FILE] --seed N --duration D` reads the scenario checking types only and
    resolves it once, with the overrides applied (it resolved it twice: once as read, once
    after the overrides)."""
    from ccfair.cli import main

    args = ["run", "--seed", "3", "--duration", "1s", "--no-save", "--json"]
    if scenario == "file":
        path = tmp_path / "s.toml"
        path.write_text(ccfair.dumbbell(2, "reno", duration="5s").to_toml())
        count.clear()
        args.insert(1, str(path))
    assert main(args) == 0
    assert len(count) == 1 and count[0].seed == 3 and count[0].duration == 1_000_000_000
    assert len(json.loads(capsys.readouterr().out)) == 2  # the two flows' rows
