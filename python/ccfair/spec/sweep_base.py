"""A sweep's base (``[base]``, :class:`ccfair.spec.sweep.Sweep`): a builder and its
arguments, a scenario table of the TOML schema, or ``file = PATH`` (relative to the sweep
file), checked once and kept in the form every grid point starts from: the builder's
arguments, or the scenario's normalised dict.

Example:
    >>> sweep_base({"builder": "dumbbell", "duration": "2s"}, None)
    {'builder': 'dumbbell', 'duration': '2s'}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccfair.errors import SpecError, close_matches, show
from ccfair.spec import builders
from ccfair.spec.scenario import Scenario
from ccfair.spec.toml import read_spec_file

__all__ = ["sweep_base"]


def sweep_base(raw: Any, source: str | None) -> dict[str, Any]:
    """The sweep's base as it is kept: a builder and its arguments, or a scenario table
    (read from ``file``, checked whole)."""
    if raw is None:
        raise SpecError(
            "base",
            None,
            'is missing; give [base] builder = "dumbbell" or a scenario',
            with_value=False,
        )
    if isinstance(raw, str):
        raw = {"file": raw}
    if isinstance(raw, Scenario):
        return {"scenario": raw.to_dict()}
    if not isinstance(raw, Mapping):
        raise SpecError("base", raw, "is not a table (a builder, a scenario or file = PATH)")
    raw = dict(raw)
    if "file" in raw:
        return _file_base(raw, source)
    if "builder" in raw:
        return _builder_base(raw)
    if "scenario" in raw and len(raw) == 1:
        raw = raw["scenario"]
    try:
        sc = Scenario.from_dict(raw)
    except SpecError as exc:
        raise SpecError(
            f"base.{exc.path}" if exc.path else "base", exc.value, exc.message, with_value=False
        ) from None
    return {"scenario": sc.to_dict()}


def _file_base(raw: dict[str, Any], source: str | None) -> dict[str, Any]:
    """A ``base.file`` scenario, relative to the sweep file, read now so that its errors
    name the file."""
    if len(raw) > 1:
        raise SpecError("base", raw, "has keys next to file; give only file = PATH")
    if not isinstance(raw["file"], str) or not raw["file"]:
        raise SpecError("base.file", raw["file"], "is not a file name")
    path = Path(raw["file"])
    if source is not None and not path.is_absolute():
        path = Path(source).parent / path
    try:
        exists = path.exists()
    except OSError as exc:  # e.g. a name too long for the file system
        raise SpecError("base.file", raw["file"], f"cannot be read ({exc.strerror})") from None
    if not exists:
        raise SpecError("base.file", str(raw["file"]), f"does not exist (looked at {path})")
    text = read_spec_file(path, "base.file")
    try:
        return {"scenario": Scenario.from_toml_str(text, source=str(path)).to_dict()}
    except SpecError as exc:
        raise SpecError(
            f"base.file ({path}): {exc.path}" if exc.path else f"base.file ({path})",
            exc.value,
            exc.message,
            with_value=False,
        ) from None


def _builder_base(raw: dict[str, Any]) -> dict[str, Any]:
    """A builder base, kept as its arguments: each point calls the builder with the grid's
    values."""
    b = builders.get(raw["builder"], "base.builder")
    params = b.parameters()
    for key in raw:
        if key != "builder" and key not in params:
            hint = close_matches(key, params)
            more = f'; did you mean "{hint[0]}"?' if hint else ";"
            raise SpecError(
                f"base.{key}",
                raw[key],
                f"{show(key)} (value {show(raw[key])}) is not an argument of "
                f"{b.name}(){more} arguments: {', '.join(params)}",
                with_value=False,
            )
    # Check the base builds on its own, so a typo is reported against [base].
    b.call({k: v for k, v in raw.items() if k != "builder"}, "base.")
    return dict(raw)
