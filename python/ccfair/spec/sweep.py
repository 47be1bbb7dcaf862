"""Sweeps: a base scenario, a grid of parameters, repetitions and filters, expanded into runs.

A sweep spec (TOML, a dict of the same shape, or :class:`Sweep`) has a ``[base]`` scenario and
a ``[grid]`` of parameters, each with the list of values to take::

    name = "buffers"
    repetitions = 2                       # seeds base_seed, base_seed + 1, ...
    filters = ["not (delay == '100ms' and alpha > 8)"]

    [base]                                # a builder and its arguments ...
    builder = "dumbbell"
    duration = "30s"
    sample_interval = "100ms"

    [grid]
    ccas = [["reno", "bbr"], ["cubic", "bbr"]]   # derived: the flows' algorithms
    delay = ["2ms", "18ms"]                      # derived: bottleneck one-way delay
    alpha = [0.5, 1, 2, 4]                       # derived: bottleneck buffer in BDP
    "links.bottleneck.loss" = [0.0, 0.001]       # any scenario field by dotted path

The base is either a builder (``builder = "dumbbell"`` or ``"parking_lot"`` plus the builder's
keyword arguments, see docs/spec.md), a scenario table of the TOML schema, or
``file = "scenario.toml"`` (relative to the sweep file). Grid keys are derived parameters
(:data:`ccfair.spec.grid.DERIVED`), builder arguments, or dotted paths into the scenario
(``duration``, ``links.bottleneck.delay``, ``links[2].buffer.bdp``, ``flows.flow2.cca``,
``flows.*.cca_params.bw_rtts``, ``tcp.sack``). A grid axis given as a table names its values
(``"params.bbr" = {stock = {}, expire = {rtprop_trigger = "rtt_ratio"}}``); the names label the
points in tables and figures.

Expansion is deterministic: the cartesian product of the axes in the order written (the last
axis varies fastest), repetitions innermost. Every point is validated before anything runs, and
gets the content-hash run id of its normalised scenario (:func:`ccfair.spec.identity.run_id_of`),
so two points that describe the same run share one id and run once. See docs/experiments.md.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccfair import backends
from ccfair.errors import LimitError, SpecError, close_matches, show
from ccfair.limits import MAX_REPETITIONS, Limits, as_limits, check, check_runs
from ccfair.spec import builders
from ccfair.spec.filters import Filter, compile_filter, evaluate
from ccfair.spec.grid import (
    Label,
    apply_params,
    apply_table_derived,
    axis,
    builder_kwargs,
    classify,
    homogeneous,
    parse_path,
    set_path,
    value_label,
)
from ccfair.spec.resolved import Resolved
from ccfair.spec.scenario import Scenario, resolution_deferred
from ccfair.spec.sweep_base import sweep_base
from ccfair.spec.toml import check_file_name, check_nesting, load_toml, read_spec_file
from ccfair.units import plain

__all__ = ["PRESET_NAMES", "Point", "Sweep"]

#: The presets a sweep may name (``preset = "..."``: the report draws that preset's figures):
#: the names of :data:`ccfair.presets.PRESETS`, which sit above the sweeps that name them
#: (tests/test_presets.py checks that the two agree).
PRESET_NAMES = (
    "harada-dumbbell",
    "harada-2hop",
    "harada-10hop",
    "ogino-copa",
    "ogawa-bbr-fairness",
    "katsumata-rtprop",
    "harada-aqm",
)

_SWEEP_KEYS = (
    "name",
    "description",
    "base",
    "grid",
    "repetitions",
    "filters",
    "baselines",
    "backend",
    "bottlenecks",
    "preset",
)


# --------------------------------------------------------------------------------------------
# Points


@dataclass(frozen=True)
class Point:
    """One run of a sweep.

    Attributes:
        index: position in the expansion (0-based).
        params: grid key -> label of the value this point takes.
        rep: repetition number (0-based).
        seed: the scenario seed of this repetition.
        baseline: for a baseline point added by ``baselines = true``, the algorithm every
            flow runs; ``None`` for grid points.
        scenario: the validated scenario (resolved once: :attr:`resolved`).
        run_id: content hash of the normalised scenario and backend.
    """

    index: int
    params: dict[str, Label]
    rep: int
    seed: int
    baseline: str | None
    scenario: Scenario
    run_id: str

    @property
    def resolved(self) -> Resolved:
        """The point's resolved record, as its expansion resolved it (kept by the scenario):
        what a worker runs."""
        return self.scenario.resolve()

    def record(self) -> dict[str, Any]:
        """The JSON record of this point stored in ``sweep.json``."""
        return {
            "index": self.index,
            "run_id": self.run_id,
            "rep": self.rep,
            "seed": self.seed,
            "baseline": self.baseline,
            "params": self.params,
        }


# --------------------------------------------------------------------------------------------
# Labels and values


def _check_repetitions_distinct(points: list[Point]) -> None:
    """Refuse a grid whose points share a run as different repetitions: repetition r runs
    seed + r, so a seed axis such as [1, 2] with 2 repetitions makes seed 2 both point 1's
    second repetition and point 2's first, and their samples are not independent. (Points
    that share a run as the same repetition, such as a named value equal to the default,
    are one scenario under two labels, and fine.)"""
    first: dict[str, Point] = {}
    for p in points:
        q = first.setdefault(p.run_id, p)
        if q.rep != p.rep:
            raise SpecError(
                "repetitions",
                None,
                f"make points {show(q.params)} (repetition {q.rep}) and {show(p.params)} "
                f"(repetition {p.rep}) the same run (seed {p.seed}): repetition r runs seed "
                "+ r, so seeds on a grid axis must be at least the number of repetitions "
                "apart",
                with_value=False,
            )


# --------------------------------------------------------------------------------------------
# The sweep


@dataclass
class Sweep:
    """A sweep spec: base scenario, grid, repetitions, filters.

    Build one with :meth:`from_toml`, :meth:`from_toml_str` or :meth:`from_dict`; they check
    the spec's shape. :meth:`expand` validates every point and returns the runs.

    Example:
        >>> sw = Sweep.from_dict({
        ...     "name": "demo",
        ...     "base": {"builder": "dumbbell", "duration": "2s"},
        ...     "grid": {"ccas": [["reno", "cubic"]], "alpha": [1, 4]},
        ...     "repetitions": 2,
        ... })
        >>> [(p.params["alpha"], p.rep, p.seed) for p in sw.expand()]
        [(1, 0, 1), (1, 1, 2), (4, 0, 1), (4, 1, 2)]
    """

    name: str
    base: dict[str, Any]
    grid: list[tuple[str, list[tuple[Label, Any]]]]
    repetitions: int = 1
    filters: list[str] = field(default_factory=list)
    baselines: bool = False
    backend: str = "sim"
    bottlenecks: list[str] | None = None
    preset: str | None = None
    description: str = ""

    # ---- ways in ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> Sweep:
        """Check the shape of a sweep dict (TOML schema) and build the spec.

        ``source`` (the sweep file) anchors a relative ``base.file``.
        """
        if not isinstance(data, Mapping):
            raise SpecError("", data, "is not a sweep table (a dict of keys)")
        data = plain(data)  # numpy's numbers and arrays as Python's
        check_nesting(data, "", toml_values=True)  # a sweep's values label points as JSON
        _check_sweep_keys(data)
        name = data.get("name", "sweep")
        # The name is the default results directory (results/<name>): a file name.
        check_file_name(name, "name")
        base = sweep_base(data.get("base"), source)
        grid = _grid(data.get("grid"))
        reps = _repetitions(data.get("repetitions", 1))
        filters = _filters(data.get("filters", []))
        baselines = data.get("baselines", False)
        if not isinstance(baselines, bool):
            raise SpecError("baselines", baselines, "is not true or false")
        backend = data.get("backend", "sim")
        backends.get(backend, "backend")
        bottlenecks = _bottlenecks(data.get("bottlenecks"), base)
        preset = data.get("preset")
        if preset is not None:
            _check_preset(preset)
        description = data.get("description", "")
        if not isinstance(description, str):
            raise SpecError("description", description, "is not a string")
        sweep = cls(
            name=name,
            base=base,
            grid=grid,
            repetitions=reps,
            filters=filters,
            baselines=baselines,
            backend=backend,
            bottlenecks=bottlenecks,
            preset=preset,
            description=description,
        )
        sweep._check_keys()
        for i, text in enumerate(sweep.filters):
            compile_filter(i, text, sweep.keys)
        return sweep

    @classmethod
    def from_toml_str(cls, text: str, *, source: str | None = None) -> Sweep:
        """Parse a sweep spec from TOML text."""
        try:
            data = load_toml(text)
        except tomllib.TOMLDecodeError as exc:
            raise SpecError("", None, f"invalid TOML: {exc}", with_value=False) from None
        return cls.from_dict(data, source=source)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Sweep:
        """Read a sweep spec file.

        Example:
            >>> Sweep.from_toml("scenarios/sweep_dumbbell.toml").name  # doctest: +SKIP
            'dumbbell-buffers'
        """
        p = Path(path)
        text = read_spec_file(p, "sweep")
        try:
            return cls.from_toml_str(text, source=str(p))
        except SpecError as exc:
            exc.source = str(p)
            raise

    # ---- ways out ---------------------------------------------------------------------

    @property
    def keys(self) -> list[str]:
        """The grid keys, in order."""
        return [k for k, _ in self.grid]

    def axis_labels(self) -> dict[str, list[Label]]:
        """Grid key -> labels of its values, in order (the order figures use)."""
        return {k: [label for label, _ in items] for k, items in self.grid}

    def to_dict(self) -> dict[str, Any]:
        """The canonical spec (what ``sweep.json`` records and :meth:`spec_hash` hashes).
        ``Sweep.from_dict(sw.to_dict())`` is the same sweep."""
        d: dict[str, Any] = {
            "name": self.name,
            "base": self.base,
            "grid": {k: {str(label): v for label, v in items} for k, items in self.grid},
            "repetitions": self.repetitions,
            "filters": self.filters,
            "baselines": self.baselines,
            "backend": self.backend,
        }
        if self.bottlenecks is not None:
            d["bottlenecks"] = self.bottlenecks
        if self.preset is not None:
            d["preset"] = self.preset
        if self.description:
            d["description"] = self.description
        for k, items in self.grid:
            if all(value_label(v) == label for label, v in items):
                d["grid"][k] = [v for _, v in items]
        return d

    def spec_hash(self) -> str:
        """Content hash of the canonical spec (without the description).

        Example:
            >>> a = Sweep.from_dict({"base": {"builder": "dumbbell"}, "grid": {"alpha": [1]}})
            >>> a.spec_hash() == Sweep.from_dict(a.to_dict()).spec_hash()
            True
        """
        d = self.to_dict()
        d.pop("description", None)
        # Grid order matters (it is the expansion order): hash it as a list of pairs.
        d["grid"] = [[k, [[label, v] for label, v in items]] for k, items in self.grid]
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    # ---- expansion --------------------------------------------------------------------

    def _builder(self) -> str | None:
        return self.base.get("builder")

    def _check_keys(self) -> None:
        builder = self._builder()
        for key in self.keys:
            classify(key, builder)

    def grid_runs(self) -> int:
        """Runs of the grid before filters and baselines: the product of the axis lengths
        times the repetitions (computed, not expanded).

        Example:
            >>> Sweep.from_dict({"base": {"builder": "dumbbell"}, "grid": {"alpha": [1, 2]},
            ...                  "repetitions": 3}).grid_runs()
            6
        """
        n = self.repetitions
        for _, items in self.grid:
            n *= len(items)
        return n

    def filtered_runs(self) -> int:
        """Runs of the grid its filters keep (before baselines), from the axes' labels and
        values alone: no point is built.

        Example:
            >>> Sweep.from_dict({"base": {"builder": "dumbbell"}, "grid": {"alpha": [1, 2, 4]},
            ...                  "filters": ["alpha > 1"], "repetitions": 2}).filtered_runs()
            4
        """
        if not self.filters:
            return self.grid_runs()
        names = self.keys
        compiled = [compile_filter(i, t, names) for i, t in enumerate(self.filters)]
        kept = 0
        for combo in itertools.product(*(items for _, items in self.grid)):
            labels = {k: label for k, (label, _) in zip(names, combo, strict=True)}
            values = {k: value for k, (_, value) in zip(names, combo, strict=True)}
            kept += self._keep(compiled, labels, values)
        return kept * self.repetitions

    def expand(self, limits: Limits | dict[str, Any] | None = None) -> list[Point]:
        """Every run of the sweep, validated, in expansion order.

        Raises :class:`SpecError` naming the grid point and the field if any point is
        invalid, or if the filters leave no point, and :class:`~ccfair.errors.LimitError` if
        the grid has more runs than ``limits.runs`` (checked before expanding) or a point's
        resource estimate exceeds a limit.
        """
        lim = as_limits(limits)
        check_runs(self.grid_runs(), lim, "grid")
        names = self.keys
        compiled = [compile_filter(i, t, names) for i, t in enumerate(self.filters)]
        points: list[Point] = []
        baseline_points: list[Point] = []
        seen_baselines: set[str] = set()
        axes = [items for _, items in self.grid]
        for combo in itertools.product(*axes):
            labels = {k: label for k, (label, _) in zip(names, combo, strict=True)}
            values = {k: value for k, (_, value) in zip(names, combo, strict=True)}
            if compiled and not self._keep(compiled, labels, values):
                continue
            for rep in range(self.repetitions):
                doc = self._build(values, labels)
                seed = int(doc.get("seed", 1)) + rep
                doc["seed"] = seed
                sc = _validated(doc, labels, rep)
                resolved = sc.resolve()
                _check_estimate(resolved, lim, labels, rep)
                rid = resolved.identity_json.run_id(self.backend)
                points.append(Point(len(points), labels, rep, seed, None, sc, rid))
                if self.baselines:
                    for cca, bdoc in homogeneous(doc):
                        bsc = _validated(bdoc, {**labels, "baseline": cca}, rep)
                        bresolved = bsc.resolve()
                        _check_estimate(bresolved, lim, {**labels, "baseline": cca}, rep)
                        brid = bresolved.identity_json.run_id(self.backend)
                        if brid in seen_baselines:
                            continue
                        seen_baselines.add(brid)
                        blabels = dict(labels)
                        if "ccas" in blabels:  # say what the baseline runs
                            blabels["ccas"] = value_label([f["cca"] for f in bdoc["flows"]])
                        baseline_points.append(Point(0, blabels, rep, seed, cca, bsc, brid))
        if not points:
            raise SpecError(
                "filters",
                self.filters,
                "remove every point of the grid; nothing would run",
            )
        self._check_params_used(points)
        _check_repetitions_distinct(points)
        check_runs(
            len({p.run_id for p in points} | {b.run_id for b in baseline_points}), lim, "grid"
        )
        for bp in baseline_points:
            points.append(
                Point(len(points), bp.params, bp.rep, bp.seed, bp.baseline, bp.scenario, bp.run_id)
            )
        return points

    def _keep(
        self, compiled: list[Filter], labels: dict[str, Label], values: dict[str, Any]
    ) -> bool:
        env: dict[str, Any] = {}
        named = {k for k, items in self.grid if any(value_label(v) != lab for lab, v in items)}
        for k in self.keys:
            env[k] = labels[k] if k in named else values[k]
        return all(evaluate(flt, env) for flt in compiled)

    def _check_params_used(self, points: list[Point]) -> None:
        """A ``params.<cca>`` axis must change some run: some point runs ``<cca>``."""
        for key in self.keys:
            if not key.startswith("params."):
                continue
            cca = key.split(".", 1)[1]
            if not any(f.cca == cca for p in points for f in p.scenario.flows):
                raise SpecError(
                    f"grid.{key}",
                    None,
                    f"sets parameters of {show(cca)}, but no flow of any point runs it: the "
                    "axis would change nothing",
                    with_value=False,
                )

    def _build(self, values: dict[str, Any], labels: dict[str, Label]) -> dict[str, Any]:
        """The scenario dict of one grid point (not yet validated)."""
        builder = self._builder()
        kinds = {k: classify(k, builder) for k in values}
        if builder is not None:
            kwargs = {k: v for k, v in self.base.items() if k != "builder"}
            derived = {k: v for k, v in values.items() if kinds[k] in ("alias", "arg", "derived")}
            kwargs = builder_kwargs(builder, kwargs, derived, labels)
            try:
                # Only its dict is kept: the point is validated whole, once (_validated).
                with resolution_deferred():
                    doc = builders.get(builder).call(kwargs, "").to_dict()
            except SpecError as exc:
                raise _at_point(exc, labels) from None
        else:
            doc = json.loads(json.dumps(self.base["scenario"]))
            for k, v in values.items():
                if kinds[k] in ("alias", "derived"):
                    apply_table_derived(doc, k, v, self.bottlenecks, labels)
        for k, v in values.items():
            if kinds[k] == "params":
                apply_params(doc, k.split(".", 1)[1], v, labels)
        for k, v in values.items():
            if kinds[k] == "path":
                set_path(doc, k, parse_path(k), json.loads(json.dumps(v)))
        return doc


def _check_sweep_keys(data: Mapping[str, Any]) -> None:
    """Refuse a key a sweep does not have, naming the nearest one it has: a misspelt key
    would otherwise be ignored without a word."""
    for key in data:
        if key not in _SWEEP_KEYS:
            hint = close_matches(key, _SWEEP_KEYS)
            more = f'; did you mean "{hint[0]}"?' if hint else ";"
            raise SpecError(
                key,
                data[key],
                f"unknown key {show(key)} (value {show(data[key])}){more} "
                f"allowed keys: {', '.join(_SWEEP_KEYS)}",
                with_value=False,
            )


def _grid(raw_grid: Any) -> list[tuple[str, list[tuple[Label, Any]]]]:
    """The ``[grid]``'s axes in the order written, which is the expansion's order."""
    if raw_grid is None:
        raise SpecError(
            "grid", None, "is missing; a sweep needs a [grid] of parameters", with_value=False
        )
    if not isinstance(raw_grid, Mapping):
        raise SpecError("grid", raw_grid, "is not a table of parameter = [values]")
    if not raw_grid:
        raise SpecError(
            "grid",
            {},
            "is empty; give at least one parameter with a list of values "
            '(e.g. alpha = [1, 2]); for a single scenario use "ccfair run"',
        )
    return [(str(k), axis(str(k), v)) for k, v in raw_grid.items()]


def _repetitions(reps: Any) -> int:
    """The sweep's ``repetitions``, bounded because each one multiplies the runs."""
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise SpecError("repetitions", reps, "is not a positive integer")
    if reps > MAX_REPETITIONS:
        raise SpecError("repetitions", reps, f"is above the maximum of {MAX_REPETITIONS}")
    return reps


def _filters(filters: Any) -> list[str]:
    """The sweep's ``filters`` as a list (one expression may be given alone); each is
    compiled once the grid keys are known."""
    if isinstance(filters, str):
        filters = [filters]
    if not isinstance(filters, list):
        raise SpecError("filters", filters, "is not a list of expressions")
    return list(filters)


def _bottlenecks(bottlenecks: Any, base: Mapping[str, Any]) -> list[str] | None:
    """The links a scenario-table base's delay, rate, loss and alpha axes set (None: the
    default choice); a builder base knows its own."""
    if bottlenecks is not None and (
        not isinstance(bottlenecks, list) or not all(isinstance(b, str) for b in bottlenecks)
    ):
        raise SpecError("bottlenecks", bottlenecks, "is not a list of link names")
    if bottlenecks == []:
        # No link to change: delay, rate, loss and alpha axes would change nothing.
        raise SpecError(
            "bottlenecks",
            bottlenecks,
            "names no link; list the links the grid's delay, rate, loss and alpha set "
            "(or remove it: links with a BDP buffer, else the one named bottleneck)",
        )
    if bottlenecks is not None and "builder" in base:
        raise SpecError(
            "bottlenecks",
            bottlenecks,
            f"applies to a scenario-table base; the {base['builder']} builder knows its "
            "bottleneck links (remove bottlenecks, or set links by path in the grid)",
        )
    return bottlenecks


def _check_estimate(resolved: Resolved, lim: Limits, labels: Mapping[str, Any], rep: int) -> None:
    try:
        check(resolved.engine_spec, lim)
    except LimitError as exc:
        # The point goes before the hint ("; to run it anyway, raise the limit: ..."), which
        # LimitError adds again from the reason.
        reason = exc.message.partition("; to run it anyway")[0]
        raise LimitError(
            exc.path, f"{reason} (at grid point {show({**labels, 'rep': rep})})"
        ) from None


def _check_preset(preset: Any) -> None:
    if not isinstance(preset, str) or preset not in PRESET_NAMES:
        hint = close_matches(str(preset), list(PRESET_NAMES))
        more = f'; did you mean "{hint[0]}"?' if hint else ""
        raise SpecError(
            "preset", preset, f"is not a preset{more} (presets: {', '.join(PRESET_NAMES)})"
        )


def _at_point(exc: SpecError, labels: Mapping[str, Label]) -> SpecError:
    out = SpecError(
        exc.path,
        exc.value,
        f"{exc.message} (at grid point {show(dict(labels))})",
        with_value=False,
    )
    return out


def _validated(doc: dict[str, Any], labels: Mapping[str, Any], rep: int) -> Scenario:
    try:
        return Scenario.from_dict(doc)
    except SpecError as exc:
        raise _at_point(exc, {**labels, "rep": rep}) from None
