"""benches/ns3/compare.py (ccfair against ns-3) refuses bad arguments in one line, before
running anything; ns-3 need not be installed (a missing program is one of the errors)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPARE = ROOT / "benches" / "ns3" / "compare.py"


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(COMPARE), *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def fake_binary(tmp_path: Path) -> Path:
    # Never run: every case below fails its checks first.
    b = tmp_path / "dumbbell"
    b.write_text("#!/bin/sh\nexit 99\n")
    b.chmod(0o755)
    return b


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--row", "18"], "expected D_MS:ALPHA"),
        (["--row", "18:2:3"], "expected D_MS:ALPHA"),
        (["--row", "x:2"], "expected two numbers"),
        (["--row", "0:2"], "D must be a finite number of ms > 0"),
        (["--row", "nan:2"], "D must be a finite number of ms > 0"),
        (["--row", "18:-1"], "alpha must be a finite number > 0"),
        (["--row", "18:inf"], "alpha must be a finite number > 0"),
        (["--repeat", "0"], "--repeat: must be > 0"),
        (["--repeat", "two"], "--repeat: expected a number"),
        (["--duration", "-5"], "--duration: must be > 0"),
        (["--sample-ms", "0"], "--sample-ms: must be > 0"),
        (["--duration", "1", "--sample-ms", "2000"], "longer than --duration"),
        (["--cpu", "zero"], "--cpu: expected a CPU list"),
        (["--ns3-arg=foo"], "--ns3-arg: expected --NAME=VALUE"),
        (["--json", "/nonexistent/dir/out.json"], "--json: no directory"),
    ],
)
def test_compare_refuses_bad_arguments(args, says, fake_binary):
    p = _compare("--ns3-binary", str(fake_binary), *args)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""


def test_compare_names_the_missing_ns3_program(tmp_path):
    p = _compare("--ns3-binary", str(tmp_path / "absent"), "--repeat", "1")
    assert p.returncode == 2 and "no executable at" in p.stderr
    assert "benches/ns3/build.sh" in p.stderr and "Traceback" not in p.stderr


def test_compare_reports_a_failing_ns3_run_in_one_line(tmp_path):
    """An ns-3 program that cannot run (here: exits 127 as the loader does when ns-3's
    shared libraries were removed) stops the comparison with one line naming the failure,
    exit 1, no traceback."""
    b = tmp_path / "dumbbell"
    b.write_text(
        "#!/bin/sh\necho 'error while loading shared libraries: libns3-core.so.37' >&2\nexit 127\n"
    )
    b.chmod(0o755)
    p = _compare("--ns3-binary", str(b), "--repeat", "1", "--row", "18:2", "--cpu", "none")
    assert p.returncode == 1, p.stderr
    assert "ns-3 run failed (127)" in p.stderr and "libns3-core.so.37" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
