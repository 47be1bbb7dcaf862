"""Statistics over results: Jain's fairness index.

Example:
    >>> jain_index([1.0, 1.0])
    1.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ccfair.errors import SpecError

__all__ = ["jain_index"]


def jain_index(x: Any) -> float:
    """Jain's index (sum x)^2 / (n sum x^2); 1 means equal shares, 1/n one flow takes all.

    Defined on non-negative allocations (Jain, Chiu and Hawe, DEC-TR-301, 1984): a negative
    value is an error; no values, all zeros or a NaN give NaN.

    Example:
        >>> jain_index([1.0, 1.0])
        1.0
        >>> round(jain_index([3.0, 1.0]), 3)
        0.8
        >>> jain_index([2.0, -1.0])
        Traceback (most recent call last):
        ccfair.errors.SpecError: x: -1.0 is negative; Jain's index takes allocations >= 0
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1:
        raise SpecError("x", x, "is not a sequence of numbers (one per flow)")
    negative = arr[arr < 0]
    if len(negative):
        raise SpecError("x", float(negative[0]), "is negative; Jain's index takes allocations >= 0")
    denom = len(arr) * float(np.sum(arr * arr))
    return float(np.sum(arr) ** 2 / denom) if denom > 0 else float("nan")
