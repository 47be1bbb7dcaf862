"""``ccfair validate``: the fidelity study of the simulator against Linux (see
:mod:`ccfair.validate`): run every point on both backends (the kernel's runs saved as they
finish, so that an interrupted study resumes), compare, draw and write the tables and the
report section.

Example:
    >>> v = validate(preset="harada-dumbbell", quick=True, out="validation")  # doctest: +SKIP
    >>> v.summary[["pair", "points", "median_abs_diff_pp", "max_abs_diff_pp"]]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ccfair import backends
from ccfair.backends.base import Backend
from ccfair.errors import SpecError
from ccfair.execution.runs import run
from ccfair.execution.threads import run_in_threads
from ccfair.results.run import RunResult, load
from ccfair.spec.identity import run_id_of
from ccfair.spec.scenario import Scenario
from ccfair.store.directory import finished_run_ids
from ccfair.validate.compare import (
    Validation,
    compare,
    compare_links,
    flagged_points,
    summarize_link_points,
    summarize_pairs,
    summarize_points,
)
from ccfair.validate.figures import agreement_figure, diff_heatmaps, slug, timeseries_figure
from ccfair.validate.markdown import report_section
from ccfair.validate.points import (
    MODEL_BACKEND,
    REFERENCE_BACKEND,
    VPoint,
    kernel_variant,
    pair_of,
    sim_tcp_label,
    sim_variant,
    validation_points,
    with_duration,
    with_kernel,
)


def validate(
    inputs: Sequence[Scenario | str | os.PathLike[str]] = (),
    *,
    preset: str | None = None,
    quick: bool = False,
    out: str | os.PathLike[str] | None = "validation",
    duration: str | None = None,
    match_hz: bool = True,
    retries: int = 2,
    rerun_flagged: bool = True,
    timeseries_figures: int = 4,
    command: str | None = None,
    progress: Callable[[str], None] | None = None,
    finished_only: bool = False,
    sim_tcp: Mapping[str, Any] | None = None,
    reference: str = REFERENCE_BACKEND,
) -> Validation:
    """Run every point of ``inputs`` (scenarios, scenario files, sweep files) and of
    ``preset`` (``quick``: its reduced grid) on both backends and compare them.

    ``duration`` overrides every scenario's duration (the measurement window then spans the
    whole run). Kernel runs happen one at a time, in real time; a kernel run the self-checks
    flag is run again up to ``retries`` times; a finished kernel run that was flagged is run
    again unless ``rerun_flagged`` is False (it is then reported as flagged). With ``out``,
    every run is saved to ``out/results`` as it finishes (a rerun of the same study skips
    finished runs and reruns flagged ones), and the study writes
    ``out/validate_{runs,points,summary}.{csv,parquet}``, figures in ``out/figures`` (the
    agreement of shares, per-pair heatmaps of the difference over two grid axes, and
    overlaid time series of the ``timeseries_figures`` points that differ most) and the
    report section ``out/validate.md``.

    ``finished_only`` compares only the points whose kernel runs are already in
    ``out/results`` (flagged ones too, reported as such) and starts no kernel run: a study
    whose kernel side ran elsewhere, or was interrupted, can be analysed on any machine,
    without root. The simulator then runs at the HZ those kernel runs recorded.

    ``sim_tcp`` sets TCP options on the simulator's side only, where a point does not set
    them itself: the turnaround measured on the testbed (``{"host_latency":``
    :func:`measured_host_latency` ``(...)}``, docs/model.md, "Connections and host
    latency"), or a model to test against Linux's own behaviour, such as
    ``{"tso": "linux"}`` (the kernel backend always runs Linux's segmentation offload).

    ``reference`` is the backend of the Linux runs: ``"kernel"`` (ccfair's forwarder over
    TUN devices, the default) or ``"veth"`` (veth pairs with tc qdiscs, Mininet's links; on
    a kernel with netem it compares the simulator's netem queue with netem itself).

    Example:
        >>> v = validate(["a.toml", "b.toml"], out="validation")  # doctest: +SKIP
    """
    say = progress or (lambda m: None)
    _check_flags(retries, rerun_flagged, finished_only)
    points = _study_points(inputs, preset, quick, duration)
    _check_sim_tcp(sim_tcp, points)
    ref_name = reference
    ref_backend = _reference_backend(reference)
    points = _on_reference_kernel(points, ref_backend, say)
    kernel_scs = [kernel_variant(p.scenario, ref_name) for p in points]
    results = Path(out) / "results" if out is not None else None
    if finished_only:
        points, kernel_scs, hz = _finished_points(points, kernel_scs, results, say, ref_name)
        hz = hz if match_hz else None
        rerun_flagged = False
    else:
        _ready_to_run(points, kernel_scs, ref_backend, say)
        hz = ref_backend.clock_hz() if match_hz else None
    sims = _run_sims(points, hz, sim_tcp, results, say)
    kerns = _run_kernels(points, kernel_scs, results, retries, rerun_flagged, say, ref_name)
    v = _study(points, sims, kerns)
    if out is not None:
        label = sim_tcp_label(sim_tcp)
        _write(v, Path(out), points, sims, kerns, hz, label, timeseries_figures, command, ref_name)
    return v


def _check_flags(retries: Any, rerun_flagged: Any, finished_only: Any) -> None:
    """The study's switches are checked first, so that a typo costs no expansion of points."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SpecError("retries", retries, "is not a number of reruns (an integer >= 0)")
    if not isinstance(rerun_flagged, bool):
        raise SpecError("rerun_flagged", rerun_flagged, "is not true or false")
    if not isinstance(finished_only, bool):
        raise SpecError("finished_only", finished_only, "is not true or false")


def _study_points(
    inputs: Sequence[Scenario | str | os.PathLike[str]],
    preset: str | None,
    quick: bool,
    duration: str | None,
) -> list[VPoint]:
    """The points to compare, with ``duration`` applied: an empty study is an error, since it
    would write a report of nothing."""
    points = validation_points(inputs, preset=preset, quick=quick)
    if not points:
        raise SpecError("inputs", list(inputs), "name no scenario, sweep or preset to validate")
    if duration is not None:
        points = [
            VPoint(p.label, p.params, p.rep, with_duration(p.scenario, duration)) for p in points
        ]
    return points


def _check_sim_tcp(sim_tcp: Mapping[str, Any] | None, points: list[VPoint]) -> None:
    """``sim_tcp`` is checked on one point before anything runs: the engine names what is
    wrong, once, rather than every simulator run failing."""
    if sim_tcp is not None and (
        not isinstance(sim_tcp, Mapping) or not all(isinstance(k, str) for k in sim_tcp)
    ):
        raise SpecError("sim_tcp", sim_tcp, "is not a table of TCP options by name")
    if sim_tcp:
        sim_variant(points[0].scenario, None, sim_tcp).resolve()


def _reference_backend(reference: Any) -> Backend:
    """The backend of the Linux runs: only a real-time backend runs real Linux TCP, so only
    such a backend can be the reference."""
    if (
        not isinstance(reference, str)
        or reference not in backends.names()
        or not (backends.get(reference).real_time)
    ):
        linux = [n for n in backends.names() if backends.get(n).real_time]
        raise SpecError(
            "reference", reference, f"is not a backend of real Linux TCP; choose {', '.join(linux)}"
        )
    return backends.get(reference)


def _ready_to_run(
    points: list[VPoint],
    kernel_scs: list[Scenario],
    ref_backend: Backend,
    say: Callable[[str], None],
) -> None:
    """Every point is runnable on the reference backend and the machine is fit to run it,
    before the first real-time run: a failure then costs nothing."""
    for p, ksc in zip(points, kernel_scs, strict=True):
        try:
            ref_backend.check(ksc.resolve())
        except SpecError as exc:
            raise SpecError(
                exc.path, exc.value, f"{exc.message} (point {p.label})", with_value=False
            ) from None
    ref_backend.preflight()
    ref_backend.warn_if_busy(say)


def _on_reference_kernel(
    points: list[VPoint], reference: Any, say: Callable[[str], None]
) -> list[VPoint]:
    """Like with like: points whose hosts are a Linux generation run, on both sides, on the
    generation the reference backend's hosts are (its own Linux; the nearest modelled one,
    6.18, for a release between the generations ccfair models). Points on idealised hosts
    stay so: the simulator's idealisation against Linux."""
    kernel = reference.host_kernel() or "6.18"
    out = []
    moved: set[str] = set()
    for p in points:
        sc = with_kernel(p.scenario, kernel)
        if sc is not p.scenario:
            moved.add(str(p.scenario.resolve().normalized["kernel"]))
        out.append(VPoint(p.label, p.params, p.rep, sc))
    if moved:
        say(
            f"host kernel {', '.join(sorted(moved))} -> {kernel} on both sides: the reference "
            f"backend runs this machine's Linux ({reference.host_release()})"
        )
    return out


def _finished_points(
    points: list[VPoint],
    kernel_scs: list[Scenario],
    results: Path | None,
    say: Callable[[str], None],
    reference: str = REFERENCE_BACKEND,
) -> tuple[list[VPoint], list[Scenario], int | None]:
    """The points whose kernel run is finished in ``results``, their kernel scenarios, and
    the HZ those runs recorded (None if they did not)."""
    if results is None:
        raise SpecError("out", None, "is needed with finished_only (the study's directory)")
    done = finished_run_ids(results) if results.is_dir() else set()
    identity = backends.get(reference).identity()
    keep = [
        i for i, sc in enumerate(kernel_scs) if run_id_of(sc.resolve().normalized, identity) in done
    ]
    if not keep:
        raise SpecError("out", str(results.parent), "holds no finished kernel run of these points")
    say(f"comparing the {len(keep)} of {len(points)} points whose kernel runs are finished")
    first = load(results, run_id_of(kernel_scs[keep[0]].resolve().normalized, identity))
    hz = first.runs.iloc[0].get("kernel_hz")
    hz = int(hz) if hz is not None and hz == hz else None
    return [points[i] for i in keep], [kernel_scs[i] for i in keep], hz


#: The time-series columns the study uses (means per flow, overlaid time series).
_STUDY_COLUMNS = ["flow_name", "t_s", "cwnd_pkts", "srtt_ms"]


def _slim(r: RunResult) -> RunResult:
    """What the study keeps of a run once it is saved: its flows, runs and link summary
    tables (two rows per link) and the time series it compares, not every column and link
    sample (a 10-hop study holds over a hundred runs)."""
    return dataclasses.replace(
        r,
        timeseries=r.timeseries[_STUDY_COLUMNS],
        links=r.links.iloc[:0],
        trace=None,
    )


def _cached(results: Path | None, run_id: str) -> RunResult | None:
    if results is None or run_id not in finished_run_ids(results):
        return None
    return load(results, run_id)


def _run_sims(
    points: list[VPoint],
    hz: int | None,
    sim_tcp: Mapping[str, Any] | None,
    results: Path | None,
    say: Callable[[str], None],
) -> list[RunResult]:
    # The simulator side always runs: it is cheap, and it must be the current model (a run
    # id names the scenario, not the simulator's version); kernel runs are kept.
    def one(i: int) -> RunResult:
        p = points[i]
        say(f"simulator: {p.label} r{p.rep}")
        r = run(sim_variant(p.scenario, hz, sim_tcp), backend=MODEL_BACKEND)
        if results is not None:
            r.save(results)
        return _slim(r)

    return run_in_threads(len(points), one, backends_used=[backends.get(MODEL_BACKEND)])


def _run_kernels(
    points: list[VPoint],
    scenarios: list[Scenario],
    results: Path | None,
    retries: int,
    rerun_flagged: bool,
    say: Callable[[str], None],
    reference: str = REFERENCE_BACKEND,
) -> list[RunResult]:
    out: list[RunResult | None] = []
    pending = []
    for i, sc in enumerate(scenarios):
        rid = run_id_of(sc.resolve().normalized, backends.get(reference).identity())
        r = _cached(results, rid)
        if r is not None and not r.reliable and rerun_flagged:
            say(f"kernel: {points[i].label} r{points[i].rep} was flagged; running it again")
            r = None
        out.append(None if r is None else _slim(r))
        if r is None:
            pending.append(i)
    t_start = time.monotonic()

    def one(done: int) -> RunResult:
        i = pending[done]
        p = points[i]
        eta = ""
        if done:
            left = (time.monotonic() - t_start) / done * (len(pending) - done)
            eta = f", about {left / 60:.0f} min left"
        for attempt in range(retries + 1):
            say(f"kernel {done + 1}/{len(pending)}{eta}: {p.label} r{p.rep}")
            r = run(scenarios[i], backend=reference)
            say(f"  {r.format_selfcheck()}")
            if r.reliable or attempt == retries:
                break
            say("  flagged: running it again")
        if results is not None:
            r.save(results)
        return _slim(r)

    # One at a time: the reference runs in real time (docs/kernel.md, "Several runs").
    ran = run_in_threads(len(pending), one, backends_used=[backends.get(reference)])
    for i, r in zip(pending, ran, strict=True):
        out[i] = r
    return [r for r in out if r is not None]


def _study(points: list[VPoint], sims: list[RunResult], kerns: list[RunResult]) -> Validation:
    rows: list[pd.DataFrame] = []
    link_rows: list[pd.DataFrame] = []
    for p, s, k in zip(points, sims, kerns, strict=True):
        for table in (compare(p.label, s, k), compare_links(p.label, s, k)):
            if table.empty:
                continue
            table.insert(1, "rep", p.rep)
            table.insert(1, "pair", pair_of(p))
            for key, value in p.params.items():
                table[f"param_{key}"] = value
            table["sim_run_id"] = s.run_id
            table["kernel_run_id"] = k.run_id
            table["kernel_reliable"] = k.reliable
            table["kernel_flags"] = k.runs.iloc[0]["selfcheck_flags"]
            (rows if "flow" in table.columns else link_rows).append(table)
    runs = pd.concat(rows, ignore_index=True)
    points_df = summarize_points(runs)
    link_runs = pd.concat(link_rows, ignore_index=True) if link_rows else pd.DataFrame()
    return Validation(
        runs=runs,
        points=points_df,
        summary=summarize_pairs(points_df),
        link_runs=link_runs,
        link_points=summarize_link_points(link_runs),
    )


def _write(
    v: Validation,
    root: Path,
    points: list[VPoint],
    sims: list[RunResult],
    kerns: list[RunResult],
    hz: int | None,
    sim_options: str,
    n_timeseries: int,
    command: str | None,
    reference: str = REFERENCE_BACKEND,
) -> None:
    v.out = root
    root.mkdir(parents=True, exist_ok=True)
    tables = [("runs", v.runs), ("points", v.points), ("summary", v.summary)]
    if not v.link_points.empty:
        tables += [("link_runs", v.link_runs), ("link_points", v.link_points)]
    for name, frame in tables:
        frame.to_csv(root / f"validate_{name}.csv", index=False)
        frame.to_parquet(root / f"validate_{name}.parquet", index=False)
    figs = root / "figures"
    v.figures.append(agreement_figure(v.points, figs / "agreement.png", flagged_points(v.runs)))
    v.figures += diff_heatmaps(v.points, figs)
    # Time series of the points that differ most (their first repetition).
    worst = (
        v.points.assign(a=v.points["share_diff"].abs())
        .groupby("point", sort=False)["a"]
        .max()
        .sort_values(ascending=False)
    )
    for label in list(worst.index[:n_timeseries]):
        i = next(j for j, p in enumerate(points) if p.label == label)
        v.figures.append(
            timeseries_figure(label, sims[i], kerns[i], figs / f"{slug(label)}_timeseries.png")
        )
    env = {
        "Linux runs": backends.get(reference).summary,
        "kernel": platform.release(),
        "kernel HZ": hz,
        "simulator hz": hz if hz is not None else "scenario's",
        "simulator TCP options": sim_options,
        "CPUs": os.cpu_count(),
        "ccfair": sims[0].runs.iloc[0]["ccfair_version"],
        "git": sims[0].runs.iloc[0]["git_revision"],
    }
    (root / "validate.md").write_text(report_section(v, env, command))
