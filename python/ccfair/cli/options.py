"""What the commands that run something share: the :class:`ccfair.Limits` of the ``--max-*``
options. Apart from :mod:`ccfair.cli.common`, so that the parser's path (``ccfair --help``)
does not import the limits.
"""

from __future__ import annotations

import argparse
from typing import Any

from ccfair.errors import SpecError
from ccfair.limits import Limits

__all__ = ["limits_of"]


def limits_of(args: argparse.Namespace) -> Limits:
    """The :class:`ccfair.Limits` of the --max-* options (defaults for those not given)."""
    given: dict[str, Any] = {
        name: getattr(args, f"max_{name}", None)
        for name in ("memory", "events", "runs")
        if getattr(args, f"max_{name}", None) is not None
    }
    try:
        return Limits(**given)
    except SpecError as exc:
        name = exc.path.split(".", 1)[-1]
        raise SpecError(f"--max-{name}", exc.value, exc.message, with_value=False) from None
