"""The exceptions of ccfair, and helpers to build their messages.

One error contract (docs/spec.md, "Errors"): every failure a user can cause is a
:class:`CcfairError`, whose ``str()`` is one line; the CLI prints it as one ``error:`` line and
exits with status 2. The subclasses:

- :class:`SpecError` (also a ``ValueError``): a scenario, sweep, argument or file is invalid;
  ``path`` names the field (``links[1].rate``, ``flows[0].cca``), ``value`` is the offending
  value as the user wrote it; ``str()`` is ``<path>: <message>``.
- :class:`LimitError` (a :class:`SpecError`): a run's resource estimate exceeds a limit; the
  path names the field that costs the most, the message the estimate and the limit.
- :class:`RunError` (also a ``RuntimeError``): a run stopped (the engine's event budget or
  progress guard, a panic of the engine, a lost Dask scheduler), naming the run.
- :class:`ResultsError` (also a ``ValueError``): a results directory or file is missing,
  foreign, damaged, of another schema version or cannot be written.
- ``ccfair.backends.kernel.host.KernelError``: the kernel backend.

Values in messages are shortened (:func:`show`), so a 1 MB value never makes a 1 MB message.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "CcfairError",
    "LimitError",
    "ResultsError",
    "RunError",
    "SpecError",
    "close_matches",
    "closest",
    "did_you_mean",
    "format_path",
    "one_line",
    "show",
]

#: Longest rendering of a user value in a message; longer ones are cut in the middle.
MAX_SHOWN_CHARS = 120
#: Longest message of a :class:`SpecError` (a backstop: values are already shortened).
MAX_MESSAGE_CHARS = 2000
#: Longest field path shown in a message (paths hold keys as the user wrote them).
MAX_PATH_CHARS = 2 * MAX_SHOWN_CHARS


class CcfairError(Exception):
    """Base of every error a user can cause; ``str()`` is one line.

    Example:
        >>> isinstance(SpecError("seed", -1, "is negative"), CcfairError)
        True
    """


class SpecError(CcfairError, ValueError):
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
        # One line, and bounded whatever the message quotes (a Rust error quoting a key
        # whole, too: each word is cut like a value).
        self.message = one_line(text)
        self.source = source
        self.errors: list[SpecError] = list(errors) or [self]
        super().__init__(self.__str__())

    def __str__(self) -> str:
        # A path holds the user's keys: a 10,000-character key is cut like a value.
        path = shorten(self.path, MAX_PATH_CHARS)
        return f"{path}: {self.message}" if path else self.message


#: How each limit is raised (by the words that name it in a message), for the hint of
#: :class:`LimitError`.
_RAISE_HINTS = {
    "memory limit": "--max-memory SIZE, or limits=ccfair.Limits(memory=SIZE)",
    "event limit": "--max-events N, or limits=ccfair.Limits(events=N)",
    "run limit": "--max-runs N, or limits=ccfair.Limits(runs=N)",
}


class LimitError(SpecError):
    """A run or sweep would exceed a resource limit (docs/spec.md, "Limits").

    Raised before anything runs; ``path`` names the field that costs the most and the
    message gives the estimate, the limit and how to raise it.

    Example:
        >>> str(LimitError("sample_interval", "the run needs an estimated 9.6 TB of memory "
        ...     "(time series ...), above the memory limit of 2.0 GB"))[:60]
        'sample_interval: the run needs an estimated 9.6 TB of memory'
    """

    def __init__(self, path: str, message: str) -> None:
        kind = next((k for k in _RAISE_HINTS if k in message), None)
        hint = f"; to run it anyway, raise the limit: {_RAISE_HINTS[kind]}" if kind else ""
        super().__init__(path, None, message + hint, with_value=False)


class RunError(CcfairError, RuntimeError):
    """A run started and could not finish: the engine stopped it (event budget, no
    progress), it panicked (a bug, reported with the run id), or the executor lost its
    workers or its Dask scheduler. The message is one line and names the run.

    Example:
        >>> str(RunError("run 3f2a: the simulation made no progress"))
        'run 3f2a: the simulation made no progress'
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def show(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """Render a user value the way it would appear in TOML/JSON: strings quoted, lists in
    brackets, dicts as JSON objects; longer than ``limit`` characters, cut in the middle.

    Example:
        >>> show("50Mbit/s"), show(-5), show(["s1", "s1"]), show(True)
        ('"50Mbit/s"', '-5', '["s1", "s1"]', 'true')
        >>> show("x" * 1000)[:20], len(show("x" * 1000)) < 200
        ('"xxxxxxxxxxxxxxxxxxx', True)
    """
    if isinstance(value, str) and len(value) > limit:
        # Cut before serialising: a huge string is never copied whole.
        half = limit // 2
        head = json.dumps(value[:half], ensure_ascii=False)[:-1]
        tail = json.dumps(value[-half:], ensure_ascii=False)[1:]
        return _encodable(f"{head}...({len(value)} chars)...{tail}")
    if isinstance(value, float) and not math.isfinite(value):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            text = _safe_repr(value)
    return _encodable(shorten(text, limit))


def _encodable(text: str) -> str:
    """``text`` with lone surrogates escaped (``\\ud800``): a message must print on any
    stream and be written to any UTF-8 file."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still shown
        return f"<{type(value).__name__}>"


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut in the middle to at most about ``limit`` characters, saying how long it was.

    Example:
        >>> shorten("a" * 300, 20)
        'aaaaaaaaaa...(300 chars)...aaaaaaaaaa'
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}...({len(text)} chars)...{text[-half:]}"


def one_line(message: str) -> str:
    """``message`` as the one line an error prints: whitespace (newlines included) as single
    spaces, every word longer than :data:`MAX_PATH_CHARS` (a path or value quoted whole,
    e.g. by the operating system or argparse) cut in the middle, and at most
    :data:`MAX_MESSAGE_CHARS` in all.

    Example:
        >>> one_line("x:\\n" + "a" * 1000 + ": File name too long")  # doctest: +ELLIPSIS
        'x: aaa...(1001 chars)...aaa: File name too long'
    """
    words = (shorten(w, MAX_PATH_CHARS) for w in message.split())
    return _encodable(shorten(" ".join(words), MAX_MESSAGE_CHARS))


def closest(name: Any, choices: Iterable[str]) -> str | None:
    """The choice ``name`` was probably meant to be: the same name in another case
    (``"CUBIC"`` -> ``"cubic"``), else the closest by spelling, compared in lower case;
    ``None`` when nothing is close.

    Example:
        >>> closest("CUBIC", ["reno", "cubic"]), closest("rum", ["run", "check"])
        ('cubic', 'run')
        >>> closest("xyz", ["run"]) is None
        True
    """
    if not isinstance(name, str):
        return None
    known = list(choices)
    by_lower = {c.lower(): c for c in reversed(known)}  # the first of equal names wins
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    hint = difflib.get_close_matches(name.lower()[:MAX_SHOWN_CHARS], list(by_lower), n=1)
    return by_lower[hint[0]] if hint else None


def close_matches(name: Any, choices: Iterable[str]) -> list[str]:
    """``[closest(name, choices)]``, or ``[]``: a drop-in for ``difflib.get_close_matches(name,
    choices, n=1)`` that also finds a name written in another case.

    Example:
        >>> close_matches("Dumbbell", ["dumbbell", "parking_lot"])
        ['dumbbell']
    """
    hint = closest(name, choices)
    return [] if hint is None else [hint]


def did_you_mean(name: Any, choices: Iterable[str]) -> str:
    """``'; did you mean "cubic"?'`` for a message about ``name``, or ``""``.

    Example:
        >>> "x" + did_you_mean("Reno", ["reno"])
        'x; did you mean "reno"?'
    """
    hint = closest(name, choices)
    return f"; did you mean {show(hint)}?" if hint is not None else ""


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


class ResultsError(CcfairError, ValueError):
    """A results directory or file is missing, foreign, damaged, of another schema version,
    or cannot be written.

    Example:
        >>> isinstance(ResultsError("out: is a file, not a directory"), CcfairError)
        True
    """
