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

from ccfair.errors import ResultsError, shorten, show
from ccfair.store.directory import check_schema, finished_run_ids
from ccfair.store.files import arrow_file
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

        # Every page's checksum is verified (files written before ccfair wrote checksums
        # have none, and read as before).
        with arrow_file(path) as source:
            return pq.read_table(source, columns=columns, page_checksum_verification=True)
    except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
        raise ResultsError(f"{path}: cannot be read ({damage(exc)}); {REPAIR}") from None


#: What to do about a damaged file of a finished run (a resume reads every page of every
#: finished run, :func:`verify_run`, and computes a damaged run again).
REPAIR = (
    "rerun the sweep (or ccfair run) into this directory: it finds the damaged run and "
    "computes it again"
)


def damage(exc: BaseException) -> str:
    """How a file failed to read, in one short line.

    Example:
        >>> damage(OSError("could not verify page integrity, CRC checksum verification failed"))
        'could not verify page integrity, CRC checksum verification failed'
    """
    return shorten(" ".join(str(exc).split()), 200)


def load_table(
    results_dir: str | os.PathLike[str], table: str, run_ids: list[str] | None = None
) -> pd.DataFrame:
    """One table over all finished runs of a results directory (or the given ``run_ids``),
    keyed by ``run_id``.

    Example:
        >>> ccfair.load_table("results", "flows")["goodput_mbps"]  # doctest: +SKIP
    """
    if not isinstance(table, str) or table not in (MARKER_TABLE, *TABLES):
        raise ResultsError(
            f"table: {show(table)} is not one of {', '.join((MARKER_TABLE, *TABLES))}"
        )
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

    Reads each table file whole, verifying its pages' checksums (a truncated, overwritten or
    bit-flipped file fails), checks its columns, and the ``runs`` row, which must name this
    run.

    Example:
        >>> verify_run("results/harada-dumbbell", "2bb67167608fdd8d")  # doctest: +SKIP
        'flows/2bb67167608fdd8d.parquet is missing'
    """
    import pyarrow.parquet as pq

    root = Path(results_dir)
    for table in WRITE_ORDER:
        path = root / table / f"{run_id}.parquet"
        name = f"{table}/{run_id}.parquet"
        if not path.exists():
            return f"{name} is missing"
        try:
            with (
                arrow_file(path) as source,
                pq.ParquetFile(source, page_checksum_verification=True) as file,
            ):
                columns = columns_problem(file.schema_arrow, table)
                if columns is not None:
                    return f"{name} {columns}"
                # Every page, not only the footer: a page whose checksum fails or whose
                # header is broken (the footer intact) is damage too.
                data = file.read(use_threads=False)
        except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
            return f"{name} is not readable Parquet ({damage(exc)})"
        if table == MARKER_TABLE and data.column("run_id").to_pylist() != [run_id]:
            return f"{name} does not describe run {run_id}"
    return None
