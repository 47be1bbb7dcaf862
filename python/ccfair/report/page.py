"""One self-contained HTML report of a results directory (``ccfair report DIR``): the page and
its figures, written atomically (:func:`write_report`).

Example:
    >>> write_report("results/harada-dumbbell")  # doctest: +SKIP
    PosixPath('results/harada-dumbbell/report.html')
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccfair.errors import ResultsError, show
from ccfair.presets import PRESETS
from ccfair.report.figures import make_figures, save_figures
from ccfair.report.html import CSS, esc, kv_table
from ccfair.report.sections import (
    Embedded,
    Study,
    ccas_section,
    figures_section,
    harm_section,
    metrics,
    model_section,
    points_section,
    setup_section,
    spec_section,
    summary_section,
    title_section,
)
from ccfair.report.setup import provenance
from ccfair.results.directory import Results
from ccfair.store.directory import table_folder
from ccfair.store.files import (
    check_replaceable,
    make_dir,
    remove_stale_temporaries,
    replace_via_temporary,
)


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    log: Callable[[str], None] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    timings: dict[str, float] | None = None,
) -> Path:
    """Write the HTML report of ``results_dir`` (default ``DIR/report.html``) and its figures
    (``DIR/figures/*.png|svg|pdf``, or ``figures_dir``); returns the report's path.
    ``timings``, if given, receives the seconds each step took (metrics, figures, saving,
    page).

    Example:
        >>> write_report("results/harada-dumbbell")  # doctest: +SKIP
        PosixPath('results/harada-dumbbell/report.html')
    """
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    lap = _Laps(timings if timings is not None else {})
    res = Results(results_dir)
    remove_stale_temporaries(res.root)  # of a report or sweep killed mid-write
    target = _report_path(out, res.root)
    # Default figures/ is a folder of the results directory: a link there is refused, as for
    # the table folders; a folder given explicitly is the user's choice. Both are checked
    # before the figures are drawn, which takes most of a report's time.
    fig_dir = (
        table_folder(res.root, "figures")
        if figures_dir is None
        else _given_dir("figures_dir", figures_dir)
    )
    record = res.record or {}
    sweep = record.get("sweep", {})
    study = Study(res, record, sweep, PRESETS.get(sweep.get("preset", "")))
    say(f"report {study.name!r}: {len(res.run_ids)} runs; computing metrics")
    m = metrics(res)
    lap("metrics")

    say("report: drawing figures")
    embedded = _drawn_figures(res, fig_dir, say, lap)
    figs = Embedded.of(embedded, study.preset, os.path.relpath(fig_dir, target.parent))
    page = _page(res, study, m, figs)
    replace_via_temporary(target, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    lap("page")
    return target


def _drawn_figures(
    res: Results, fig_dir: Path, say: Callable[[str], None], lap: _Laps
) -> dict[str, tuple[str, str]]:
    """Each figure's caption and PNG (base64), saved first: the page embeds what was written."""
    figures = make_figures(res)
    lap("figures")
    embedded = {}
    for (fname, caption, _), paths in zip(
        figures, save_figures(figures, fig_dir, say=say), strict=True
    ):
        png = paths[0].read_bytes()
        embedded[fname] = (caption, base64.b64encode(png).decode("ascii"))
    lap("saving figures")
    return embedded


def _page(res: Results, study: Study, m: Any, figs: Embedded) -> str:
    """The whole HTML page: one file, its styles inline, so it opens anywhere on its own."""
    parts = [
        *title_section(study),
        *summary_section(res, m, figs),
        *setup_section(res, study),
        *figures_section(figs),
        *points_section(m),
        *ccas_section(res, m),
        *model_section(res, m),
        *harm_section(res, m),
        *spec_section(study),
        '<h2 id="provenance">Provenance</h2>',
        kv_table(provenance(res)),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(study.title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )


def _report_path(out: str | os.PathLike[str] | None, root: Path) -> Path:
    """Where the page goes: ``out`` (a file path, its folder created) or ``root/report.html``."""
    if out is None:
        return root / "report.html"
    if not isinstance(out, str | os.PathLike) or not str(out).strip():
        raise ResultsError(f"--out: {show(out)} is not a file path for the report")
    target = Path(out)
    if target.is_dir():
        raise ResultsError(f"--out: {target} is a directory; give the report's file name")
    check_replaceable(target)  # not /dev/null or a link: before the figures are drawn
    make_dir(target.parent)
    return target


def _given_dir(what: str, path: str | os.PathLike[str]) -> Path:
    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise ResultsError(f"{what}: {show(path)} is not a directory path")
    make_dir(Path(path))
    return Path(path)


class _Laps:
    """Adds the seconds since the previous lap to ``steps[step]``."""

    def __init__(self, steps: dict[str, float]) -> None:
        self.steps = steps
        self.clock = time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        self.steps[step] = self.steps.get(step, 0.0) + now - self.clock
        self.clock = now
