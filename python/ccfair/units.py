"""Parsing and formatting of the units a scenario spec uses.

Internally every quantity is an integer: durations in nanoseconds, rates in bit/s, sizes in
bytes. Users write strings with units (``"18ms"``, ``"50Mbit/s"``, ``"10MB"``) or bare numbers
(seconds, bit/s, bytes). Parsing is exact (decimal arithmetic, no binary floating-point
rounding) and rounds to the nearest integer unit; formatting picks the largest unit in which
the value is a whole number, so that ``parse(format(x)) == x``.

Numbers may come from numpy or any other library: :func:`plain` turns them into Python's
own (``np.float64(0.01)`` into ``0.01``, an array into a list), as every way into a spec does
first.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

__all__ = [
    "NS_PER_S",
    "finite_float",
    "plain",
    "parse_duration",
    "parse_rate",
    "parse_size",
    "format_duration",
    "format_rate",
    "format_size",
]

NS_PER_S = 1_000_000_000

# ASCII digits only: "１s" (full-width) is not a duration.
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_QUANTITY = re.compile(rf"^[ \t]*({_NUMBER})[ \t]*([A-Za-zµ/]*)[ \t]*\Z")
#: Decimal exponents beyond this are far outside any quantity (2^64 ns is 5.8e2 years) and
#: would make exact arithmetic slow or overflow; they parse as "too large" / zero.
_MAX_EXPONENT = 40
#: Characters of a quantity string (longer ones are not quantities).
_MAX_QUANTITY_CHARS = 100
#: A value above every bound the spec checks (2^64), returned for huge exponents.
_TOO_LARGE = 2**80

_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": NS_PER_S,
    "min": 60 * NS_PER_S,
}
_RATE_UNITS = {
    "bit/s": 1,
    "bps": 1,
    "kbit/s": 10**3,
    "Kbit/s": 10**3,
    "kbps": 10**3,
    "Kbps": 10**3,
    "Mbit/s": 10**6,
    "Mbps": 10**6,
    "Gbit/s": 10**9,
    "Gbps": 10**9,
    "Tbit/s": 10**12,
    "Tbps": 10**12,
}
_SIZE_UNITS = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}

DURATION_HINT = 'e.g. "18ms", "0.5s", "2us", "100ns", or a number in seconds'
RATE_HINT = 'e.g. "50Mbit/s", "50Mbps", "1Gbit/s", "100kbit/s", or a number in bit/s'
SIZE_HINT = 'e.g. "10MB" (10e6 bytes), "1MiB", or an integer number of bytes'


def finite_float(value: int | float) -> float | None:
    """``value`` as a finite float, or None when it is NaN, infinite or an integer too large
    for a float (``10**400``, where ``math.isfinite`` raises ``OverflowError``).

    Example:
        >>> finite_float(0.5), finite_float(10**400), finite_float(float("nan"))
        (0.5, None, None)
    """
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def plain(value: Any) -> Any:
    """``value`` with every number as Python's own: a numpy scalar as the ``int``, ``float``
    or ``bool`` it holds, a numpy array as a (nested) list, any other ``numbers.Integral`` as
    an ``int`` and ``numbers.Real`` as a ``float``, through dicts, lists and tuples. Anything
    else is returned as it is. A notebook's numbers (``np.linspace``, ``np.int64`` seeds)
    then mean what the same Python numbers mean.

    Example:
        >>> import numpy as np
        >>> plain({"delay": np.float64(0.01), "alpha": np.linspace(1, 2, 2), "on": np.bool_(1)})
        {'delay': 0.01, 'alpha': [1.0, 2.0], 'on': True}
    """
    if value is None or isinstance(value, str | bool):
        return value
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return plain(value.tolist())  # a numpy scalar or array; bool_ becomes bool
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, numbers.Integral):
        return value if type(value) is int else int(value)
    if isinstance(value, numbers.Real):
        return value if type(value) is float else float(value)
    return value


def _parse(value: Any, units: dict[str, int], bare_unit: int) -> int | None:
    """Exact value in base units (rounded half up), or None if not understood."""
    value = plain(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * bare_unit
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        number, scale = Decimal(repr(value)), bare_unit
    elif isinstance(value, str):
        if len(value) > _MAX_QUANTITY_CHARS:
            return None
        m = _QUANTITY.match(value)
        if not m:
            return None
        unit = m.group(2)
        if unit == "":
            scale = bare_unit
        elif unit in units:
            scale = units[unit]
        else:
            return None
        try:
            number = Decimal(m.group(1))
        except InvalidOperation:  # pragma: no cover - the regex only admits valid numbers
            return None
    else:
        return None
    if number.is_zero():
        return 0
    if number.adjusted() > _MAX_EXPONENT:
        return _TOO_LARGE if number > 0 else -_TOO_LARGE
    if number.adjusted() < -_MAX_EXPONENT:
        return 0
    return int((number * scale).to_integral_value(rounding=ROUND_HALF_UP))


def parse_duration(value: Any) -> int | None:
    """Duration in integer nanoseconds, or None if ``value`` is not a duration.

    Strings take a unit (``ns``, ``us``/``µs``, ``ms``, ``s``, ``min``); bare numbers are
    seconds.

    Example:
        >>> parse_duration("18ms"), parse_duration(0.5), parse_duration("2us")
        (18000000, 500000000, 2000)
    """
    return _parse(value, _DURATION_UNITS, NS_PER_S)


def parse_rate(value: Any) -> int | None:
    """Rate in integer bit/s, or None if ``value`` is not a rate.

    Example:
        >>> parse_rate("50Mbit/s"), parse_rate("1Gbps"), parse_rate("1e6bit/s"), parse_rate(5e6)
        (50000000, 1000000000, 1000000, 5000000)
    """
    return _parse(value, _RATE_UNITS, 1)


def parse_size(value: Any) -> int | None:
    """Size in integer bytes, or None if ``value`` is not a size.

    Example:
        >>> parse_size("10MB"), parse_size("1MiB"), parse_size(1500)
        (10000000, 1048576, 1500)
    """
    return _parse(value, _SIZE_UNITS, 1)


def _format(n: int, units: list[tuple[str, int]], sep: str = "") -> str:
    for name, scale in units:
        if n % scale == 0 and (n != 0 or scale == units[-1][1]):
            return f"{n // scale}{sep}{name}"
    raise AssertionError("the last unit must be 1")  # pragma: no cover


def format_duration(ns: int) -> str:
    """Shortest exact string for a duration in nanoseconds.

    Example:
        >>> format_duration(60_000_000_000), format_duration(18_000_000), format_duration(1500)
        ('60s', '18ms', '1500ns')
    """
    if ns == 0:
        return "0s"
    return _format(ns, [("s", NS_PER_S), ("ms", 10**6), ("us", 10**3), ("ns", 1)])


def format_rate(bps: int) -> str:
    """Shortest exact string for a rate in bit/s.

    Example:
        >>> format_rate(50_000_000), format_rate(1_000_000_000), format_rate(1234)
        ('50Mbit/s', '1Gbit/s', '1234bit/s')
    """
    return _format(bps, [("Gbit/s", 10**9), ("Mbit/s", 10**6), ("kbit/s", 10**3), ("bit/s", 1)])


def format_size(n: int) -> str | int:
    """Exact size: a string with a decimal or binary unit when one fits, else the integer.

    Example:
        >>> format_size(10_000_000), format_size(2**20), format_size(1448)
        ('10MB', '1MiB', 1448)
    """
    for name, scale in [("GB", 10**9), ("MB", 10**6), ("GiB", 2**30), ("MiB", 2**20)]:
        if n != 0 and n % scale == 0:
            return f"{n // scale}{name}"
    if n != 0 and n % 1000 == 0:
        return f"{n // 1000}kB"
    return n
