"""A sweep's record in its results directory, ``sweep.json``: the spec, its hash and every
point with its run id. A sweep writes it, or checks that the one there is its own
(:func:`ccfair.store.directory.claim`), before it runs anything; readers (metrics, the
report) label the runs with it.

Example:
    >>> record_problem({"hash": "x"})
    'points: missing'
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.errors import ResultsError, show
from ccfair.spec.identity import RUN_ID
from ccfair.spec.sweep import Point, Sweep

__all__ = ["SWEEP_FILE", "read_sweep_record", "record_problem", "sweep_record"]

#: The record a sweep keeps in its results directory; single runs are not saved into such a
#: directory, so that a sweep's tables hold only its own points.
SWEEP_FILE = "sweep.json"
#: The format of the sweep's record.
_FORMAT = 1


def read_sweep_record(results_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``sweep.json`` record of a results directory, or None if there is none.

    Raises :class:`ResultsError` if it exists but cannot be read.

    Example:
        >>> read_sweep_record("results/harada-dumbbell")["hash"]  # doctest: +SKIP
        '2ab3890c117b3164'
    """
    path = Path(results_dir) / SWEEP_FILE
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        problem = record_problem(record)
        if problem is not None:
            raise ValueError(problem)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: cannot be read as a sweep record ({exc})") from None
    return record


_LABEL = bool | int | float | str


def record_problem(record: Any) -> str | None:
    """What is wrong with a sweep record (the JSON of ``sweep.json``, as
    :func:`sweep_record` makes it), or None: its shape, and that every point names a
    run id and takes a labelled value of each axis (damage a reader would otherwise hit
    deep inside pandas).

    Example:
        >>> record_problem({"hash": "x"})
        'points: missing'
    """
    if not isinstance(record, dict):
        return "not a JSON object"
    for key, kind, what in (
        ("points", list, "a list"),
        ("hash", str, "a string"),
        ("name", str, "a string"),
        ("sweep", dict, "an object"),
        ("axes", dict, "an object"),
        ("run_ids", list, "a list"),
        ("n_points", int, "an integer"),
    ):
        if key not in record:
            return f"{key}: missing"
        if not isinstance(record[key], kind) or isinstance(record[key], bool):
            return f"{key}: is not {what}"
    if record.get("format") != _FORMAT:
        return f"format: {show(record.get('format'))} is not this ccfair's ({_FORMAT})"
    axes = record["axes"]
    for key, labels in axes.items():
        if not isinstance(labels, list) or not all(isinstance(v, _LABEL) for v in labels):
            return f"axes.{key}: is not a list of labels"
    points = record["points"]
    if record["n_points"] != len(points):
        return f"n_points: {record['n_points']} for {len(points)} points"
    for i, p in enumerate(points):
        where = f"points[{i}]"
        if not isinstance(p, dict):
            return f"{where}: is not an object"
        if not (isinstance(p.get("run_id"), str) and RUN_ID.fullmatch(p["run_id"])):
            return f"{where}.run_id: is not a run id"
        for key in ("index", "rep", "seed"):
            if not isinstance(p.get(key), int) or isinstance(p.get(key), bool):
                return f"{where}.{key}: is not an integer"
        baseline = p.get("baseline")
        if baseline is not None and not isinstance(baseline, str):
            return f"{where}.baseline: is neither null nor an algorithm"
        params = p.get("params")
        if not isinstance(params, dict) or set(params) != set(axes):
            return f"{where}.params: does not give a value of each axis ({', '.join(axes)})"
        for key, label in params.items():
            if not isinstance(label, _LABEL):
                return f"{where}.params.{key}: is not a label"
            if baseline is None and label not in axes[key]:
                return f"{where}.params.{key}: {show(label)} is not a label of the axis"
    if record["run_ids"] != list(dict.fromkeys(p["run_id"] for p in points)):
        return "run_ids: are not the points' run ids"
    return None


def sweep_record(sweep: Sweep, points: list[Point]) -> dict[str, Any]:
    """The record of ``sweep`` expanded into ``points`` (what ``sweep.json`` holds)."""
    return {
        "format": _FORMAT,
        "name": sweep.name,
        "hash": sweep.spec_hash(),
        "sweep": sweep.to_dict(),
        "axes": sweep.axis_labels(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "ccfair_version": _core.__version__,
        "git_revision": _core.__git_revision__,
        "n_points": len(points),
        "run_ids": list(dict.fromkeys(p.run_id for p in points)),
        "points": [p.record() for p in points],
    }
