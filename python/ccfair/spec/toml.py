"""Spec input and output: reading what users hand ccfair, within bounds (spec files and nested
spec values), TOML errors that show the line, and a spec written back as TOML.

A spec file must be a regular file (not a directory, FIFO or device) of at most
:data:`~ccfair.limits.MAX_SPEC_FILE_BYTES`, in UTF-8, and valid TOML; a spec value (from a file
or a Python dict) may nest at most :data:`~ccfair.limits.MAX_NESTING` tables and lists and hold
strings of at most :data:`~ccfair.limits.MAX_STRING_CHARS`. Every violation is one
:class:`~ccfair.errors.SpecError` naming the file or field, checked before any work that the
violation would make slow or unbounded.

Example:
    >>> check_nesting({"a": [[1]]}, "sweep")
    >>> check_nesting({"a": [[[[1]]]]}, "sweep", max_depth=3)
    Traceback (most recent call last):
    ccfair.errors.SpecError: sweep.a[0][0]: tables and lists nest deeper than 3 levels
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from ccfair.errors import SpecError, format_path, show
from ccfair.limits import MAX_NAME_CHARS, MAX_NESTING, MAX_SPEC_FILE_BYTES, MAX_STRING_CHARS

__all__ = [
    "check_file_name",
    "check_nesting",
    "decode_error",
    "dumps",
    "load_toml",
    "read_spec_file",
]


def read_spec_file(path: str | os.PathLike[str], what: str) -> str:
    """The text of a spec file; ``what`` names it in errors (``scenario``, ``base.file``).

    Example:
        >>> read_spec_file("/dev/zero", "base.file")
        Traceback (most recent call last):
        ccfair.errors.SpecError: base.file: "/dev/zero" is not a regular file (a character device)
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except OSError as exc:
        raise SpecError(what, name, f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(what, name, f"is not a regular file ({_kind(st.st_mode)})")
    if st.st_size > MAX_SPEC_FILE_BYTES:
        raise SpecError(
            what,
            name,
            f"is {st.st_size} bytes; spec files are at most {MAX_SPEC_FILE_BYTES} bytes",
        )
    try:
        # O_NONBLOCK: never wait on a file that turned into a FIFO after the check.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_SPEC_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError(what, name, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_SPEC_FILE_BYTES:
        raise SpecError(what, name, f"is larger than {MAX_SPEC_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            what,
            name,
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8",
        ) from None


def _kind(mode: int) -> str:
    for test, word in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return word
    return "not a plain file"


def load_toml(text: str) -> dict[str, Any]:
    """Parse TOML text; nesting too deep for the parser is a :class:`SpecError`.

    The caller turns ``tomllib.TOMLDecodeError`` into its own message (with the line).

    Example:
        >>> load_toml("a = " + "[" * 5000 + "]" * 5000)
        Traceback (most recent call last):
        ccfair.errors.SpecError: tables and lists nest too deeply for the TOML parser ...
    """
    if not isinstance(text, str):  # tomllib: AttributeError for None, TypeError for bytes
        hint = " (decode them first: text.decode())" if isinstance(text, bytes) else ""
        raise SpecError(
            "",
            text,
            f"TOML text must be a str, not {type(text).__name__}{hint}",
            with_value=False,
        )
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise SpecError(
            "",
            None,
            f"tables and lists nest too deeply for the TOML parser (at most {MAX_NESTING} levels)",
            with_value=False,
        ) from None


def check_nesting(
    value: Any, where: str, *, max_depth: int = MAX_NESTING, toml_values: bool = False
) -> None:
    """Refuse values nested deeper than ``max_depth`` or holding strings (keys included)
    longer than :data:`~ccfair.limits.MAX_STRING_CHARS` or that are not Unicode text (a lone
    surrogate such as ``"\\ud800"``, which no file or engine can take); with
    ``toml_values``, also values of a type neither TOML nor JSON has (bytes, complex, an
    object). Iterative: no recursion limit.

    Example:
        >>> check_nesting({"name": "x" * 20000}, "scenario")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ccfair.errors.SpecError: scenario.name: "xxx...(20000 chars)...xxx" is longer than ...
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, str):
            if len(node) > MAX_STRING_CHARS:
                raise SpecError(
                    _where(where, loc), node, f"is longer than {MAX_STRING_CHARS} characters"
                )
            if not node.isascii():  # the path is made only for a string that may fail
                _check_text(node, _where(where, loc))
            continue
        if isinstance(node, Mapping):
            children: list[tuple[Any, tuple[str | int, ...]]] = []
            for k, v in node.items():
                key = k if isinstance(k, str) else show(k)
                if len(key) > MAX_STRING_CHARS:
                    raise SpecError(
                        _where(where, loc), key, f"is a key longer than {MAX_STRING_CHARS} chars"
                    )
                if not key.isascii():
                    _check_text(key, _where(where, loc))
                children.append((v, (*loc, key)))
        elif isinstance(node, list | tuple):
            children = [(v, (*loc, i)) for i, v in enumerate(node)]
        else:
            if toml_values and not isinstance(node, int | float | bool | type(None)):
                raise SpecError(
                    _where(where, loc),
                    node,
                    f"is a {type(node).__name__}, not a value a spec can hold (a string, "
                    "number, boolean, list or table)",
                )
            continue
        if children and len(loc) >= max_depth:
            raise SpecError(
                _where(where, loc),
                None,
                f"tables and lists nest deeper than {max_depth} levels",
                with_value=False,
            )
        stack.extend(children)


def _where(where: str, loc: tuple[str | int, ...]) -> str:
    path = format_path(loc)
    if not path:
        return where
    if not where:
        return path
    return f"{where}{path}" if path.startswith("[") else f"{where}.{path}"


def _check_text(text: str, where: str) -> None:
    """A string (value or key) must be Unicode text: Python strings may hold lone surrogates
    (``"\\ud800"``), which UTF-8, TOML, JSON and the engine refuse."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SpecError(
            where,
            None,
            f"holds a character that is not Unicode text ({exc.object[exc.start]!r} at "
            f"position {exc.start}, a lone surrogate)",
            with_value=False,
        ) from None


def check_file_name(value: Any, what: str) -> str:
    """``value`` if it can name a file or directory by itself: a non-empty string of at most
    :data:`~ccfair.limits.MAX_NAME_CHARS` printable characters, without ``/``, ``\\`` or NUL,
    not starting with ``.`` (so never ``.`` or ``..``). Sweep names become directories
    (``results/<name>``); nothing a user names may lead outside its directory.

    Example:
        >>> check_file_name("dumbbell-buffers", "name")
        'dumbbell-buffers'
        >>> check_file_name("../../../x", "name")
        Traceback (most recent call last):
        ccfair.errors.SpecError: name: "../../../x" is not a file name: it must not start ...
    """
    if not isinstance(value, str) or not value.strip():
        raise SpecError(what, value, "is not a non-empty string")
    if len(value) > MAX_NAME_CHARS:
        raise SpecError(what, value, f"is longer than {MAX_NAME_CHARS} characters")
    if value.startswith(".") or any(c in value for c in "/\\\0"):
        raise SpecError(
            what,
            value,
            'is not a file name: it must not start with "." or contain "/", "\\" or NUL',
        )
    if not value.isprintable():
        raise SpecError(what, value, "is not a file name: it has control characters")
    return value


# --------------------------------------------------------------------------------------------
# TOML errors


def decode_error(exc: tomllib.TOMLDecodeError, text: str, source: str | None) -> SpecError:
    """The :class:`SpecError` of a TOML syntax error in ``text``: the line and column, the
    reason, and the line as it reads (invisible characters escaped)."""
    msg = str(exc)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        reason = msg[: m.start()].strip()
    else:  # pragma: no cover - tomllib always reports a position for syntax errors
        line, col, reason = 0, 0, msg
    lines = text.splitlines()
    line_text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    # Invisible characters (a byte-order mark, NUL, other controls) are the usual cause of
    # an error on a line that looks right: show them escaped.
    line_text = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line_text
    )
    err = SpecError(
        "",
        line_text,
        f"invalid TOML at line {line}, column {col}: {reason}; the line reads: {line_text}",
        with_value=False,
        source=source,
    )
    err.line, err.column = line, col  # type: ignore[attr-defined]
    return err


# --------------------------------------------------------------------------------------------
# TOML output (the spec's subset: strings, numbers, booleans, lists, tables)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def dumps(d: Mapping[str, Any]) -> str:
    """A spec dict as TOML text (the spec's subset: top-level values, the ``tcp`` table,
    arrays of tables).

    Example:
        >>> print(dumps({"name": "x", "tcp": {"sack": False}}), end="")
        name = "x"
        <BLANKLINE>
        [tcp]
        sack = false
    """
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    arrays: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    for k, v in d.items():
        if isinstance(v, Mapping) and k == "tcp":
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, table in tables:
        lines += ["", f"[{_toml_key(k)}]"]
        lines += [f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in table.items()]
    for k, items in arrays:
        for item in items:
            lines += ["", f"[[{_toml_key(k)}]]"]
            lines += [f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"
