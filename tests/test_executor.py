"""Running sweeps: resumable, atomic, deterministic; killed, interrupted, damaged, refused."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from ccfair.errors import ResultsError, SpecError
from ccfair.execution.sweeps import run_sweep
from ccfair.spec.sweep import Sweep
from ccfair.store.directory import finished_run_ids
from ccfair.store.read import verify_run
from ccfair.store.schema import TABLES
from ccfair.store.sweep_record import read_sweep_record

# Provenance that legitimately differs between two executions of the same run.
VOLATILE = ["started_at", "wall_time_s"]


def small_sweep(**kw) -> Sweep:
    spec = {
        "name": "small",
        "base": {"builder": "dumbbell", "duration": "3s", "sample_interval": "100ms"},
        "grid": {"ccas": [["reno", "cubic"], ["copa", "bbr"]], "alpha": [1, 4]},
        "repetitions": 2,
    }
    spec.update(kw)
    return Sweep.from_dict(spec)


def slow_spec_text(n_alphas: int = 10) -> str:
    """A sweep whose runs take a noticeable time each (10-hop parking lot, 6 s)."""
    alphas = ", ".join(str(1 + i) for i in range(n_alphas))
    return (
        'name = "slow"\n[base]\nbuilder = "parking_lot"\nhops = 10\nduration = "6s"\n'
        f'sample_interval = "100ms"\n[grid]\nalpha = [{alphas}]\n'
    )


def start_sweep(spec: Path, root: Path, workers: int = 1) -> subprocess.Popen[str]:
    """``ccfair sweep SPEC --out ROOT`` in its own process group (so that a signal to the
    group is what Ctrl-C in a terminal does), output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--out", str(root)]
        + ["--workers", str(workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for_a_finished_run(proc: subprocess.Popen[str], root: Path) -> None:
    deadline = time.monotonic() + 60
    while not finished_run_ids(root):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)


def tables(root: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for table in (*TABLES, "runs"):
        frame = pd.read_parquet(root / table)
        frame = frame.drop(columns=[c for c in VOLATILE if c in frame.columns])
        sort = [c for c in ("run_id", "flow", "link", "direction", "t_ns") if c in frame.columns]
        out[table] = frame.sort_values(sort).reset_index(drop=True)
    return out


def assert_same_tables(a: Path, b: Path) -> None:
    ta, tb = tables(a), tables(b)
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_categorical=False)


def mtimes(root: Path) -> dict[str, float]:
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns
        for p in root.rglob("*.parquet")
        if not p.name.startswith(".")
    }


def cli(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args], capture_output=True, text=True, **kw
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The small sweep, run once uninterrupted."""
    root = tmp_path_factory.mktemp("ref") / "r"
    outcome = run_sweep(small_sweep(), root, workers=2, progress=False, log=lambda m: None)
    assert outcome.complete and len(outcome.executed) == 8
    return root


def test_a_sweep_writes_every_run_and_records_itself(reference):
    sw = small_sweep()
    ids = {p.run_id for p in sw.expand()}
    assert set(finished_run_ids(reference)) == ids
    record = read_sweep_record(reference)
    assert record["hash"] == sw.spec_hash()
    assert record["run_ids"] == list(dict.fromkeys(p.run_id for p in sw.expand()))
    assert [p["params"] for p in record["points"]][:2] == [
        {"ccas": "reno-cubic", "alpha": 1},
        {"ccas": "reno-cubic", "alpha": 1},
    ]
    assert all(verify_run(reference, rid) is None for rid in ids)


def test_rerunning_a_finished_sweep_executes_nothing(reference):
    before = mtimes(reference)
    outcome = run_sweep(small_sweep(), reference, progress=False, log=lambda m: None)
    assert outcome.executed == [] and outcome.already == 8 and outcome.complete
    assert mtimes(reference) == before


def test_same_spec_gives_identical_tables(reference, tmp_path):
    run_sweep(small_sweep(), tmp_path / "again", workers=1, progress=False, log=lambda m: None)
    assert_same_tables(reference, tmp_path / "again")


def test_a_directory_of_another_sweep_is_refused(reference, tmp_path):
    other = small_sweep(grid={"ccas": [["reno", "cubic"]], "alpha": [1, 8]})
    with pytest.raises(ResultsError, match="holds results of sweep 'small'.*not of this sweep"):
        run_sweep(other, reference, progress=False, log=lambda m: None)
    # And from the command line: one line, status 2, nothing written.
    spec = tmp_path / "other.toml"
    spec.write_text(
        'name = "small"\n[base]\nbuilder = "dumbbell"\nduration = "3s"\n[grid]\nalpha = [8]\n'
    )
    before = mtimes(reference)
    out = cli("sweep", str(spec), "--out", str(reference))
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"error: {reference}: holds results of sweep 'small'")
    assert "Traceback" not in out.stderr
    assert mtimes(reference) == before


def test_a_directory_of_single_runs_is_refused(tmp_path):
    import ccfair

    ccfair.run(ccfair.dumbbell(2, "reno", duration="1s")).save(tmp_path)
    with pytest.raises(ResultsError, match="holds 1 runs that are not from a sweep"):
        run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)


def test_a_ccfair_that_resolves_the_sweep_to_other_runs_does_not_resume_it(tmp_path):
    # Another ccfair (a changed builder default) gave other run ids for the same sweep file;
    # the hash matched, and its runs were added next to the record's: 24 runs, half of them
    # unlabelled, reported as "12 of 12 ... complete".
    run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)
    record = json.loads((tmp_path / "sweep.json").read_text())
    old = {rid: f"{i:016x}" for i, rid in enumerate(record["run_ids"])}
    record["run_ids"] = [old[r] for r in record["run_ids"]]
    for p in record["points"]:
        p["run_id"] = old[p["run_id"]]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    before = sorted(finished_run_ids(tmp_path))
    with pytest.raises(ResultsError, match="cannot be mixed with those"):
        run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)
    assert sorted(finished_run_ids(tmp_path)) == before


def test_a_second_sweep_into_a_busy_directory_is_refused(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    with open(tmp_path / ".ccfair-lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        fh.write("pid 12345")
        fh.flush()
        with pytest.raises(ResultsError, match="another sweep is writing .*pid 12345"):
            run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)


def test_a_users_lock_named_file_is_neither_overwritten_nor_taken(tmp_path):
    # The lock was once ".lock", truncated whatever it held.
    (tmp_path / ".lock").write_text("my lock notes\n")
    run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)
    assert (tmp_path / ".lock").read_text() == "my lock notes\n"
    (tmp_path / ".ccfair-lock").write_text("my notes, unluckily named\n")
    with pytest.raises(ResultsError, match="is not ccfair's lock file"):
        run_sweep(small_sweep(), tmp_path, progress=False, log=lambda m: None)
    assert (tmp_path / ".ccfair-lock").read_text() == "my notes, unluckily named\n"


def test_damaged_and_partial_runs_are_detected_and_recomputed(reference, tmp_path):
    import shutil

    root = tmp_path / "r"
    shutil.copytree(reference, root)
    ids = finished_run_ids(root)
    damaged, partial = ids[0], ids[1]
    # A truncated Parquet file (as a disk error or a foreign tool would leave it).
    path = root / "flows" / f"{damaged}.parquet"
    path.write_bytes(path.read_bytes()[:100])
    assert "not readable Parquet" in verify_run(root, damaged)
    # A run whose writer died before its marker: tables there, no runs/ file, a temp file
    # named as ccfair names them (prefix, the dead writer's pid and token).
    (root / "runs" / f"{partial}.parquet").unlink()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (root / "links" / f".ccfair-{dead}-0badc0de.{partial}.parquet.tmp").write_bytes(b"half")
    # Also where a killed sweep or report leaves them: the top (sweep.json) and figures/.
    (root / f".ccfair-{dead}-0badc0de.sweep.json.tmp").write_bytes(b"half")
    (root / "figures").mkdir(exist_ok=True)
    (root / "figures" / f".ccfair-{dead}-0badc0de.x.png.tmp").write_bytes(b"half")
    # Files ccfair did not create stay, even when they look temporary.
    (root / "links" / f".{partial}.parquet.999.tmp").write_bytes(b"not ours")
    (root / "flows" / ".notes.tmp").write_bytes(b"not ours")
    # A pid no process can have: not a writer's (it stopped every resume with an
    # OverflowError from os.kill); kept, as files ccfair did not create are.
    huge = f".ccfair-99999999999999999999-abcdef01.{partial}.parquet.tmp"
    (root / "flows" / huge).write_bytes(b"not ours either")
    (root / "flows" / f".ccfair-0-abcdef01.{partial}.parquet.tmp").write_bytes(b"nor this")
    assert partial not in finished_run_ids(root)
    # Reading the damaged directory is a clear error, not a pyarrow traceback.
    out = cli("metrics", str(root))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{damaged}.parquet: cannot be read" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1

    messages = []
    outcome = run_sweep(small_sweep(), root, progress=False, log=messages.append)
    assert sorted(outcome.executed) == sorted([damaged, partial])
    assert outcome.recomputed == [damaged]
    assert any(f"run {damaged}: damaged" in m for m in messages)
    assert sorted(p.name for p in root.rglob("*.tmp")) == sorted(
        [
            f".{partial}.parquet.999.tmp",
            ".notes.tmp",
            huge,
            f".ccfair-0-abcdef01.{partial}.parquet.tmp",
        ]
    )
    assert_same_tables(reference, root)


def test_a_run_file_with_other_columns_is_recomputed(reference, tmp_path):
    # A flows file without goodput_mbps was read with nulls there (the point's mean halved)
    # and a resume called the sweep complete; one with a column of another type failed
    # every read with an ArrowTypeError.
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "r"
    shutil.copytree(reference, root)
    ids = finished_run_ids(root)
    dropped = root / "flows" / f"{ids[0]}.parquet"
    pq.write_table(pq.read_table(dropped).drop(["goodput_mbps"]), dropped)
    retyped = root / "link_summary" / f"{ids[1]}.parquet"
    table = pq.read_table(retyped)
    i = table.schema.get_field_index("drop_queue_pkts")
    pq.write_table(
        table.set_column(i, "drop_queue_pkts", table.column(i).cast(pa.string())), retyped
    )
    assert "missing ['goodput_mbps']" in verify_run(root, ids[0])
    assert "drop_queue_pkts of type string" in verify_run(root, ids[1])
    # Read before the resume: one line naming the file, not nulls or an ArrowTypeError.
    out = cli("metrics", str(root))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{ids[0]}.parquet: has other columns than the schema's" in out.stderr
    outcome = run_sweep(small_sweep(), root, progress=False, log=lambda m: None)
    assert sorted(outcome.recomputed) == sorted(ids[:2])
    assert_same_tables(reference, root)


def test_damage_inside_a_file_is_found_on_read_and_recomputed_on_resume(reference, tmp_path):
    # A resume checked footers only: a broken page with its footer intact was read as an
    # error by `metrics`, yet the resume called the run finished.
    import shutil

    root = tmp_path / "r"
    shutil.copytree(reference, root)
    rid = finished_run_ids(root)[0]
    path = root / "flows" / f"{rid}.parquet"
    data = bytearray(path.read_bytes())
    for i in range(8, 200):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    out = cli("metrics", str(root))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert f"{path}: cannot be read" in out.stderr
    assert "rerun the sweep (or ccfair run) into this directory" in out.stderr
    assert "is not readable Parquet" in verify_run(root, rid)
    outcome = run_sweep(small_sweep(), root, progress=False, log=lambda m: None)
    assert outcome.recomputed == [rid] and outcome.executed == [rid]
    assert_same_tables(reference, root)


def silently_flipped(path: Path) -> tuple[int, object]:
    """Flip one bit inside a data page of ``path`` (the first place, from the end of the
    largest column chunk backwards, where the file still reads without page checksums and
    a value has changed); returns the offset and the table as read unverified."""
    import pyarrow.parquet as pq

    original = pq.read_table(path)
    meta = pq.read_metadata(path)
    chunks = [meta.row_group(0).column(j) for j in range(meta.num_columns)]
    chunk = max(chunks, key=lambda c: c.total_compressed_size)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    clean = path.read_bytes()
    for offset in range(start + chunk.total_compressed_size - 1, start, -1):
        data = bytearray(clean)
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))
        try:
            flipped = pq.read_table(path)
        except Exception:  # noqa: BLE001 - a flip the format itself notices: try another
            continue
        if not flipped.equals(original):
            return offset, flipped
    raise AssertionError(f"no silent flip found in {path}")


def test_a_flipped_bit_in_a_data_page_is_an_error_on_read_and_recomputed_on_resume(
    reference, tmp_path
):
    # Files had no page checksums: one bit flipped inside a data page changed a value and
    # every read (metrics, Results, a resume) took it as it was.
    import shutil

    import ccfair

    root = tmp_path / "r"
    shutil.copytree(reference, root)
    rid = finished_run_ids(root)[1]
    path = root / "flows" / f"{rid}.parquet"
    silently_flipped(path)  # without checksums, a changed value nobody notices
    out = cli("metrics", str(root))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: cannot be read (")
    assert "checksum" in line.lower() and "rerun the sweep" in line
    with pytest.raises(ResultsError, match="checksum"):
        _ = ccfair.Results(root).flows
    with pytest.raises(ResultsError, match="checksum"):
        ccfair.load(root, run_id=rid)
    assert "checksum" in verify_run(root, rid).lower()
    messages = []
    outcome = run_sweep(small_sweep(), root, progress=False, log=messages.append)
    assert outcome.recomputed == [rid] and outcome.executed == [rid]
    assert any(f"run {rid}: damaged" in m for m in messages)
    assert_same_tables(reference, root)


def test_files_without_page_checksums_are_still_read(reference, tmp_path):
    # Directories written before ccfair wrote checksums: read and resumed as they are.
    import shutil

    import pyarrow.parquet as pq

    root = tmp_path / "r"
    shutil.copytree(reference, root)
    for path in root.glob("*/*.parquet"):
        pq.write_table(pq.read_table(path), path)  # no page checksums
    rid = finished_run_ids(root)[0]
    assert verify_run(root, rid) is None
    out = cli("metrics", str(root), "--json")
    assert out.returncode == 0, out.stderr
    outcome = run_sweep(small_sweep(), root, progress=False, log=lambda m: None)
    assert outcome.executed == [] and outcome.recomputed == []


def test_every_table_file_has_page_checksums(reference, tmp_path):
    import pyarrow.parquet as pq

    rid = finished_run_ids(reference)[0]
    for table in (*TABLES, "runs"):
        path = reference / table / f"{rid}.parquet"
        data = bytearray(path.read_bytes())
        chunk = pq.read_metadata(path).row_group(0).column(0)
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        data[start + chunk.total_compressed_size - 1] ^= 0x01  # the last byte of a page
        broken = tmp_path / f"{table}.parquet"
        broken.write_bytes(bytes(data))
        with pytest.raises(OSError, match="(?i)checksum"):
            pq.read_table(broken, page_checksum_verification=True)


def test_kill_mid_sweep_loses_no_finished_run_and_resume_runs_only_the_rest(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text(slow_spec_text())
    root = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ccfair", "sweep", str(spec), "--out", str(root), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the worker dies with it
    )
    try:
        deadline = time.monotonic() + 60
        while len(finished_run_ids(root)) < 2:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = finished_run_ids(root)
    assert 2 <= len(done) < 10, "the kill came too late to test anything"
    # Every run that counts as finished is complete and sound.
    for rid in done:
        assert verify_run(root, rid) is None
    before = {rel: m for rel, m in mtimes(root).items() if any(rid in rel for rid in done)}
    assert len(before) == 5 * len(done)

    out = cli("sweep", str(spec), "--out", str(root), "--workers", "2")
    assert out.returncode == 0, out.stderr
    assert len(finished_run_ids(root)) == 10
    # Exactly the missing runs were executed; the finished ones were not touched.
    assert f"10 runs, {len(done)} finished, {10 - len(done)} to run" in out.stderr
    now = mtimes(root)
    assert {rel: now[rel] for rel in before} == before

    reference = tmp_path / "uninterrupted"
    ref = cli("sweep", str(spec), "--out", str(reference), "--quiet")
    assert ref.returncode == 0, ref.stderr
    assert_same_tables(reference, root)


def test_ctrl_c_stops_cleanly_and_the_rerun_finishes(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text(slow_spec_text(6))
    root = tmp_path / "r"
    proc = start_sweep(spec, root)
    wait_for_a_finished_run(proc, root)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted: finishing the 1 run(s) in progress" in err
    assert "rerun the same command" in err
    done = finished_run_ids(root)
    assert 1 <= len(done) < 6
    assert all(verify_run(root, rid) is None for rid in done)
    out = cli("sweep", str(spec), "--out", str(root), "--quiet")
    assert out.returncode == 0 and len(finished_run_ids(root)) == 6


def test_two_ctrl_c_at_once_abandon_cleanly_and_fail_nothing(tmp_path):
    # Both presses seen in one wait (as `timeout -s INT` delivers them) were once taken for
    # workers that kept dying: every run not started was reported failed, exit status 2.
    spec = tmp_path / "slow.toml"
    spec.write_text(slow_spec_text(6))
    root = tmp_path / "r"
    proc = start_sweep(spec, root)
    wait_for_a_finished_run(proc, root)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.1)  # two presses, not one pending signal (the loop waits up to 0.5 s)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "failed" not in out + err and "kept dying" not in out + err
    done = finished_run_ids(root)
    assert all(verify_run(root, rid) is None for rid in done)
    rerun = cli("sweep", str(spec), "--out", str(root), "--quiet")
    assert rerun.returncode == 0 and len(finished_run_ids(root)) == 6


def test_workers_end_with_a_killed_sweep(tmp_path):
    # Killing only the sweep's process (SIGKILL, SIGTERM, the OOM killer) left its workers
    # running their runs to the end and writing them into the directory after its lock was
    # gone (and into whatever sweep took the directory next).
    spec = tmp_path / "long.toml"
    spec.write_text(slow_spec_text(4).replace('duration = "6s"', 'duration = "600s"'))
    root = tmp_path / "r"
    proc = start_sweep(spec, root, workers=2)
    children_file = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 60
    while len(children_file.read_text().split()) < 2:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    children = children_file.read_text().split()
    time.sleep(3)  # the workers are into their 600 s runs
    proc.kill()
    proc.wait()

    from ccfair.store.files import _alive  # running, not a zombie

    deadline = time.monotonic() + 10
    while any(_alive(int(c)) for c in children):
        assert time.monotonic() < deadline, "workers outlived their sweep"
        time.sleep(0.05)
    assert finished_run_ids(root) == []


def test_progress_bar_shows_counts_and_eta(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "p"\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n[grid]\nalpha = [1, 2, 3]\n'
    )
    out = cli("sweep", str(spec), "--out", str(tmp_path / "r"), "--workers", "1")
    assert out.returncode == 0, out.stderr
    # stderr is a pipe here: progress lines (test_cli tests their every-few-seconds rhythm
    # and the time left), the last one with the count and the time taken.
    assert "p: 0/3 runs\n" in out.stderr and "p: 3/3 runs (100%), " in out.stderr
    assert out.stderr.rstrip().endswith("elapsed")
    assert "sweep 'p': 3 of 3 runs finished (3 executed now, 0 already there)" in out.stdout
    record = json.loads((tmp_path / "r" / "sweep.json").read_text())
    assert record["name"] == "p" and len(record["points"]) == 3


def test_a_killed_worker_fails_only_its_run_and_is_replaced(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text(slow_spec_text(6))
    root = tmp_path / "r"
    proc = start_sweep(spec, root)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    wait_for_a_finished_run(proc, root)
    # Into the next run (a run takes seconds): a kill between the first run's marker and its
    # reply would hit a finished run, which counts as done, not as failed.
    time.sleep(0.5)
    worker = int(children.read_text().split()[0])  # the sweep's only worker process
    os.kill(worker, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err  # failed runs: exit 2, one error line
    assert "a worker process died" in err and "Traceback" not in err
    assert len(finished_run_ids(root)) == 5  # the other runs went on in a new worker
    out = cli("sweep", str(spec), "--out", str(root))
    assert out.returncode == 0 and "5 finished, 1 to run" in out.stderr


# ---- kernel runs the self-checks flag ---------------------------------------------------------


def _attempts_of(monkeypatch, reliable: list[bool]) -> tuple[list[bool], str, object]:
    """Make ``run`` (what a sweep's worker runs) return one real simulator run, marked
    reliable or flagged as ``reliable`` lists them (one attempt each), and record the
    attempts made."""
    import ccfair
    import pyarrow as pa
    from ccfair.execution import workers
    from ccfair.results.run import RunResult

    sc = ccfair.dumbbell(1, "reno", duration="1s", sample_interval="100ms")
    real_run = workers.run
    rid = real_run(sc).run_id
    made: list[bool] = []

    def fake_run(scenario, **kw):
        ok = reliable[len(made)]
        made.append(ok)
        t = real_run(scenario)
        tables = t.arrow_tables()
        runs = tables["runs"]
        for name, value in (("reliable", ok), ("selfcheck_flags", "" if ok else "forwarder stall")):
            i = runs.schema.get_field_index(name)
            runs = runs.set_column(
                i, runs.schema.field(i), pa.array([value], runs.schema.field(i).type)
            )
        return RunResult.from_tables(t.run_id, {**tables, "runs": runs})

    monkeypatch.setattr(workers, "run", fake_run)
    return made, rid, sc.resolve()


@pytest.mark.parametrize(
    ("retries", "attempts", "kept_reliable"),
    [(2, 3, True), (1, 2, False), (0, 1, False)],
)
def test_a_flagged_kernel_run_is_run_again_and_only_the_kept_attempt_is_written(
    monkeypatch, tmp_path, retries, attempts, kept_reliable
):
    from ccfair.execution.workers import run_and_save

    made, rid, spec = _attempts_of(monkeypatch, [False, False, True])
    reply = run_and_save(rid, spec, "kernel", str(tmp_path), None, retries)
    assert len(made) == attempts == reply["attempts"]
    assert reply["reliable"] is kept_reliable
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == 1 and bool(runs["reliable"].iloc[0]) is kept_reliable


def test_the_simulator_is_never_run_again(monkeypatch, tmp_path):
    from ccfair.execution.workers import run_and_save

    made, rid, spec = _attempts_of(monkeypatch, [False, True])  # "flagged" but not checked
    reply = run_and_save(rid, spec, "sim", str(tmp_path), None, 2)
    assert len(made) == 1 and reply["attempts"] == 1


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_sweep_retries_must_be_a_count(tmp_path, bad):
    with pytest.raises(SpecError, match="is not a number of reruns") as info:
        run_sweep(small_sweep(), tmp_path / "r", progress=False, retries=bad)
    assert info.value.path == "retries"
    assert not (tmp_path / "r").exists()


def test_the_summary_counts_reruns_and_runs_kept_flagged():
    from ccfair.execution.outcome import SweepOutcome

    out = SweepOutcome(Path("r"), total=3, already=0, executed=["a", "b", "c"])
    out.reruns, out.flagged = 4, ["c"]
    assert "4 flagged attempt(s) run again, 1 kept flagged" in out.summary()


def test_an_interrupt_as_the_last_run_ends_leaves_a_complete_sweep():
    # It printed "12 of 12 runs finished ...; incomplete" and exit status 130.
    from ccfair.cli.sweep import _sweep_exit
    from ccfair.execution.outcome import SweepOutcome

    done = SweepOutcome(Path("r"), total=2, already=1, executed=["a"], interrupted=True)
    assert done.complete and "; complete;" in done.summary()
    assert _sweep_exit(done) == 0
    cut = SweepOutcome(Path("r"), total=3, already=1, executed=["a"], interrupted=True)
    assert not cut.complete and "; incomplete;" in cut.summary()
    assert _sweep_exit(cut) == 130


def test_a_killed_writer_not_yet_reaped_counts_as_gone():
    # A resume right after a kill kept the dead worker's temporaries: os.kill(pid, 0)
    # succeeds on a zombie.
    from ccfair.store.files import _alive

    child = subprocess.Popen(["sleep", "100"])
    assert _alive(child.pid)
    child.kill()
    deadline = time.monotonic() + 10
    while _alive(child.pid):  # a zombie until waited for
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert Path(f"/proc/{child.pid}").exists()  # still there, not reaped
    child.wait()
