"""The helper scripts refuse absurd arguments in one line (scripts/cpu_gaps.py,
scripts/main_flow_targets.py, scripts/bpf_vs_linux.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ccfair
import pandas as pd
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


def test_bpf_vs_linux_refuses_results_of_another_schema_before_any_run(tmp_path):
    # A results directory of an older ccfair: the comparison would run a minute of kernel
    # time and then fail to save it, so it must stop first (and needs no root to do so).
    res = tmp_path / "old" / "results"
    r = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
    r.save(res)
    path = res / "runs" / f"{r.run_id}.parquet"
    pd.read_parquet(path).drop(columns=["schema_version"]).to_parquet(path, index=False)
    p = _script("bpf_vs_linux.py", "--out", str(tmp_path / "old"))
    assert p.returncode == 2 and "schema 1" in p.stderr and "--out NEW" in p.stderr
    assert "Traceback" not in p.stderr and "linux ..." not in p.stderr
