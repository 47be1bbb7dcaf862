"""The sweep path writes a run's tables from the engine's columns straight to Arrow and
Parquet (ccfair.store.tables); its files must be those the pandas route wrote: the same Arrow
schema (field order, types, nullability, no pandas metadata), the same values (NaN stored
as null, as pandas stored it), the same row order, the same bytes.

The reference is the pandas route as it was before the Arrow path (commit 1ef47a8), kept
here verbatim so that the comparison does not depend on the code under test."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ccfair
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ccfair import _core, backends
from ccfair.execution.runs import with_trace
from ccfair.results.derived import stored
from ccfair.results.run import build_result
from ccfair.store import schema
from ccfair.store.directory import write_arrow_tables
from ccfair.store.schema import WRITE_ORDER
from ccfair.store.tables import build_tables, runs_row, shares

# --------------------------------------------------------------------------------------------
# The pandas route before the Arrow path (python/ccfair/results.py at 1ef47a8)


def _column(kind: str, data: Any) -> Any:
    if kind == "u64":
        return np.frombuffer(data, dtype="<u8").astype(np.int64)
    if kind == "f64":
        return np.frombuffer(data, dtype="<f8").copy()
    if kind == "cat":
        codes, categories = data
        return _labels(np.frombuffer(codes, dtype="<u4"), categories)
    return np.asarray(list(data), dtype=object)


def _labels(codes: np.ndarray, categories: Sequence[str]) -> Any:
    words = pa.DictionaryArray.from_arrays(
        pa.array(np.asarray(codes, dtype=np.int32)), pa.array(list(categories), pa.string())
    )
    return pd.array(words.dictionary_decode(), dtype="str")


def _frame(raw: dict[str, tuple[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({name: _column(kind, data) for name, (kind, data) in raw.items()})


_DTYPES = {"int64": "int64", "float64": "float64", "string": "str", "bool": bool}


def _conform(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    cols = schema.columns(table)
    out = frame[[c["name"] for c in cols]]
    return out.astype({c["name"]: _DTYPES[c["dtype"]] for c in cols})


def _legacy_frames(resolved: Any, raw: dict[str, Any], **kw: Any) -> dict[str, pd.DataFrame]:
    run_id = kw["run_id"]
    names = [f.name for f in resolved.flows]
    lnames = [link.name for link in resolved.links]
    flow_info = resolved.flows
    flows = _frame(raw["flows"])
    flows.insert(0, "run_id", run_id)
    flows["flow_name"] = _labels(flows["flow"].to_numpy(), names)
    flows["cca"] = [f.cca for f in flow_info]
    flows["src"] = [f.src for f in flow_info]
    flows["dst"] = [f.dst for f in flow_info]
    flows["node_path"] = [">".join(f.node_path) for f in flow_info]
    flows["cca_params_json"] = [
        json.dumps(f["cca_params"], sort_keys=True) for f in resolved.engine_spec["flows"]
    ]
    flows["start_s"] = [t / 1e9 for t in _core.flow_starts(resolved.engine_json)]
    flows["base_rtt_ms"] = [f.base_rtt_ns / 1e6 for f in flow_info]
    flows["bdp_pkts"] = [f.bdp_pkts for f in flow_info]
    total = flows["goodput_mbps"].sum()
    flows["share_frac"] = flows["goodput_mbps"] / total if total > 0 else np.nan
    ts = _frame(raw["timeseries"])
    ts.insert(0, "run_id", run_id)
    ts.insert(1, "flow_name", _labels(ts["flow"].to_numpy(), names))
    links = _frame(raw["links"])
    links.insert(0, "run_id", run_id)
    links.insert(1, "link_name", _labels(links["link"].to_numpy(), lnames))
    ls = _frame(raw["link_summary"])
    ls.insert(0, "run_id", run_id)
    ls.insert(1, "link_name", _labels(ls["link"].to_numpy(), lnames))
    info = resolved.links
    ls["buffer_bdp"] = [
        np.nan if info[i].buffer_bdp is None else info[i].buffer_bdp for i in ls["link"]
    ]
    # The runs row's contents did not change (its builder moved to ccfair.store.tables as it was).
    row = runs_row(resolved, raw, **({"identity": None} | kw))
    frames = {"flows": flows, "timeseries": ts, "links": links, "link_summary": ls}
    frames["runs"] = pd.DataFrame([row])
    return {t: _conform(f, t) for t, f in frames.items()}


def _legacy_write(frames: dict[str, pd.DataFrame], root: Path, run_id: str) -> None:
    for table, frame in frames.items():
        arrow = pa.Table.from_pandas(
            _conform(frame, table), schema=schema.arrow_schema(table), preserve_index=False
        ).replace_schema_metadata(None)
        (root / table).mkdir(parents=True)
        # With page checksums, as ccfair writes every table file.
        pq.write_table(arrow, root / table / f"{run_id}.parquet", write_page_checksum=True)


# --------------------------------------------------------------------------------------------
# The comparison

RUN_ID = "0123456789abcdef"
FACTS = {
    "ccfair_version": "v",
    "git_revision": "g",
    "host": "h",
    "machine_release": "k",
    "python": "p",
}


def _run_raw(sc: Any, trace: Sequence[str] = ()) -> tuple[Any, dict[str, Any]]:
    resolved = sc.resolve()
    return resolved, _core.run(json.dumps(with_trace(resolved, trace)))


def _assert_same_files(
    tmp_path: Path, resolved: Any, raw: dict[str, Any], **extra: Any
) -> dict[str, pa.Table]:
    """Write one run's raw columns the old pandas way, the store's Arrow way and a
    RunResult's way; every file must read back equal and be the same bytes."""
    kw = dict(run_id=RUN_ID, backend="sim", started_at="2026-01-01T00:00:00+00:00")
    kw |= dict(wall_time_s=0.123456789, facts=FACTS, selfcheck=None, flags=None) | extra
    _legacy_write(_legacy_frames(resolved, raw, **kw), tmp_path / "pandas", RUN_ID)
    arrow = build_tables(resolved, raw, **kw)
    write_arrow_tables(tmp_path / "arrow", RUN_ID, arrow)
    interactive = build_result(resolved, raw, **kw)
    interactive.write_tables(tmp_path / "interactive")
    sent = interactive.parquet_bytes()
    out = {}
    for table in WRITE_ORDER:
        ref = tmp_path / "pandas" / table / f"{RUN_ID}.parquet"
        expected = pq.read_table(ref)
        assert expected.schema.metadata is None  # no pandas metadata, as always
        for way in ("arrow", "interactive"):
            path = tmp_path / way / table / f"{RUN_ID}.parquet"
            got = pq.read_table(path)
            assert got.schema.equals(expected.schema, check_metadata=True), (way, table)
            assert got.equals(expected, check_metadata=True), (way, table)
            assert path.read_bytes() == ref.read_bytes(), (way, table)
        assert sent[table] == ref.read_bytes(), table
        # The frames ccfair.run returns are what reading the file gives.
        frame = stored(table, getattr(interactive, table))  # without the derived columns
        pd.testing.assert_frame_equal(frame, pd.read_parquet(ref), check_exact=True)
        out[table] = expected
    return out


def test_a_dumbbell_bbr_vs_cubic_is_written_the_same_both_ways(tmp_path):
    resolved, raw = _run_raw(ccfair.dumbbell(2, ["bbr", "cubic"], buffer_bdp=0.5, duration="5s"))
    t = _assert_same_files(tmp_path, resolved, raw)
    # The comparison covers NaN (stored as null): BBR's columns are empty on CUBIC's rows.
    assert t["timeseries"].column("bbr_btl_bw_mbps").null_count > 0
    assert t["timeseries"].num_rows >= 1000 and t["links"].num_rows >= 1000


def test_a_parking_lot_with_copa_is_written_the_same_both_ways(tmp_path):
    sc = ccfair.parking_lot(3, "copa", "reno", delay="5ms", buffer_bdp=1.0, duration="4s")
    resolved, raw = _run_raw(sc)
    t = _assert_same_files(tmp_path, resolved, raw)
    assert set(t["flows"].column("cca").to_pylist()) == {"copa", "reno"}
    assert len(set(t["links"].column("link_name").to_pylist())) > 3


def test_finite_flows_are_written_the_same_both_ways(tmp_path):
    sc = ccfair.dumbbell(
        3,
        ["reno", "cubic", "bbr"],
        sizes=["200kB", None, "2MB"],
        starts=["0s", "0.5s", "1s"],
        duration="4s",
    )
    resolved, raw = _run_raw(sc)
    t = _assert_same_files(tmp_path, resolved, raw)
    done = t["flows"].column("completion_time_s")
    assert 0 < done.null_count < 3  # finished flows have a time, the unlimited one none


def test_a_traced_run_is_written_the_same_both_ways(tmp_path):
    sc = ccfair.dumbbell(2, ["copa", "reno"], duration="2s")
    resolved, raw = _run_raw(sc, trace=["flow1"])
    assert "trace" in raw  # a trace changes nothing of the saved tables
    _assert_same_files(tmp_path, resolved, raw)


def test_selfcheck_values_and_flags_are_written_the_same_both_ways(tmp_path):
    # The runs columns a kernel run fills (here made up): numbers, NaN, text, reliable false.
    resolved, raw = _run_raw(ccfair.dumbbell(1, "reno", duration="1s"))
    selfcheck = {
        "forwarder": {
            "lateness": {"p50_us": 12, "p99_us": 40.5, "p999_us": None, "max_us": 90},
            "cpu_frac": 0.4,
            "rates": [{"achieved_bps": 9.9e6, "rate_bps": 1e7, "busy_s": 2.0}],
        },
        "process_cpu_frac": 0.25,
        "kernel_hz": 1000,
    }
    t = _assert_same_files(
        tmp_path,
        resolved,
        raw,
        backend="kernel",
        identity="kernel-bpf",
        selfcheck=selfcheck,
        flags=["forwarder lateness p99 40 us > 30 us"],
    )
    runs = t["runs"].to_pylist()[0]
    assert runs["reliable"] is False and runs["emu_lateness_p999_us"] is None
    assert runs["emu_rate_ratio_min_frac"] == pytest.approx(0.99)


@pytest.mark.kernel
@pytest.mark.parametrize("backend", ["kernel", "veth"])
def test_a_kernel_run_is_written_the_same_both_ways(tmp_path, kernel_backend, backend):
    # The kernel backend's columns come from its emulator (veth: and from tc's counters; no
    # propagation delay, which would need netem).
    sc = ccfair.dumbbell(2, ["reno", "cubic"], duration="2s")
    if backend == "veth":
        sc = ccfair.dumbbell(
            2,
            ["reno", "cubic"],
            bottleneck_rate="20Mbit/s",
            bottleneck_delay="0ms",
            access_delay="0ms",
            receiver_delay="0ms",
            buffer_pkts=30,
            duration="2s",
        )
    resolved = sc.resolve()
    b = backends.get(backend)
    b.preflight()
    out = b.run(resolved, RUN_ID, resolved.engine_spec, ccfair.Limits())
    t = _assert_same_files(
        tmp_path, resolved, out.raw, backend=backend, selfcheck=out.selfcheck, flags=out.flags
    )
    assert json.loads(t["runs"].column("selfcheck_json")[0].as_py())["kernel_hz"] > 0


def test_shares_skip_nan_like_pandas_and_are_nan_without_goodput():
    g = np.array([0.1, 0.2, np.nan, 0.3])
    total = pd.Series(g).sum()
    np.testing.assert_array_equal(shares(g), g / total)
    assert np.isnan(shares(np.zeros(2))).all()
    assert np.isnan(shares(np.array([np.nan]))).all()


def test_a_column_the_schema_lacks_is_a_backend_bug(tmp_path):
    resolved, raw = _run_raw(ccfair.dumbbell(1, "reno", duration="1s"))
    raw = dict(raw, links={**raw["links"], "surprise": ("u64", b"\0" * 8 * 1)})
    with pytest.raises(RuntimeError, match=r"links: columns differ .*extra \['surprise'\]"):
        build_tables(resolved, raw, run_id=RUN_ID, backend="sim", started_at="", wall_time_s=0)


def test_docstring_examples_run():
    import doctest

    import ccfair.store.tables

    result = doctest.testmod(ccfair.store.tables, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 5


def test_a_sweep_worker_writes_what_run_and_save_write_without_a_dataframe(tmp_path, monkeypatch):
    from ccfair.execution.workers import run_and_save, run_to_bytes

    sc = ccfair.parking_lot(2, "bbr", "cubic", delay="5ms", duration="2s")
    reference = ccfair.run(sc)
    reference.save(tmp_path / "interactive")

    def no_frames(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sweep path created a pandas DataFrame")

    # What the local worker and the Dask worker do, with pandas' DataFrame made unusable.
    monkeypatch.setattr(pd.DataFrame, "__init__", no_frames)
    reply = run_and_save(reference.run_id, sc.resolve(), "sim", str(tmp_path / "worker"))
    sent = run_to_bytes(reference.run_id, sc.resolve(), "sim")["tables"]
    monkeypatch.undo()
    assert reply["reliable"] is True
    # The runs row records when and how long each run took: the rest must be equal.
    when = ["started_at", "wall_time_s"]
    for table in WRITE_ORDER:
        name = f"{reference.run_id}.parquet"
        want = pq.read_table(tmp_path / "interactive" / table / name)
        got = pq.read_table(tmp_path / "worker" / table / name)
        from_bytes = pq.read_table(pa.BufferReader(sent[table]))
        if table == "runs":
            want, got, from_bytes = (t.drop_columns(when) for t in (want, got, from_bytes))
        assert got.equals(want, check_metadata=True), table
        assert from_bytes.equals(want, check_metadata=True), table


@pytest.mark.parametrize(
    ("kind", "data", "dtype"),
    [
        ("u64", np.array([0, 1, 2**63, 2**64 - 1], dtype="<u8").tobytes(), "int64"),
        ("f64", np.array([-0.0, np.nan, np.inf, 1e-310], dtype="<f8").tobytes(), "float64"),
        ("str", ["a", None, ""], "string"),
        ("cat", (np.array([1, 0, 1], dtype="<u4").tobytes(), ["x", "y"]), "string"),
    ],
)
def test_each_kind_of_engine_column_converts_as_pandas_did(kind, data, dtype):
    # Edge values: u64 beyond int64 (wraps, as astype did), -0.0, inf, subnormals, a missing
    # text; compared with the pandas route through Arrow, as the files hold them.
    from ccfair.store.tables import engine_column

    frame = _conform_one(pd.DataFrame({"c": _column(kind, data)}), dtype)
    want = pa.Table.from_pandas(frame, preserve_index=False).column("c").combine_chunks()
    want = want.cast({"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}[dtype])
    got = engine_column(kind, data)
    assert got.equals(want)
    if dtype == "float64":  # the bits of every non-null value, -0.0 included
        valid = ~np.asarray(want.is_null())
        a = np.asarray(got.fill_null(0))[valid].view(np.int64)
        b = np.asarray(want.fill_null(0))[valid].view(np.int64)
        np.testing.assert_array_equal(a, b)


def _conform_one(frame: pd.DataFrame, dtype: str) -> pd.DataFrame:
    return frame.astype({"c": _DTYPES[dtype]})


@pytest.mark.parametrize(
    "values",
    [[], ["a"], ["", "é", None, "flow10", "x" * 300], [None, None]],
)
def test_text_built_from_buffers_is_what_pa_array_builds(values):
    # ccfair.store.tables assembles string arrays from their buffers (pa.array imports pandas);
    # they must be the arrays pa.array makes, nulls and multi-byte characters included.
    from ccfair.store.tables import strings

    got = strings(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.string()))
    assert got.null_count == sum(v is None for v in values)


def test_labels_decode_codes_and_refuse_a_code_without_a_name():
    from ccfair.store.tables import labels

    names = ["bottleneck", "a", "é1"]
    codes = np.array([2, 0, 1, 0, 2], dtype="<u4")
    got = labels(codes, names)
    got.validate(full=True)
    assert got.to_pylist() == [names[c] for c in codes]
    assert labels(np.array([], dtype="<u4"), names).to_pylist() == []
    with pytest.raises(pa.ArrowIndexError):
        labels(np.array([3]), names)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("int64", 7),
        ("int64", -(2**63)),
        ("int64", None),
        ("float64", 0.5),
        ("float64", None),
        ("float64", float("nan")),
        ("string", "x"),
        ("string", None),
        ("bool", True),
        ("bool", False),
        ("bool", None),
    ],
)
def test_a_runs_value_is_what_pa_array_makes(dtype, value):
    from ccfair.store.tables import _one_value

    arrow_type = {"int64": pa.int64(), "float64": pa.float64()}.get(dtype)
    arrow_type = arrow_type or {"string": pa.string(), "bool": pa.bool_()}[dtype]
    got = _one_value(dtype, value)
    got.validate(full=True)
    want = pa.array([value], arrow_type, from_pandas=True)  # NaN as null, as pandas stored it
    assert got.equals(want), (got, want)


def test_a_runs_int_refuses_a_float():
    from ccfair.store.tables import _one_value

    with pytest.raises(TypeError):
        _one_value("int64", 1.5)
