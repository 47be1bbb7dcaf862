"""pydantic's validation errors as :class:`~ccfair.errors.SpecError`: one error naming the
field path and the bad value (with the others counted), unknown keys with the closest allowed
key, wrong types in words.

Example:
    >>> from ccfair.spec.parts import Measure
    >>> Measure(start="soon")
    Traceback (most recent call last):
    ccfair.errors.SpecError: start: "soon" is not a duration (e.g. "18ms", "0.5s", "2us", \
"100ns", or a number in seconds)
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ccfair.errors import SpecError, close_matches, format_path, show

__all__ = ["spec_error_of"]

_TYPE_WORDS = {
    "int_type": "is not an integer",
    "int_parsing": "is not an integer",
    "int_from_float": "is not an integer",
    "float_type": "is not a number",
    "float_parsing": "is not a number",
    "finite_number": "is not a finite number",
    "string_type": "is not a string",
    "list_type": "is not a list",
    "dict_type": "is not a table (a dict of keys)",
    "model_type": "is not a table (a dict of keys)",
    "model_attributes_type": "is not a table (a dict of keys)",
    "bool_type": "is not a boolean",
}


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class that holds the keys at ``loc`` (for listing allowed keys)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(part)
        if info is None:
            return None
        current = _find_model(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _find_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _find_model(arg)
        if found is not None:
            return found
    return None


def spec_error_of(exc: ValidationError, model: type[BaseModel]) -> SpecError:
    """The one :class:`SpecError` of pydantic's errors validating ``model``."""
    errors = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        path = format_path(loc)
        value = err.get("input")
        kind = err["type"]
        if kind == "value_error":
            errors.append(SpecError(path, value, str(err["ctx"]["error"]), with_value=False))
        elif kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = list(parent.model_fields) if parent is not None else []
            hint = close_matches(str(loc[-1]), allowed)
            did = f"did you mean {show(hint[0])}? " if hint else ""
            errors.append(
                SpecError(
                    path,
                    value,
                    f"unknown key {show(loc[-1])} (value {show(value)}); {did}"
                    f"allowed keys: {', '.join(allowed)}",
                    with_value=False,
                )
            )
        elif kind == "missing":
            errors.append(SpecError(path, None, "required key is missing", with_value=False))
        elif kind in ("too_short", "too_long"):
            ctx = err.get("ctx", {})
            want = (
                "two node names"
                if loc[-1] == "between"
                else (
                    f"at least {ctx.get('min_length')} item(s)"
                    if kind == "too_short"
                    else f"at most {ctx.get('max_length')} item(s)"
                )
            )
            errors.append(
                SpecError(path, value, f"has {ctx.get('actual_length')} item(s); expected {want}")
            )
        elif kind in _TYPE_WORDS:
            errors.append(SpecError(path, value, _TYPE_WORDS[kind]))
        else:
            errors.append(SpecError(path, value, f"is invalid: {err['msg']}"))
    first = errors[0]
    if len(errors) == 1:
        return first
    more = f" (and {len(errors) - 1} more: " + "; ".join(str(e) for e in errors[1:4])
    more += ", ...)" if len(errors) > 4 else ")"
    return SpecError(first.path, first.value, first.message + more, with_value=False, errors=errors)
