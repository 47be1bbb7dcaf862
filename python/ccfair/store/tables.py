"""A run's tables as Arrow tables, built straight from the engine's columns.

The engine hands over each table as columns of raw little-endian bytes (numbers) and
categorical codes (names, states); :func:`build_tables` turns them, plus the names, spec
and provenance Python adds, into one ``pyarrow.Table`` per results table with the schema's
exact columns, order and types (:func:`ccfair.store.schema.arrow_schema`) and no pandas
metadata: what is written as Parquet, without creating a pandas DataFrame on the way.
:func:`ccfair.results.run.build_result` makes them the :class:`~ccfair.results.run.RunResult`
of a run, whose frames are converted from them when first read.

Values are those the pandas route has always written: a float NaN is stored as a null
(pandas' missing value, which ``pandas.read_parquet`` reads back as NaN), a u64 column is
stored as int64 (the same bits), and names are decoded from Arrow dictionaries. No array
is made with ``pa.array``, which would import pandas (see "Columns" below): ``ccfair.run``
and a sweep's worker import neither pandas nor ``pyarrow.compute``.

Example:
    >>> import json
    >>> from ccfair import _core
    >>> from ccfair.spec.shapes import dumbbell
    >>> resolved = dumbbell(2, "reno", duration="2s").resolve()
    >>> raw = _core.run(json.dumps(resolved.engine_spec))
    >>> t = build_tables(resolved, raw, run_id="0" * 16, backend="sim", started_at="",
    ...                  wall_time_s=0.1)
    >>> t["flows"].column("flow_name").to_pylist()
    ['flow1', 'flow2']
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ccfair import _core
from ccfair.backends.base import provenance
from ccfair.spec.resolved import Resolved
from ccfair.store import schema

if TYPE_CHECKING:  # a frame is converted where one is given; pandas is not imported here
    import pandas as pd


# --------------------------------------------------------------------------------------------
# Columns


def _ints(data: bytes) -> np.ndarray:
    # The engine's u64 as int64: the same bits (what ``astype(np.int64)`` gives), no copy.
    return np.frombuffer(data, dtype="<u8").view(np.int64)


# Every array here is assembled from its buffers (``pa.Array.from_buffers``) rather than with
# ``pa.array``/``pa.scalar``: those ask pyarrow's pandas shim whether the input is a pandas
# object, which imports pandas (0.2-0.3 s) on the first call of a process. Names are decoded
# with Arrow's ``take`` called through ``pyarrow._compute``, the compiled module behind
# ``pyarrow.compute``: importing the latter wraps every compute function in Python (0.05 s);
# the former takes 5 ms.
try:
    from pyarrow._compute import call_function as _call_function
except ImportError:  # a pyarrow that moved it: the public module has the same function
    from pyarrow.compute import call_function as _call_function


def _validity(valid: np.ndarray) -> Any:
    """Arrow's validity bitmap of a boolean mask (True: a value), None when all are valid."""
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _numbers(arrow_type: Any, values: np.ndarray, valid: np.ndarray | None = None) -> Any:
    # ``values`` is a contiguous native-endian numpy array of the type's width; Arrow keeps
    # a reference to its memory (no copy), as ``pa.array`` of a numpy array does.
    values = np.ascontiguousarray(values)
    bitmap = None if valid is None else _validity(valid)
    nulls = 0 if valid is None else int(len(values) - np.count_nonzero(valid))
    return pa.Array.from_buffers(
        arrow_type, len(values), [bitmap, pa.py_buffer(values)], null_count=nulls
    )


def floats(values: Any) -> Any:
    """Floats as Arrow, NaN stored as null: how pandas has always handed a NaN to Arrow,
    so the files and what ``read_parquet`` returns are unchanged.

    The nulls are numpy's NaN mask rather than ``from_pandas=True``, whose scan costs about
    4 ns per value (60,000 values without a NaN: 0.25 ms; the mask 0.02 ms, 0.08 with NaN).

    Example:
        >>> floats([1.0, float("nan")]).to_pylist()
        [1.0, None]
    """
    arr = np.asarray(values, dtype=np.float64)
    return _numbers(pa.float64(), arr, ~np.isnan(arr))


def ints(values: Any) -> Any:
    """Integers as an Arrow int64 array.

    Example:
        >>> ints([3, -1]).to_pylist()
        [3, -1]
    """
    return _numbers(pa.int64(), np.asarray(values, dtype=np.int64))


def labels(codes: np.ndarray, categories: Sequence[str]) -> Any:
    """The string column whose row i is ``categories[codes[i]]``, decoded from an Arrow
    dictionary (several times faster than indexing an array of Python strings).

    Example:
        >>> labels(np.array([1, 0, 1]), ["ab", "ba"]).to_pylist()
        ['ba', 'ab', 'ba']
    """
    indices = _numbers(pa.int32(), np.asarray(codes, dtype=np.int32))
    return _call_function("take", [strings(categories), indices])


def strings(values: Sequence[str | None]) -> Any:
    """Text as an Arrow string array, None as null (as ``pa.array(values, pa.string())``).

    Example:
        >>> strings(["a", None, "bc"]).to_pylist()
        ['a', None, 'bc']
    """
    values = list(values)
    words = [b"" if v is None else v.encode() for v in values]
    sizes = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:  # beyond a string array's 32-bit offsets
        raise OverflowError(f"{offsets[-1]} bytes of text do not fit one Arrow string array")
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    bitmap = _validity(valid)
    buffers = [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(words))]
    nulls = 0 if valid is None else int(len(values) - np.count_nonzero(valid))
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)


def engine_column(kind: str, data: Any) -> Any:
    """One column of the engine's tables (``_core.run``: ``u64``, ``f64``, ``cat``, ``str``)
    as an Arrow array."""
    if kind == "u64":
        return _numbers(pa.int64(), _ints(data))
    if kind == "f64":
        return floats(np.frombuffer(data, dtype="<f8"))
    if kind == "cat":
        codes, categories = data
        return labels(np.frombuffer(codes, dtype="<u4"), categories)
    return strings(list(data))


def _repeat(text: str, n: int) -> Any:
    # One string on every row (run ids): copied as bytes, not through n Python objects.
    word = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(word)
    if offsets[-1] > np.iinfo(np.int32).max:
        raise OverflowError(f"{offsets[-1]} bytes of text do not fit one Arrow string array")
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(word * n)]
    return pa.Array.from_buffers(pa.string(), n, buffers, null_count=0)


def _table(table: str, columns: dict[str, Any]) -> Any:
    """``columns`` as the Arrow table of ``table``: the schema's columns in its order, each
    cast to its type where it differs (as :func:`conform` casts a frame).

    A missing or unexpected column is a bug in a backend, not a user error: it raises
    ``RuntimeError`` naming the columns.
    """
    target = schema.arrow_schema(table)
    expected = set(target.names)  # (each .names builds a new list)
    missing = [n for n in target.names if n not in columns]
    extra = [n for n in columns if n not in expected]
    if missing or extra:
        raise RuntimeError(
            f"{table}: columns differ from the schema: missing {missing}, extra {extra}"
        )
    arrays = []
    for field in target:
        arr = columns[field.name]
        if arr.type != field.type:
            # safe=False: as pandas' astype casts (an int64 beyond 2**53 rounds to float).
            arr = arr.cast(field.type, safe=False)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=target)


def _engine_columns(raw_table: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    return {name: engine_column(kind, data) for name, (kind, data) in raw_table.items()}


# --------------------------------------------------------------------------------------------
# Tables


def build_tables(
    resolved: Resolved,
    raw: Mapping[str, Any],
    *,
    run_id: str,
    backend: str,
    started_at: str,
    wall_time_s: float,
    selfcheck: dict[str, Any] | None = None,
    flags: list[str] | None = None,
    identity: str | None = None,
    facts: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The engine's column dict as the run's Arrow tables (the arguments are those of
    :func:`ccfair.results.run.build_result`, which converts these tables to pandas).

    Example:
        >>> import json
        >>> from ccfair import _core
        >>> from ccfair.spec.shapes import dumbbell
        >>> resolved = dumbbell(1, "reno", duration="1s").resolve()
        >>> raw = _core.run(json.dumps(resolved.engine_spec))
        >>> t = build_tables(resolved, raw, run_id="0" * 16, backend="sim", started_at="",
        ...                  wall_time_s=0.1)
        >>> t["links"].schema == schema.arrow_schema("links"), t["runs"]["reliable"][0].as_py()
        (True, True)
    """
    facts = provenance() if facts is None else facts
    names = [f.name for f in resolved.flows]
    lnames = [link.name for link in resolved.links]
    runs = runs_row(
        resolved,
        raw,
        run_id=run_id,
        backend=backend,
        identity=identity,
        facts=facts,
        started_at=started_at,
        wall_time_s=wall_time_s,
        selfcheck=selfcheck,
        flags=flags,
    )
    tables = {
        "flows": _flows(resolved, raw["flows"], run_id, names),
        "timeseries": _named(raw["timeseries"], "timeseries", run_id, "flow", names),
        "links": _named(raw["links"], "links", run_id, "link", lnames),
        "link_summary": _link_summary(resolved, raw["link_summary"], run_id, lnames),
        "runs": _runs(runs),
    }
    return tables


def _named(
    raw_table: dict[str, Any], table: str, run_id: str, key: str, names: Sequence[str]
) -> Any:
    """A table of samples: the engine's columns with the run id and each row's flow or
    link name (``key`` holds its index)."""
    cols = _engine_columns(raw_table)
    n = len(cols[key])
    cols["run_id"] = _repeat(run_id, n)
    cols[f"{key}_name"] = labels(_ints(raw_table[key][1]), names)
    return _table(table, cols)


def _flows(resolved: Resolved, raw_table: dict[str, Any], run_id: str, names: Sequence[str]) -> Any:
    """The engine's per-flow summary with each flow's names, path, algorithm and the
    resolved facts the metrics need (start, base RTT, BDP, share)."""
    cols = _engine_columns(raw_table)
    codes = _ints(raw_table["flow"][1])
    flow_info = resolved.flows
    cols["run_id"] = _repeat(run_id, len(codes))
    cols["flow_name"] = labels(codes, names)
    cols["cca"] = strings([f.cca for f in flow_info])
    cols["src"] = strings([f.src for f in flow_info])
    cols["dst"] = strings([f.dst for f in flow_info])
    cols["node_path"] = strings([">".join(f.node_path) for f in flow_info])
    cols["cca_params_json"] = strings(
        sorted_json_each([f["cca_params"] for f in resolved.engine_spec["flows"]])
    )
    # Effective start times (nominal start plus seeded start jitter), as the engine used them;
    # without jitter the nominal ones (`RunSpec::flow_starts_ns`), which spares serialising
    # the whole spec once more (0.3 s at 10,000 flows).
    spec_flows = resolved.engine_spec["flows"]
    if any(f["start_jitter_ns"] for f in spec_flows):
        starts = _core.flow_starts(resolved.engine_json)
    else:
        starts = [f["start_ns"] for f in spec_flows]
    cols["start_s"] = floats([t / 1e9 for t in starts])
    cols["base_rtt_ms"] = floats([f.base_rtt_ns / 1e6 for f in flow_info])
    cols["bdp_pkts"] = floats([f.bdp_pkts for f in flow_info])
    cols["share_frac"] = floats(shares(np.frombuffer(raw_table["goodput_mbps"][1], "<f8")))
    return _table("flows", cols)


def sorted_json_each(values: Sequence[Any]) -> list[str]:
    """Each value as JSON with sorted keys, each distinct value serialised once (the flows
    of a scenario mostly share their parameters). Values are told apart by ``repr``, which
    unlike ``==`` tells ``1``, ``1.0`` and ``True`` apart, as JSON does.

    Example:
        >>> sorted_json_each([{"b": 1, "a": 2}, {"b": 1, "a": 2}, {"b": True, "a": 2}])
        ['{"a": 2, "b": 1}', '{"a": 2, "b": 1}', '{"a": 2, "b": true}']
    """
    seen: dict[str, str] = {}
    out: list[str] = []
    for value in values:
        key = repr(value)
        text = seen.get(key)
        if text is None:
            text = seen[key] = json.dumps(value, sort_keys=True)
        out.append(text)
    return out


def shares(goodput: np.ndarray) -> np.ndarray:
    """Each flow's fraction of the total goodput, NaN everywhere if there is none. The total
    skips NaN, as pandas' ``Series.sum`` (which the tables were first computed with) does.

    Example:
        >>> shares(np.array([3.0, 1.0, np.nan])).tolist()
        [0.75, 0.25, nan]
    """
    total = np.nansum(goodput)
    if total > 0:
        return goodput / total
    return np.full(len(goodput), np.nan)


def _link_summary(
    resolved: Resolved, raw_table: dict[str, Any], run_id: str, lnames: Sequence[str]
) -> Any:
    """The links' summaries, labelled with the links' names and the buffer in BDPs of each
    link's reference flow (NaN where it has none)."""
    cols = _engine_columns(raw_table)
    codes = _ints(raw_table["link"][1])
    per_link = np.array(
        [np.nan if link.buffer_bdp is None else link.buffer_bdp for link in resolved.links],
        dtype=np.float64,
    )
    cols["run_id"] = _repeat(run_id, len(codes))
    cols["link_name"] = labels(codes, lnames)
    cols["buffer_bdp"] = floats(per_link[codes])
    return _table("link_summary", cols)


def _one_value(dtype: str, value: Any) -> Any:
    """A runs column of one row: the value in the schema's type; None is null (a float
    None: NaN, stored as null)."""
    if dtype == "float64":
        return floats([value])
    if dtype == "string":
        return strings([value])
    valid = np.array([value is not None])
    if dtype == "int64":
        data = np.array([0 if value is None else operator.index(value)], dtype=np.int64)
        return _numbers(pa.int64(), data, valid)
    bit = np.packbits(np.array([bool(value)]), bitorder="little")  # bool: a bitmap too
    bitmap = _validity(valid)
    return pa.Array.from_buffers(pa.bool_(), 1, [bitmap, pa.py_buffer(bit)], int(not valid[0]))


def _runs(row: dict[str, Any]) -> Any:
    dtypes = {c["name"]: c["dtype"] for c in schema.columns("runs")}
    # A key the schema lacks is kept (as None) for _table to name it.
    cols = {k: _one_value(dtypes[k], v) if k in dtypes else None for k, v in row.items()}
    return _table("runs", cols)


def runs_row(
    resolved: Resolved,
    raw: Mapping[str, Any],
    *,
    run_id: str,
    backend: str,
    identity: str | None,
    facts: dict[str, str],
    started_at: str,
    wall_time_s: float,
    selfcheck: dict[str, Any] | None,
    flags: list[str] | None,
) -> dict[str, Any]:
    """The run's one row: what ran (names, the normalised spec, its point), where and when
    (provenance), and the backend's self-checks."""
    spec = resolved.engine_spec
    normalized = resolved.normalized
    return {
        "run_id": run_id,
        "schema_version": schema.VERSION,
        "scenario": normalized.get("name", "scenario"),
        "backend": backend,
        "seed": spec["seed"],
        "duration_s": spec["duration_ns"] / 1e9,
        "measure_start_s": spec["measure_start_ns"] / 1e9,
        "measure_end_s": spec["measure_end_ns"] / 1e9,
        "n_flows": len(spec["flows"]),
        "n_links": len(spec["links"]),
        "spec_json": json.dumps(normalized, sort_keys=True),
        "point_key": resolved.identity_json.point_key(identity or backend),
        **facts,
        "started_at": started_at,
        "wall_time_s": wall_time_s,
        "engine_events": raw["engine"]["events"],
        "engine_packet_hops": raw["engine"]["packet_hops"],
        **selfcheck_columns(selfcheck, flags or []),
    }


def selfcheck_columns(selfcheck: dict[str, Any] | None, flags: list[str]) -> dict[str, Any]:
    """The run-level self-check columns (docs/results.md, runs): ``reliable`` and
    ``selfcheck_flags`` on every backend; ``emu_*`` measured by the kernel backend's
    emulator, NaN otherwise."""
    nan = float("nan")

    def num(v: Any) -> float:
        return float(v) if isinstance(v, int | float) else nan

    out: dict[str, Any] = {"reliable": not flags, "selfcheck_flags": "; ".join(flags)}
    fwd = (selfcheck or {}).get("forwarder", {})
    late = fwd.get("lateness", {})
    rates = [
        r["achieved_bps"] / r["rate_bps"]
        for r in fwd.get("rates", [])
        if r.get("achieved_bps") is not None and r.get("busy_s", 0) >= 1.0
    ]
    out.update(
        {
            "emu_lateness_p50_us": num(late.get("p50_us")),
            "emu_lateness_p99_us": num(late.get("p99_us")),
            "emu_lateness_p999_us": num(late.get("p999_us")),
            "emu_lateness_max_us": num(late.get("max_us")),
            "emu_cpu_frac": num(fwd.get("cpu_frac")),
            "emu_process_cpu_frac": num((selfcheck or {}).get("process_cpu_frac")),
            "emu_rate_ratio_min_frac": min(rates) if rates else nan,
            "emu_missed_samples_count": num((selfcheck or {}).get("missed_samples")),
            "emu_sampling_p99_us": num(
                (selfcheck or {}).get("sampling_lateness", {}).get("p99_us")
            ),
            "emu_host_tx_drops_count": num((selfcheck or {}).get("host_tx_drops")),
            "kernel_hz": num((selfcheck or {}).get("kernel_hz")),
            "selfcheck_json": json.dumps(selfcheck, sort_keys=True) if selfcheck else "",
        }
    )
    return out


# --------------------------------------------------------------------------------------------
# pandas frames as the schema's Arrow tables (a result's tables changed after the run)


_DTYPES = {"int64": "int64", "float64": "float64", "string": "str", "bool": bool}


#: The name pandas gives each of those types once cast.
_DTYPE_NAMES = {"int64": "int64", "float64": "float64", "string": "str", "bool": "bool"}


def conform(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """``frame`` with exactly the schema's columns of ``table``, in its order and types.

    A missing or unexpected column is a bug in a backend, not a user error: it raises
    ``RuntimeError`` naming the columns.
    """
    cols = schema.columns(table)
    expected = [c["name"] for c in cols]
    missing = [c for c in expected if c not in frame.columns]
    extra = [c for c in frame.columns if c not in expected]
    if missing or extra:
        raise RuntimeError(
            f"{table}: columns differ from the schema: missing {missing}, extra {extra}"
        )
    out = frame if list(frame.columns) == expected else frame[expected]
    # Cast only what differs: a column already of its type is taken as it is (a cast would
    # copy it for nothing, at about a millisecond per column; the result is the same). A
    # string column the engine's tables bring as Python objects is cast, which is how a
    # missing value becomes the text the schema has always written for it.
    dtypes = out.dtypes
    casts: dict[str, Any] = {
        c["name"]: _DTYPES[c["dtype"]]
        for c in cols
        if str(dtypes[c["name"]]) != _DTYPE_NAMES[c["dtype"]]
    }
    return out.astype(casts) if casts else out


def arrow_table(frame: pd.DataFrame, table: str) -> Any:
    """``frame`` as an Arrow table with the schema's exact columns and types of ``table`` and
    no pandas metadata: a plain read of the table's folder then returns every column of every
    run (docs/results.md, "One schema, plain reads").

    Column by column rather than ``pa.Table.from_pandas``: the same table (a NaN stored as
    null) in about half the time, above all because a float column's nulls come from numpy's
    NaN mask (:func:`floats`) instead of pandas' conversion.

    Example:
        >>> import pandas as pd
        >>> arrow_table(pd.DataFrame({"x": [1.0]}), "flows")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        RuntimeError: flows: columns differ from the schema: missing ['run_id', ...], extra ['x']
    """
    frame = conform(frame, table)
    target = schema.arrow_schema(table)
    arrays = [
        floats(frame[f.name].to_numpy())
        if pa.types.is_float64(f.type)
        else pa.array(frame[f.name], type=f.type, from_pandas=True)
        for f in target
    ]
    return pa.Table.from_arrays(arrays, schema=target)
