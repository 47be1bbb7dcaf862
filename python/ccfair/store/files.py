"""The files ccfair writes: each through a ccfair-named temporary, fsynced and renamed into
place (one atomic writer for table files, the sweep record, figures and reports), and the
temporaries of writers killed mid-write removed.

Temporary files are named ``.ccfair-<writer>.<file>.tmp`` (the writer's process id and a
random token), and only such files whose writer is gone are ever deleted.

Example:
    >>> p = temporary_path(Path("r/flows/0123456789abcdef.parquet"))
    >>> p.name.startswith(".ccfair-") and p.name.endswith(".0123456789abcdef.parquet.tmp")
    True
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ccfair.errors import ResultsError, shorten, show
from ccfair.store.schema import MARKER_TABLE, TABLES

__all__ = [
    "WRITER_ID",
    "arrow_file",
    "check_replaceable",
    "looked_up",
    "make_dir",
    "remove_stale_temporaries",
    "replace_via_temporary",
    "temporary_path",
    "write_bytes_atomic",
]

#: This process as a writer: its pid and a random token (pids are reused; tokens are not).
WRITER_ID = f"{os.getpid()}-{secrets.token_hex(4)}"


_TEMPORARY = re.compile(r"\.ccfair-(\d+)-[0-9a-f]{8}\..+\.tmp")


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: a hidden name with the
    ccfair prefix and this writer's id.

    Example:
        >>> temporary_path(Path("r/flows/0123456789abcdef.parquet")).name  # doctest: +ELLIPSIS
        '.ccfair-...-....0123456789abcdef.parquet.tmp'
    """
    if os.getpid() != int(WRITER_ID.split("-")[0]):  # a forked child is another writer
        _renew_writer_id()
    return path.with_name(f".ccfair-{WRITER_ID}.{path.name}.tmp")


def _renew_writer_id() -> None:
    global WRITER_ID
    WRITER_ID = f"{os.getpid()}-{secrets.token_hex(4)}"


#: The largest pid Linux hands out (PID_MAX_LIMIT, include/linux/threads.h, 64-bit).
_PID_MAX_LIMIT = 4 * 1024 * 1024


def _alive(pid: int) -> bool:
    """Whether the writer with this pid may still be running. A pid no process can have
    (0, or above Linux's limit) is not a ccfair writer's: its file is kept, as if alive
    (``os.kill`` would signal a process group for 0, and overflows above a C long)."""
    if not 0 < pid <= _PID_MAX_LIMIT:
        return True
    try:  # a zombie (killed, not yet reaped) writes nothing more: proc(5), state Z
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rindex(")") + 2 :].startswith("Z"):
            return False
    except (OSError, ValueError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(root: Path) -> int:
    """Delete the temporary files that ccfair writers left in ``root`` and its folders and
    whose writer process is gone (killed mid-write); returns how many. Files ccfair did
    not create, and temporaries of writers still running, are never touched."""
    n = 0
    # The table folders, and what else ccfair writes through temporaries: sweep.json and
    # report.html at the top, figures, traces.
    for folder in (root, *(root / name for name in (MARKER_TABLE, *TABLES, "figures", "trace"))):
        if folder.is_symlink() or not folder.is_dir():
            continue
        for entry in folder.iterdir():
            m = _TEMPORARY.fullmatch(entry.name)
            if m is None or _alive(int(m.group(1))) or not entry.is_file():
                continue
            entry.unlink(missing_ok=True)
            n += 1
    return n


@contextmanager
def arrow_file(where: Any, mode: str = "rb") -> Iterator[Any]:
    """``where`` (a path, or a pyarrow stream left as it is) as pyarrow can take it: pyarrow
    encodes a path as UTF-8, so a name that is not (a non-UTF-8 byte, which Python holds
    as a surrogate such as ``"\\udcff"``) is opened here and handed over as a file, rather
    than failing with ``UnicodeEncodeError`` (``--out`` of such a name was an internal
    error).

    Example:
        >>> with arrow_file(Path("r/flows/x.parquet")) as source:
        ...     source
        'r/flows/x.parquet'
    """
    if not isinstance(where, str | os.PathLike):
        yield where
        return
    text = os.fspath(where)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        with open(text, mode) as fh:
            yield fh
        return
    yield text


def looked_up(path: Path) -> Path:
    """``path``, after checking that the file system can look it up (it need not exist): a
    name too long or a parent that may not be searched is a :class:`ResultsError` naming it,
    not an ``OSError`` from deep inside.

    Example:
        >>> looked_up(Path("x" * 300))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ccfair.errors.ResultsError: xxx...(300 chars)...xxx: cannot be used (File name too long)
    """
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        raise ResultsError(
            f"{shorten(str(path))}: cannot be used ({exc.strerror or exc})"
        ) from None
    except (ValueError, UnicodeError) as exc:  # a NUL byte, a lone surrogate
        raise ResultsError(f"{show(str(path))}: is not a path ({exc})") from None
    return path


def make_dir(path: Path) -> None:
    """Create a directory (and parents) or fail with a :class:`ResultsError` saying why
    (a file in the way, no permission, a read-only file system, a name too long)."""
    looked_up(path)
    if path.exists() and not path.is_dir():
        raise ResultsError(f"{path}: is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot create the directory ({exc.strerror or exc})") from None


def check_replaceable(path: Path) -> Path:
    """``path``, if a file written through a temporary may be renamed onto it: missing, or a
    regular file. Anything else is a :class:`ResultsError`: renaming onto ``/dev/null`` (as
    root) replaced the device with a regular file, and onto a link replaces the link.

    Example:
        >>> check_replaceable(Path("/dev/null"))
        Traceback (most recent call last):
        ccfair.errors.ResultsError: /dev/null: is a device, not a regular file; give a file path
    """
    try:
        mode = os.lstat(looked_up(path)).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return path
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be used ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return path
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a symbolic link"
        if stat.S_ISLNK(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
    )
    raise ResultsError(f"{path}: is {kind}, not a regular file; give a file path")


def replace_via_temporary(path: Path, write: Any) -> None:
    """Write ``path`` through its ccfair-named temporary (:func:`temporary_path`) with
    ``write(tmp_path)``, fsync it and rename it into place, in an existing folder (figures,
    reports, table files); a failure leaves no temporary behind and raises
    :class:`ResultsError` naming ``path``. Only a regular file is ever replaced
    (:func:`check_replaceable`)."""
    check_replaceable(path)
    tmp = temporary_path(path)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultsError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` as ``path``, atomically (:func:`replace_via_temporary`)."""
    replace_via_temporary(path, lambda tmp: tmp.write_bytes(data))
