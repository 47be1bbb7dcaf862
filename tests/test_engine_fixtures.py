"""The engine inputs the Rust tests reuse (crates/ccfair-sim/tests/fixtures/) are what the
Python builders produce today: a builder change that alters them fails here, and
`python scripts/engine_fixtures.py` regenerates them (then the Rust tests run on the new
topology, and their hand-built dumbbell must follow: tests/fairness.rs checks it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    path = ROOT / "scripts" / "engine_fixtures.py"
    spec = importlib.util.spec_from_file_location("engine_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_fixtures"] = module
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


@pytest.mark.parametrize("name", sorted(SCRIPT.fixtures()))
def test_fixture_is_the_builders_output(name: str) -> None:
    stored = (SCRIPT.FIXTURES / name).read_text()
    assert stored == SCRIPT.engine_json(SCRIPT.fixtures()[name]), (
        f"{name} is stale: run python scripts/engine_fixtures.py"
    )
