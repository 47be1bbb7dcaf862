"""The names of the metric tables: names that changed, and the check that what a caller
asks for is a column (one :class:`~ccfair.errors.SpecError` naming the columns there are,
never a silent drop or a pandas traceback).

Example:
    >>> RENAMED["qdelay_mean_ms"][0]
    'queue_wait_mean_ms'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ccfair.errors import SpecError
from ccfair.units import plain

if TYPE_CHECKING:  # pandas is imported where a table is made
    import pandas as pd

__all__ = ["RENAMED", "check_columns", "column_names", "percentiles_of"]

#: Names a metric table no longer has -> what it is called now (a request for the old name
#: is an error naming the new one).
RENAMED = {
    "qdelay_mean_ms": (
        "queue_wait_mean_ms",
        "the run metrics' queue wait at the bottleneck (mean sojourn minus one "
        "serialisation) is queue_wait_mean_ms; qdelay_mean_ms is each flow's sampled RTT "
        "minus its base RTT, a column of the flows",
    ),
    "index": ("point_index", "the sweep point's index is point_index"),
}


def check_columns(
    frame: pd.DataFrame,
    names: Sequence[str],
    field: str,
    *,
    numeric: bool = True,
    table: str = "this table",
) -> None:
    """Every one of ``names`` is a column of ``frame`` (``table`` in messages; numeric, if
    ``numeric``): else a :class:`SpecError` at ``field`` naming the columns there are (and
    a renamed column's new name).

    Example:
        >>> import pandas as pd
        >>> check_columns(pd.DataFrame({"jain_index": [1.0]}), ["share_bbr"], "values")
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: values: "share_bbr" is not a column of this table (columns: \
jain_index)
    """
    import pandas as pd

    for name in names:
        if not isinstance(name, str) or name not in frame.columns:
            renamed = RENAMED.get(name) if isinstance(name, str) else None
            if renamed is not None and renamed[0] in frame.columns:
                raise SpecError(field, name, f"is not a column of {table}: {renamed[1]}")
            known = [
                str(c)
                for c in frame.columns
                if not numeric or pd.api.types.is_numeric_dtype(frame[c])
            ]
            shown = ", ".join(known[:60]) + (
                f", ... ({len(known)} in all)" if len(known) > 60 else ""
            )
            raise SpecError(field, name, f"is not a column of {table} (columns: {shown})")
        if numeric and not pd.api.types.is_numeric_dtype(frame[name]):
            raise SpecError(field, name, f"is not a numeric column of {table}; it has no mean")


def column_names(value: Any, field: str) -> list[str]:
    """``value`` as the list of column names a caller asked for: a name, or a non-empty
    list or tuple of names; anything else is a :class:`SpecError` at ``field`` (not a
    ``TypeError`` from iterating a number, or pandas' "No objects to concatenate").

    Example:
        >>> column_names("jain_index", "values"), column_names(("a", "b"), "values")
        (['jain_index'], ['a', 'b'])
        >>> column_names(3, "values")
        Traceback (most recent call last):
        ccfair.errors.SpecError: values: 3 is not a column name or a non-empty list of them
    """
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise SpecError(field, value, "is not a column name or a non-empty list of them")


def percentiles_of(value: Any) -> list[float]:
    """``value`` as percentiles: a list or tuple of numbers from 0 to 100 (numpy's too).

    Example:
        >>> percentiles_of((5, 50.0))
        [5.0, 50.0]
        >>> percentiles_of([float("nan")])
        Traceback (most recent call last):
        ccfair.errors.SpecError: percentiles: [NaN] is not a list of percentiles from 0 to 100
    """
    values = plain(value)
    if isinstance(values, list | tuple) and all(
        isinstance(v, numbers.Real)
        and not isinstance(v, bool)
        and _finite(v)
        and 0 <= float(v) <= 100
        for v in values
    ):
        return [float(v) for v in values]
    raise SpecError("percentiles", value, "is not a list of percentiles from 0 to 100")


def _finite(v: numbers.Real) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:  # an int too large for a float
        return False
