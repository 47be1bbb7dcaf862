"""``ccfair.run`` returns its tables as Arrow tables and converts each to pandas when first
read (ccfair.results.run.RunResult): the run imports no pandas, and what users get (frames,
files, ``save`` after changes) is what it always was."""

from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import ccfair
import pandas as pd
import pyarrow.parquet as pq
import pytest
from ccfair.results.derived import DERIVED_COLUMNS, stored
from ccfair.results.run import RunResult
from ccfair.store import schema
from ccfair.store.schema import MARKER_TABLE, TABLES

ALL_TABLES = (MARKER_TABLE, *TABLES)
HEAVY = ("pandas", "pyarrow.compute", "matplotlib", "scipy")

# A fresh interpreter: what ccfair.run imports, and when pandas comes in.
CHILD = """
import json, sys
import ccfair
heavy = {heavy!r}
loaded = lambda: sorted(m for m in heavy if m in sys.modules)
sc = ccfair.dumbbell(2, ["bbr", "cubic"], buffer_bdp=0.5, duration="2s")
out = {{"before": loaded()}}
r = ccfair.run(sc, trace=["flow1"])
out["after_run"] = loaded()
out["reliable"], out["name"] = r.reliable, r.spec["name"]
r.save(sys.argv[1])
out["after_save"] = loaded()
out["columns"] = list(r.flows.columns)
out["after_flows"] = loaded()
out["trace_rows"] = len(r.trace)
print(json.dumps(out))
"""


def test_a_fresh_process_runs_and_saves_without_importing_pandas(tmp_path):
    p = subprocess.run(
        [sys.executable, "-c", CHILD.format(heavy=HEAVY), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["before"] == []  # else the checks below would prove nothing
    assert out["after_run"] == []
    assert out["after_save"] == []  # reliable, spec and save() read the Arrow tables
    assert out["reliable"] is True and out["name"] == "dumbbell"
    # The first read converts the table (and imports pandas): the columns of the schema,
    # then those the result derives from them.
    assert "pandas" in out["after_flows"]
    assert out["columns"] == [c["name"] for c in schema.columns("flows")] + list(
        DERIVED_COLUMNS["flows"]
    )
    assert out["trace_rows"] > 0
    assert len(pq.read_table(tmp_path / "flows").column("flow_name")) == 2


def _run() -> RunResult:
    return ccfair.run(ccfair.parking_lot(2, "bbr", "cubic", delay="5ms", duration="2s"))


def test_frames_are_what_reading_the_saved_files_gives(tmp_path):
    r = _run()
    r.save(tmp_path)  # before any table was read: written from the Arrow tables
    assert not any(t in vars(r) for t in ALL_TABLES)
    for table in ALL_TABLES:
        saved = pd.read_parquet(tmp_path / table / f"{r.run_id}.parquet")
        frame = getattr(r, table)
        pd.testing.assert_frame_equal(stored(table, frame), saved, check_exact=True)
        added = list(DERIVED_COLUMNS.get(table, ()))
        assert list(frame.columns) == [c["name"] for c in schema.columns(table)] + added
        assert isinstance(frame.index, pd.RangeIndex)
    assert r.flows is r.flows  # converted once, then the same frame


def test_frames_are_those_run_returned_before_the_tables_were_lazy():
    # The construction before: every table converted with Arrow's to_pandas() in run().
    sc = ccfair.dumbbell(2, ["bbr", "cubic"], buffer_bdp=0.5, duration="2s")
    r, eager = ccfair.run(sc), ccfair.run(sc).arrow_tables()
    for table in ALL_TABLES:
        want = eager[table].to_pandas()
        if table == MARKER_TABLE:  # when and how long the run took differ
            want = want.drop(columns=["started_at", "wall_time_s"])
            got = r.runs.drop(columns=["started_at", "wall_time_s"])
        else:
            got = stored(table, getattr(r, table))
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert got.dtypes.to_dict() == want.dtypes.to_dict()


def test_saving_untouched_and_read_tables_writes_the_same_bytes(tmp_path):
    r = _run()
    r.save(tmp_path / "arrow")
    for table in ALL_TABLES:
        getattr(r, table)
    r.save(tmp_path / "frames")  # every table read: written from the frames, as always
    for table in ALL_TABLES:
        name = f"{table}/{r.run_id}.parquet"
        assert (tmp_path / "arrow" / name).read_bytes() == (tmp_path / "frames" / name).read_bytes()


def test_save_writes_a_changed_frame_and_the_untouched_tables_as_built(tmp_path):
    r = _run()
    r.save(tmp_path / "before")
    r.flows.loc[0, "goodput_mbps"] = 123.0  # a read table is the frame from now on
    r.save(tmp_path / "after")
    flows = pd.read_parquet(tmp_path / "after" / "flows")
    assert flows.loc[0, "goodput_mbps"] == 123.0
    for table in ("timeseries", "links", "link_summary", "runs"):
        assert table not in vars(r)  # never read: still the Arrow table
        name = f"{table}/{r.run_id}.parquet"
        assert (tmp_path / "before" / name).read_bytes() == (tmp_path / "after" / name).read_bytes()


def test_an_assigned_frame_replaces_the_table(tmp_path):
    r = _run()
    r.links = r.links.iloc[:0]
    assert "links" not in vars(r)["_sources"]
    r.save(tmp_path)
    assert len(pd.read_parquet(tmp_path / "links")) == 0


def test_reliable_and_spec_follow_a_changed_runs_frame():
    r = _run()
    assert r.reliable is True and r.spec["name"] == "parking-lot"
    assert "runs" not in vars(r)  # read from the Arrow table, no frame made
    r.runs.loc[0, "reliable"] = False
    r.runs.loc[0, "spec_json"] = json.dumps({"name": "changed"})
    assert r.reliable is False and r.spec == {"name": "changed"}


def test_results_made_from_frames_still_work(tmp_path):
    # ccfair.load, and dataclasses.replace (ccfair.validate keeps slim copies of runs),
    # construct RunResult from DataFrames.
    r = _run()
    r.save(tmp_path)
    back = ccfair.load(tmp_path)
    assert "_sources" not in vars(back)
    pd.testing.assert_frame_equal(back.flows, r.flows)
    slim = dataclasses.replace(r, links=r.links.iloc[:0], trace=None)
    assert len(slim.links) == 0 and len(slim.timeseries) == len(r.timeseries)
    assert "_sources" not in vars(slim)
    slim.save(tmp_path / "slim")
    assert len(pd.read_parquet(tmp_path / "slim" / "links")) == 0
    assert "Jain" in repr(back) and back.format_summary() == r.format_summary()


def test_a_result_pickles_before_its_tables_are_read():
    r = _run()
    copy = pickle.loads(pickle.dumps(r))  # a result sent between processes
    assert "flows" not in vars(copy)
    pd.testing.assert_frame_equal(copy.flows, r.flows)
    assert copy.trace is None


def test_the_class_keeps_its_dataclass_fields():
    fields = [(f.name, f.default) for f in dataclasses.fields(RunResult)]
    names = ["run_id", *ALL_TABLES, "trace"]
    assert [n for n, _ in fields] == names
    assert [d for _, d in fields][-1] is None
    assert all(d is dataclasses.MISSING for _, d in fields[:-1])
    with pytest.raises(AttributeError):
        RunResult.flows  # noqa: B018 - a required field has no class default, as before
    assert RunResult.trace is None
    with pytest.raises(TypeError, match="missing"):
        RunResult(run_id="0" * 16)  # type: ignore[call-arg]


def test_a_deleted_table_is_gone():
    r = _run()
    del r.flows
    with pytest.raises(AttributeError, match="flows"):
        r.flows  # noqa: B018


def test_from_tables_needs_every_table():
    ran = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
    tables = ran.arrow_tables()
    r = RunResult.from_tables(ran.run_id, tables)
    assert r.run_id == ran.run_id and r.trace is None
    assert r.flows["flow_name"].tolist() == ["flow1"]
    del tables["links"]
    with pytest.raises(ValueError, match="no links table"):
        RunResult.from_tables(ran.run_id, tables)


def test_a_trace_is_built_when_read():
    r = ccfair.run(ccfair.dumbbell(2, "reno", duration="1s"), trace=["flow2"])
    assert "trace" not in vars(r)
    t = r.trace
    assert list(t.columns[:6]) == ["run_id", "t_s", "t_ns", "flow_name", "flow", "link_name"]
    assert set(t["flow_name"]) == {"flow2"} and str(t["flow_name"].dtype) == "str"
    assert "trace" not in vars(r)["_sources"]


def test_the_cli_prints_the_flows_table_pandas_writes(tmp_path):
    # `ccfair run --json` prints the flows table as pandas writes it, from a lazy result.
    p = subprocess.run(
        [sys.executable, "-m", "ccfair.cli", "run", "--duration", "1s", "--json", "--no-save"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    data = ccfair.default_scenario().to_dict()
    data["duration"] = "1s"
    data.pop("measure", None)
    r = ccfair.run(ccfair.Scenario.from_dict(data))
    # stdout is the JSON alone ("running ..." went to stderr), every value in full; JSON has
    # no NaN: a missing number is null.
    printed = json.loads(p.stdout)
    assert [list(row) for row in printed] == [list(r.flows.columns)] * len(r.flows)
    for row, (_, want) in zip(printed, r.flows.iterrows(), strict=True):
        for column, value in row.items():
            if value is None:
                assert pd.isna(want[column]), column
            else:
                assert value == want[column], column


def test_a_none_trace_can_be_deleted_like_any_attribute():
    r = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
    del r.trace
    with pytest.raises(AttributeError):
        del r.trace


def test_threads_reading_one_table_get_one_frame():
    from concurrent.futures import ThreadPoolExecutor

    r = _run()
    with ThreadPoolExecutor(8) as pool:
        frames = list(pool.map(lambda _: r.timeseries, range(32)))
    assert all(f is frames[0] for f in frames)
