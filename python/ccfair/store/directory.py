"""A results directory, the one place a run's tables are kept::

    RESULTS_DIR/runs/<run_id>.parquet          provenance, normalised spec (one row)
    RESULTS_DIR/flows/<run_id>.parquet         per-flow summary
    RESULTS_DIR/timeseries/<run_id>.parquet    per-flow samples
    RESULTS_DIR/links/<run_id>.parquet         per-link-direction samples
    RESULTS_DIR/link_summary/<run_id>.parquet  per-link-direction summary over the window
    RESULTS_DIR/sweep.json                     a sweep's record (:mod:`ccfair.store.sweep_record`)

Every file is written to a temporary name and renamed into place (:mod:`ccfair.store.files`);
the ``runs`` file is written last, so a run counts as finished exactly when its ``runs`` file
exists. The directory is ccfair's own: table folders that are symbolic links are refused
(ccfair never writes or deletes through them); every path ccfair writes is a fixed table name
and a run id (16 hex digits) under the directory. A sweep holds the directory's lock while it
writes.

Example:
    >>> check_run_dir("")
    Traceback (most recent call last):
    ccfair.errors.ResultsError: --out: "" is not a directory path
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ccfair.errors import ResultsError, show
from ccfair.spec.identity import RUN_ID
from ccfair.spec.sweep import Point, Sweep
from ccfair.store.files import (
    arrow_file,
    looked_up,
    make_dir,
    replace_via_temporary,
    write_bytes_atomic,
)
from ccfair.store.schema import MARKER_TABLE, TABLES, VERSION, WRITE_ORDER
from ccfair.store.sweep_record import SWEEP_FILE, read_sweep_record, sweep_record

__all__ = [
    "LOCK_NAME",
    "check_run_dir",
    "check_schema",
    "check_table_folders",
    "check_versions",
    "claim",
    "finished_run_ids",
    "lock",
    "parquet_bytes_of",
    "prepare_run_dir",
    "remove_run",
    "schema_versions",
    "table_folder",
    "write_arrow_tables",
    "write_file_atomic",
    "write_run_bytes",
]


def table_folder(root: Path, table: str) -> Path:
    """``root/table``, created if missing; a symbolic link there (or a file) is refused, so
    that nothing is written or deleted outside ``root`` through it."""
    folder = root / table
    if folder.is_symlink():
        raise ResultsError(
            f"{folder}: is a symbolic link; ccfair writes only into real folders of the "
            "results directory (remove the link or use another --out)"
        )
    make_dir(folder)
    return folder


def write_file_atomic(path: Path, write: Any) -> None:
    """Write ``path`` through its temporary name (``write(tmp_path)``), fsync it, and rename
    it into place; a failure leaves no temporary behind and raises :class:`ResultsError`.
    ``path``'s folder is a table folder of a results directory (:func:`table_folder`)."""
    table_folder(path.parent.parent, path.parent.name)
    replace_via_temporary(path, write)


def check_run_dir(results_dir: str | os.PathLike[str], extra: Sequence[str] = ()) -> Path:
    """Check, without creating anything, that single runs can be saved into ``results_dir``
    (a CLI run checks before it runs, so that a problem is one :class:`ResultsError` before
    the run rather than after it): a directory path, of this results schema, not a sweep's,
    every table folder (and the ``extra`` ones, e.g. ``trace``) a real folder or missing;
    a directory still to be made must be creatable in its nearest existing parent.

    Example:
        >>> check_run_dir("")
        Traceback (most recent call last):
        ccfair.errors.ResultsError: --out: "" is not a directory path
    """
    if not isinstance(results_dir, str | os.PathLike) or not str(results_dir).strip():
        raise ResultsError(f"--out: {show(results_dir)} is not a directory path")
    root = looked_up(Path(results_dir))
    if not root.exists():
        parent = root.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise ResultsError(f"{root}: cannot be created ({parent} is a file)")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ResultsError(f"{root}: cannot be created (no permission in {parent})")
        return root
    if not root.is_dir():
        raise ResultsError(f"{root}: is a file, not a directory")
    check_schema(root)
    if (root / SWEEP_FILE).exists():
        raise ResultsError(
            f"{root}: is a sweep's results directory ({SWEEP_FILE}); a single run saved there "
            "would mix into the sweep's tables: use another --out"
        )
    check_table_folders(root, (*WRITE_ORDER, *extra))
    return root


def check_table_folders(root: Path, tables: Sequence[str]) -> None:
    """Raise :class:`ResultsError` if a table folder of ``root`` is a symbolic link or a
    file, creating nothing (:func:`table_folder` creates)."""
    for table in tables:
        folder = root / table
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            table_folder(root, table)  # raises, naming the folder


def prepare_run_dir(results_dir: str | os.PathLike[str], extra: Sequence[str] = ()) -> Path:
    """:func:`check_run_dir`, then create the directory and its table folders.

    Example:
        >>> prepare_run_dir("results")  # doctest: +SKIP
        PosixPath('results')
    """
    root = check_run_dir(results_dir, extra)
    make_dir(root)
    for table in (*WRITE_ORDER, *extra):
        table_folder(root, table)
    return root


def write_arrow_tables(root: Path, run_id: str, tables: dict[str, Any]) -> None:
    """Write one run's Arrow tables (the schema's exact form: :func:`arrow_table`,
    :func:`ccfair.store.tables.build_tables`) into the results directory ``root``, each through
    a ccfair-named temporary, the ``runs`` file last.

    Example:
        >>> write_arrow_tables(Path("results"), r.run_id, r.arrow_tables())  # doctest: +SKIP
    """
    created: list[Path] = []
    try:
        for table in WRITE_ORDER:
            arrow = tables[table]
            path = root / table / f"{run_id}.parquet"
            new = not path.exists()
            write_file_atomic(path, lambda tmp, arrow=arrow: _write_parquet(arrow, tmp))
            if new:
                created.append(path)
    except BaseException:
        # A run is finished when its runs file is written; without it, the tables written
        # here would be orphans in a plain read of a table folder. Files that were there
        # before (the same run saved earlier) are kept.
        for path in created:
            path.unlink(missing_ok=True)
        raise


def parquet_bytes_of(arrow: Any) -> bytes:
    """The bytes of the Parquet file of one table, as :func:`write_arrow_tables` writes it.

    Example:
        >>> import pyarrow as pa
        >>> parquet_bytes_of(pa.table({"a": [1]}))[:4]
        b'PAR1'
    """
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    _write_parquet(arrow, sink)
    return sink.getvalue().to_pybytes()


def _write_parquet(arrow: Any, where: Any) -> None:
    """Write one table as Parquet with a CRC-32 of every page (the format's optional page
    checksum): a flipped bit inside a data page is then an error when the file is read
    (:mod:`ccfair.store.read` verifies them), not a silently changed value."""
    import pyarrow.parquet as pq

    with arrow_file(where, "wb") as sink:
        pq.write_table(arrow, sink, write_page_checksum=True)


def schema_versions(results_dir: str | os.PathLike[str]) -> set[int]:
    """The results schema versions of the finished runs in ``results_dir`` (1: written
    before ``runs.schema_version`` existed). Reads only what it needs of each file."""
    import pyarrow.parquet as pq

    versions: set[int] = set()
    for rid in finished_run_ids(results_dir):
        path = Path(results_dir) / MARKER_TABLE / f"{rid}.parquet"
        try:
            # ParquetFile, not pq.read_table: that imports pyarrow.dataset, which imports
            # pandas (0.4 s in a fresh process) to read one number.
            with arrow_file(path) as source, pq.ParquetFile(source) as file:
                if "schema_version" not in file.schema_arrow.names:
                    versions.add(1)
                    continue
                col = file.read(columns=["schema_version"]).column(0)
            versions.update(int(v) for v in col.to_pylist())
        except Exception:  # noqa: BLE001 - a damaged file is reported when it is read
            continue
    return versions


def check_schema(results_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`ResultsError` (one line, saying what to do) if ``results_dir`` holds
    runs written with another results schema than this ccfair's: their columns differ, so
    they can neither be read under the current names nor mixed with new runs.

    Example:
        >>> check_schema("results")  # doctest: +SKIP
    """
    check_versions(results_dir, schema_versions(results_dir))


def check_versions(results_dir: str | os.PathLike[str], versions: set[int]) -> None:
    """:func:`check_schema` for versions already read (e.g. from a loaded runs table)."""
    old = sorted(v for v in versions if v != VERSION)
    if old:
        raise ResultsError(
            f"{results_dir}: holds runs written with results schema {old[0]} (another ccfair "
            f"version); this one reads and writes schema {VERSION} (docs/results.md, "
            "'Schema versions'): rerun into a new directory (--out NEW) or move this one away"
        )


def finished_run_ids(results_dir: str | os.PathLike[str]) -> list[str]:
    """Run ids whose results are complete in ``results_dir`` (files of other names are
    not runs and are ignored)."""
    marker = looked_up(Path(results_dir)) / MARKER_TABLE
    if not marker.is_dir():
        return []
    return sorted(p.stem for p in marker.glob("*.parquet") if RUN_ID.fullmatch(p.stem))


def run_is_finished(results_dir: str | os.PathLike[str], run_id: str) -> bool:
    """Whether run ``run_id``'s results are complete in ``results_dir`` (its marker file,
    written last, exists)."""
    return (looked_up(Path(results_dir)) / MARKER_TABLE / f"{run_id}.parquet").is_file()


def claim(root: Path, sweep: Sweep, points: list[Point]) -> None:
    """Write ``sweep.json`` or check that the directory belongs to this sweep."""
    record = read_sweep_record(root)
    mine = sweep.spec_hash()
    if record is not None:
        if record["hash"] != mine:
            raise ResultsError(
                f"{root}: holds results of sweep {record.get('name')!r} (hash {record['hash']}, "
                f"{len(record.get('run_ids', []))} runs), not of this sweep {sweep.name!r} "
                f"(hash {mine}); use another --out directory or delete that one"
            )
        now = list(dict.fromkeys(p.run_id for p in points))
        if record["run_ids"] != now:
            # The same sweep file, other scenarios: this ccfair resolves them differently
            # (a builder's default, a TCP default), so its runs would sit next to the
            # record's, unlabelled, and both would count as the sweep.
            changed = len(set(now) - set(record["run_ids"]))
            raise ResultsError(
                f"{root}: holds sweep {record.get('name')!r} as ccfair "
                f"{record.get('git_revision', '?')} resolved it; this ccfair makes {changed} of "
                f"its {len(now)} runs different scenarios (run ids), so its runs cannot be "
                "mixed with those: use another --out directory"
            )
        return
    foreign = finished_run_ids(root)
    if foreign:
        raise ResultsError(
            f"{root}: holds {len(foreign)} runs that are not from a sweep (no {SWEEP_FILE}); "
            "use another --out directory"
        )
    make_dir(root)
    blob = json.dumps(sweep_record(sweep, points), indent=1, sort_keys=False)
    write_bytes_atomic(root / SWEEP_FILE, blob.encode())


#: The sweep's lock file in its results directory; named like ccfair's temporaries, so
#: that it does not take a name a user's file may have.
LOCK_NAME = ".ccfair-lock"


_LOCK_CONTENT = re.compile(r"(pid \d+)?")


@contextmanager
def lock(root: Path) -> Iterator[None]:
    """Hold the directory's lock (a second sweep into it is refused while it is held)."""
    make_dir(root)
    path = root / LOCK_NAME
    try:
        # O_NOFOLLOW: a symbolic link in its place is refused, never written through.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be opened ({exc.strerror or exc})") from None
    fh = os.fdopen(fd, "r+")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise ResultsError(
                f"{root}: another sweep is writing into this directory ({holder}); "
                "wait for it or use another --out directory"
            ) from None
        fh.seek(0)
        found = fh.read(64)
        if not _LOCK_CONTENT.fullmatch(found.strip()):
            # Not a lock ccfair wrote (those hold "pid N" or nothing): never overwrite it.
            raise ResultsError(f"{path}: is not ccfair's lock file; move it away")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        yield
    finally:
        fh.close()


def remove_run(root: Path, run_id: str) -> None:
    """Remove a run's files, the marker first: from then on it does not count as finished."""
    for table in (MARKER_TABLE, *TABLES):
        path = root / table / f"{run_id}.parquet"
        path.unlink(missing_ok=True)


def write_run_bytes(root: Path, run_id: str, tables: dict[str, bytes]) -> None:
    """Write one run's tables given as Parquet bytes (a cluster worker's), the marker last."""
    for table in WRITE_ORDER:
        path = root / table / f"{run_id}.parquet"
        write_file_atomic(path, lambda tmp, data=tables[table]: tmp.write_bytes(data))
