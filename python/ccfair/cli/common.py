"""The one error line every failure of the ``ccfair`` command prints.

Example:
    >>> fail("x: is wrong")
    2
"""

from __future__ import annotations

import sys

from ccfair.errors import one_line

__all__ = ["fail"]


def fail(message: str) -> int:
    """Print one ``error:`` line (bounded in length, each word too: :func:`one_line`) and
    return the exit status 2."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2
