"""The same sweep on a real Dask scheduler and worker on 127.0.0.1 gives the same results."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time

import pandas as pd
import pytest
from ccfair.errors import SpecError
from ccfair.execution.sweeps import run_sweep
from ccfair.spec.sweep import Sweep
from ccfair.store.directory import finished_run_ids
from ccfair.store.schema import TABLES

SPEC = """\
name = "on-dask"
repetitions = 2
[base]
builder = "dumbbell"
duration = "3s"
sample_interval = "100ms"
[grid]
ccas = [["reno", "bbr"], ["cubic", "copa"]]
alpha = [1, 4]
"""


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A ``dask scheduler`` and one ``dask worker`` (subprocesses), torn down afterwards."""
    with _cluster(tmp_path_factory.mktemp("dask")) as (address, _):
        yield address


@contextlib.contextmanager
def _cluster(tmp):
    """Start a scheduler and a worker; yields (address, scheduler process)."""
    tmp.mkdir(parents=True, exist_ok=True)
    sched_file = tmp / "scheduler.json"
    common = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    scheduler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dask",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(sched_file),
        ],
        **common,
    )
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() or not sched_file.read_text().strip():
            assert scheduler.poll() is None, "dask scheduler exited"
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dask",
                "worker",
                address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--no-dashboard",
                "--no-nanny",
                "--local-directory",
                str(tmp / "worker"),
            ],
            **common,
        )
        yield address, scheduler
    finally:
        if worker is not None:
            _stop(worker)
        _stop(scheduler)


def test_sweep_on_a_dask_cluster_matches_the_local_sweep(cluster, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    on_dask = tmp_path / "dask"
    out = subprocess.run(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--out", str(on_dask)]
        + ["--cluster", cluster],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert f"on Dask cluster {cluster}" in out.stderr
    assert "8 of 8 runs finished (8 executed now" in out.stdout

    local = tmp_path / "local"
    run_sweep(Sweep.from_toml(spec), local, workers=2, progress=False, log=lambda m: None)
    assert finished_run_ids(on_dask) == finished_run_ids(local)
    for table in (*TABLES, "runs"):
        a = pd.read_parquet(on_dask / table).drop(
            columns=["started_at", "wall_time_s"], errors="ignore"
        )
        b = pd.read_parquet(local / table).drop(
            columns=["started_at", "wall_time_s"], errors="ignore"
        )
        keys = [c for c in ("run_id", "flow", "link", "direction", "t_ns") if c in a.columns]
        pd.testing.assert_frame_equal(
            a.sort_values(keys).reset_index(drop=True),
            b.sort_values(keys).reset_index(drop=True),
            check_categorical=False,
        )

    # Resuming on the cluster runs nothing again.
    again = subprocess.run(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--out", str(on_dask)]
        + ["--cluster", cluster],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "8 finished, 0 to run" in again.stderr


def test_an_unreachable_scheduler_is_a_clear_error_and_writes_nothing(tmp_path):
    sw = Sweep.from_toml_str(SPEC)
    with pytest.raises(SpecError, match=r'--cluster: "tcp://127.0.0.1:1" cannot be reached'):
        run_sweep(sw, tmp_path / "r", cluster="tcp://127.0.0.1:1", connect_timeout=1.0)
    assert not (tmp_path / "r").exists()


def test_dask_worker_helper_returns_parquet_bytes_of_every_table():
    from ccfair.execution.workers import run_to_bytes

    p = Sweep.from_toml_str(SPEC).expand()[0]
    res = run_to_bytes(p.run_id, p.resolved, "sim")
    assert set(res["tables"]) == {*TABLES, "runs"}
    assert all(blob[:4] == b"PAR1" and blob[-4:] == b"PAR1" for blob in res["tables"].values())


def test_losing_the_scheduler_mid_sweep_is_one_error_line_and_keeps_finished_runs(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text(
        SPEC.replace('duration = "3s"', 'duration = "20s"').replace(
            'name = "on-dask"', 'name = "lost"'
        )
    )
    with _cluster(tmp_path / "c") as (address, scheduler):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ccfair",
                "sweep",
                str(spec),
                "--out",
                str(tmp_path / "r"),
                "--cluster",
                address,
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not list((tmp_path / "r" / "runs").glob("*.parquet")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run finished"
            time.sleep(0.2)
        scheduler.kill()
        _, err = proc.communicate(timeout=180)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: --cluster tcp://"), err
    assert "lost the connection to the Dask scheduler" in lines[0]
    assert "Traceback" not in err
    assert finished_run_ids(tmp_path / "r")  # finished runs are kept
