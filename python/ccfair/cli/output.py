"""What the commands print: JSON documents on stdout (``--json``: one document and nothing
else, strict JSON with ``null`` for a missing number), notices and progress on stderr
(docs/cli.md).

Example:
    >>> jsonable({"x": float("nan"), "n": [1, 2.5]})
    {'x': None, 'n': [1, 2.5]}
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["jsonable", "notice", "print_json", "records", "say_unless"]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types: numpy scalars as Python numbers, NaN and infinities as
    ``None`` (JSON has neither), times in ISO 8601, paths as strings.

    Example:
        >>> import numpy as np
        >>> jsonable([np.int64(3), np.float64("inf"), np.bool_(True)])
        [3, None, True]
    """
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    item = getattr(value, "item", None)  # a numpy scalar
    if callable(item) and getattr(value, "shape", None) == ():
        return jsonable(item())
    tolist = getattr(value, "tolist", None)  # a numpy array
    if callable(tolist):
        return jsonable(tolist())
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return None
    isoformat = getattr(value, "isoformat", None)  # a pandas Timestamp
    if callable(isoformat):
        return isoformat()
    return str(value)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as JSON objects, column name -> value (the index is dropped).

    Example:
        >>> import pandas as pd
        >>> records(pd.DataFrame({"a": [1, 2], "b": [0.5, None]}))
        [{'a': 1, 'b': 0.5}, {'a': 2, 'b': None}]
    """
    return jsonable(frame.to_dict(orient="records"))


def print_json(document: Any) -> None:
    """Print ``document`` as one strict JSON document on stdout."""
    print(json.dumps(jsonable(document), indent=1, allow_nan=False, ensure_ascii=False))


def notice(message: str) -> None:
    """A line for the person at the terminal, not for a pipe: on stderr."""
    print(message, file=sys.stderr, flush=True)


def say_unless(quiet: bool) -> Callable[[str], None]:
    """:func:`notice`, or nothing when ``quiet``."""
    return (lambda message: None) if quiet else notice
