"""The helper scripts refuse absurd arguments in one line (scripts/cpu_gaps.py,
scripts/main_flow_targets.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cpu", "999999"], "--cpu 999999 is not one of"),
        (["--cpu", "-1"], "--cpu -1 is not one of"),
        (["--seconds", "0"], "--seconds 0.0 is not in"),
        (["--seconds", "1e300"], "is not in (0, 3600]"),
    ],
)
def test_cpu_gaps_refuses_absurd_arguments(args, says):
    p = _script("cpu_gaps.py", *args)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("where", ["/nonexistent/study", "/etc"])
def test_main_flow_targets_refuses_a_directory_that_is_no_study(where):
    p = _script("main_flow_targets.py", where)
    assert p.returncode == 2 and "is not a `ccfair validate --out` directory" in p.stderr
    assert "Traceback" not in p.stderr
