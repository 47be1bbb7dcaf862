"""Argument checks shared by the scripts that time two ccfair trees against each other
(benches/first_run.py, benches/handover_compare.py): one line naming the argument, before
anything runs."""

from __future__ import annotations

from pathlib import Path


def tree_error(name: str, path: str) -> str | None:
    """Why ``path`` (a tree's ``python`` directory, given as ``name``) cannot be timed, or None.

    Example:
        >>> tree_error("old", "/nonexistent")
        'old: /nonexistent is not the python directory of a ccfair tree (no ccfair/__init__.py)'
    """
    if not (Path(path) / "ccfair" / "__init__.py").is_file():
        why = "is not the python directory of a ccfair tree (no ccfair/__init__.py)"
        return f"{name}: {path} {why}"
    return None


def count_error(name: str, value: int, most: int) -> str | None:
    """Why ``value`` is not a count from 1 to ``most``, or None.

    Example:
        >>> count_error("--rounds", 0, 1000)
        '--rounds: 0 is not a count from 1 to 1000'
    """
    if not 1 <= value <= most:
        return f"{name}: {value} is not a count from 1 to {most}"
    return None
