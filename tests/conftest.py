"""Shared fixtures: the kernel backend's availability (tests/test_kernel.py, test_validate.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from ccfair.backends.kernel import host as kernel_host


def _unavailable() -> str | None:
    missing = kernel_host.missing_capabilities()
    if missing:
        return f"needs root: this process lacks {' and '.join(missing)}"
    if not Path("/dev/net/tun").exists():
        return "needs /dev/net/tun (CONFIG_TUN)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip command"
    lacking = {"reno", "cubic", "bbr"} - set(kernel_host.available_ccas())
    if lacking:
        return f"needs the kernel congestion controls {', '.join(sorted(lacking))}"
    return None


@pytest.fixture
def kernel_backend() -> None:
    """Fail (in CI) or skip (elsewhere) naming the capability the kernel backend lacks."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CCFAIR_REQUIRE_KERNEL") == "1":
            pytest.fail(f"kernel backend {reason}")
        pytest.skip(f"kernel backend {reason}")


@pytest.fixture(scope="session")
def grid3(tmp_path_factory):
    """A small sweep with three axes (algorithms x buffer x delay, 2 repetitions): every
    figure has an axis it does not show (tests/test_no_pooling.py, test_notebook.py)."""
    from ccfair.execution.sweeps import run_sweep
    from ccfair.results.directory import Results
    from ccfair.spec.sweep import Sweep

    root = tmp_path_factory.mktemp("grid3") / "r"
    sweep = Sweep.from_dict(
        {
            "name": "grid3",
            "base": {"builder": "dumbbell", "duration": "3s", "sample_interval": "100ms"},
            "grid": {
                "ccas": [["bbr", "bbr"], ["cubic", "bbr"]],
                "alpha": [1, 4],
                "delay": ["2ms", "18ms"],
            },
            "repetitions": 2,
        }
    )
    assert run_sweep(sweep, root, workers=2, progress=False, log=lambda m: None).complete
    return Results(root)
