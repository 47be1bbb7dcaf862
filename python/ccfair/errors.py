"""The one exception a bad scenario spec raises, and helpers to build its message.

Every problem found while parsing, validating or resolving a scenario is a :class:`SpecError`:
a ``ValueError`` whose ``path`` names the field (``links[1].rate``, ``flows[0].cca``), whose
``value`` is the offending value as the user wrote it, and whose ``str()`` is one line,
``<path>: <message>``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["SpecError", "format_path", "show"]


class SpecError(ValueError):
    """A scenario spec is invalid.

    Attributes:
        path: dotted field path with list indices as written, e.g. ``"links[1].rate"``;
            ``""`` for the document itself (e.g. a TOML syntax error).
        value: the offending value (``None`` when there is none, e.g. a missing key).
        message: the explanation without the path.
        source: the file the spec came from, when known (set by ``Scenario.from_toml``).
        errors: every problem found when several were detected at once (the first is this one).

    Example:
        >>> e = SpecError("links[1].rate", -5, 'is not a positive rate (e.g. "50Mbit/s")')
        >>> str(e)
        'links[1].rate: -5 is not a positive rate (e.g. "50Mbit/s")'
    """

    def __init__(
        self,
        path: str,
        value: Any,
        message: str,
        *,
        with_value: bool = True,
        errors: Sequence[SpecError] = (),
        source: str | None = None,
    ) -> None:
        """Build the error; the message is prefixed by ``show(value)`` unless ``with_value``
        is false (then the message must already mention the value, if there is one)."""
        text = f"{show(value)} {message}" if with_value else message
        self.path = path
        self.value = value
        self.message = " ".join(text.split())  # one line
        self.source = source
        self.errors: list[SpecError] = list(errors) or [self]
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def show(value: Any) -> str:
    """Render a user value the way it would appear in TOML/JSON: strings quoted, lists in
    brackets, dicts as JSON objects.

    Example:
        >>> show("50Mbit/s"), show(-5), show(["s1", "s1"]), show(True)
        ('"50Mbit/s"', '-5', '["s1", "s1"]', 'true')
    """
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def format_path(loc: Sequence[str | int]) -> str:
    """Turn a location tuple into a dotted path with list indices.

    Example:
        >>> format_path(("links", 1, "rate"))
        'links[1].rate'
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class ResultsError(ValueError):
    """A results directory or file is missing, foreign or damaged."""
