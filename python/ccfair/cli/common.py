"""What the commands share: the limits of the ``--max-*`` options and the one error line.

Example:
    >>> fail("x: is wrong")
    2
"""

from __future__ import annotations

import argparse
import sys

from ccfair.errors import SpecError, shorten
from ccfair.limits import Limits

__all__ = ["fail", "limits_of"]


def limits_of(args: argparse.Namespace) -> Limits:
    """The :class:`ccfair.Limits` of the --max-* options (defaults for those not given)."""
    given = {
        name: getattr(args, f"max_{name}", None)
        for name in ("memory", "events", "runs")
        if getattr(args, f"max_{name}", None) is not None
    }
    try:
        return Limits(**given)
    except SpecError as exc:
        name = exc.path.split(".", 1)[-1]
        raise SpecError(f"--max-{name}", exc.value, exc.message, with_value=False) from None


def fail(message: str) -> int:
    """Print one ``error:`` line (bounded in length) and return the exit status 2."""
    print(f"error: {shorten(' '.join(message.split()), 2000)}", file=sys.stderr)
    return 2
