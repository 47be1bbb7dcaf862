"""The names of the metric tables: names that changed, and the check that what a caller
asks for is a column (one :class:`~ccfair.errors.SpecError` naming the columns there are,
never a silent drop or a pandas traceback).

Example:
    >>> RENAMED["qdelay_mean_ms"][0]
    'queue_wait_mean_ms'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ccfair.errors import SpecError

if TYPE_CHECKING:  # pandas is imported where a table is made
    import pandas as pd

__all__ = ["RENAMED", "check_columns"]

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
