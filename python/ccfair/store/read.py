"""Reading a results directory's tables: one table over many runs as one frame, one run's
table, each file checked against the table's columns; a missing or damaged file is one
:class:`~ccfair.errors.ResultsError` naming it (never a pyarrow traceback).

Reading a table of a directory is one call: ``pandas.read_parquet(RESULTS_DIR / "flows")``
or :func:`load_table` (this module's checks, over the finished runs only).

Example:
    >>> import pyarrow as pa
    >>> columns_problem(pa.schema([("run_id", pa.string())]), "flows")  # doctest: +ELLIPSIS
    "has other columns than the schema's (missing ['flow_name', 'cca', 'src'], extra [])"
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccfair.errors import ResultsError
from ccfair.store.directory import check_schema, finished_run_ids
from ccfair.store.schema import MARKER_TABLE, TABLES, VERSION, WRITE_ORDER, arrow_schema

if TYPE_CHECKING:  # pandas is imported where a frame is made, not with this module
    import pandas as pd

__all__ = ["columns_problem", "load_table", "read_run_table", "read_tables", "verify_run"]


def read_run_table(path: Path) -> pd.DataFrame:
    """Read one run's table file; a missing or damaged file raises :class:`ResultsError`
    naming it (never a pyarrow traceback)."""
    return _read_arrow(path).to_pandas()


def _read_arrow(path: Path, columns: list[str] | None = None) -> Any:
    try:
        import pyarrow.parquet as pq

        return pq.read_table(path, columns=columns)
    except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
        # A resume checks footers only (reading every page of every run would cost what
        # the runs did), so damage inside a file is recomputed once its marker is gone.
        marker = path.parent.parent / MARKER_TABLE / path.name
        raise ResultsError(
            f"{path}: cannot be read ({' '.join(str(exc).split())[:200]}); if it belongs to a "
            f"sweep, delete {marker} and rerun the sweep into this directory to recompute "
            "the run"
        ) from None


def load_table(
    results_dir: str | os.PathLike[str], table: str, run_ids: list[str] | None = None
) -> pd.DataFrame:
    """One table over all finished runs of a results directory (or the given ``run_ids``),
    keyed by ``run_id``.

    Example:
        >>> ccfair.load_table("results", "flows")["goodput_mbps"]  # doctest: +SKIP
    """
    if table not in (MARKER_TABLE, *TABLES):
        raise ResultsError(f"table: {table!r} is not one of {', '.join((MARKER_TABLE, *TABLES))}")
    root = Path(results_dir)
    ids = finished_run_ids(root) if run_ids is None else run_ids
    paths = [root / table / f"{rid}.parquet" for rid in ids]
    if not paths:
        raise ResultsError(f"{root}: no finished runs")
    check_schema(root)
    return read_tables(paths)


def read_tables(paths: list[Path], columns: list[str] | None = None) -> pd.DataFrame:
    """Several run files of one table as one frame. Each file must have the table's
    columns (:func:`columns_problem`): a missing one would be read as nulls, one of another
    type would fail the concatenation. (The schema version is not checked here.) With
    ``columns``, only those are read (a file lacking one is a :class:`ResultsError`).

    Opening a file costs more than reading it: they are read on a few threads (pyarrow
    releases the GIL) and converted to pandas once, not once per run."""
    import pyarrow as pa

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(paths)))) as pool:
        tables = list(pool.map(lambda p: _read_arrow(p, columns), paths))
    if columns is not None:
        return pa.concat_tables(tables, promote_options="default").to_pandas()
    for path, table in zip(paths, tables, strict=True):
        if path.parent.name == MARKER_TABLE and not _of_this_schema(table):
            continue  # another version's runs: check_versions says so, naming the version
        problem = columns_problem(table.schema, path.parent.name)
        if problem is not None:
            raise ResultsError(
                f"{path}: {problem}; if it belongs to a sweep, rerun the sweep into this "
                "directory to recompute the damaged run"
            )
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def _of_this_schema(runs: Any) -> bool:
    """Whether a runs table (Arrow) was written with this ccfair's results schema."""
    if "schema_version" not in runs.column_names:
        return False
    return set(runs.column("schema_version").to_pylist()) == {VERSION}


def columns_problem(found: Any, table: str) -> str | None:
    """How a file's Arrow schema departs from ``table``'s (names, order, types; a
    dictionary-encoded column counts as its values' type), or None; None also for a table
    the schema does not define.

    Example:
        >>> import pyarrow as pa
        >>> columns_problem(pa.schema([("run_id", pa.string())]), "flows")  # doctest: +ELLIPSIS
        "has other columns than the schema's (missing ['flow_name', 'cca', 'src'], extra [])"
    """
    import pyarrow as pa

    def plain(t: Any) -> Any:
        return t.value_type if pa.types.is_dictionary(t) else t

    if table not in (MARKER_TABLE, *TABLES):
        return None
    want = arrow_schema(table)
    if found.names != want.names:
        missing = [n for n in want.names if n not in found.names]
        extra = [n for n in found.names if n not in want.names]
        return f"has other columns than the schema's (missing {missing[:3]}, extra {extra[:3]})"
    for f, w in zip(found, want, strict=True):
        if plain(f.type) != plain(w.type):
            return f"has column {f.name} of type {f.type}, not {w.type}"
    return None


def verify_run(results_dir: str | os.PathLike[str], run_id: str) -> str | None:
    """Check a finished run's files; returns None if sound, else what is wrong (one line).

    Reads each table's Parquet footer (which a truncated or overwritten file lacks) and the
    ``runs`` row, which must name this run.

    Example:
        >>> verify_run("results/harada-dumbbell", "2bb67167608fdd8d")  # doctest: +SKIP
        'flows/2bb67167608fdd8d.parquet is missing'
    """
    import pyarrow.parquet as pq

    root = Path(results_dir)
    for table in WRITE_ORDER:
        path = root / table / f"{run_id}.parquet"
        if not path.exists():
            return f"{table}/{run_id}.parquet is missing"
        try:
            meta = pq.read_metadata(path)
        except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
            return f"{table}/{run_id}.parquet is not readable Parquet ({exc})"
        columns = columns_problem(meta.schema.to_arrow_schema(), table)
        if columns is not None:
            return f"{table}/{run_id}.parquet {columns}"
        if table == MARKER_TABLE:
            try:
                rid = pq.read_table(path, columns=["run_id"]).column(0).to_pylist()
            except Exception as exc:  # noqa: BLE001
                return f"{table}/{run_id}.parquet cannot be read ({exc})"
            if meta.num_rows != 1 or rid != [run_id]:
                return f"{table}/{run_id}.parquet does not describe run {run_id}"
    return None
