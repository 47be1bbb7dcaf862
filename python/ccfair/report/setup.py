"""What the report says ran: the setup table (what the study states and what ccfair ran, item
by item), the algorithms' versions, the testbeds and host kernels, the backends, identical
runs and the provenance.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ccfair import backends
from ccfair.algorithms import algorithm
from ccfair.results.directory import Results

if TYPE_CHECKING:  # pandas is imported where a table is read
    import pandas as pd


def _cca_versions(res: Results) -> list[tuple[str, str]]:
    """Per algorithm that ran: its parameters that differ from ccfair's defaults (from the
    runs' normalised specs), e.g. ("bbr", 'version "linux-4.15"; extra_acked false')."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for spec in res.specs().values():
        for f in spec.get("flows", []):
            params = f.get("cca_params", {})
            if params not in seen.setdefault(f["cca"], []):
                seen[f["cca"]].append(params)
    out = []
    for cca, variants in seen.items():
        try:
            defaults = algorithm(cca).defaults()
        except KeyError:  # results of an algorithm this version lacks
            defaults = {}
        texts = []
        for params in variants:
            diff = [f"{k} {json.dumps(v)}" for k, v in params.items() if defaults.get(k) != v]
            texts.append("; ".join(diff) if diff else "ccfair's defaults")
        key_of = {"bbr": "version", "copa": "variant"}.get(cca)
        head = (
            f'{key_of} "{variants[0].get(key_of)}"; ' if key_of and variants[0].get(key_of) else ""
        )
        out.append((cca, head + " | ".join(dict.fromkeys(texts))))
    return out


def _hosts(specs: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    """The testbeds (``key = "testbed"``) or host kernels (``"kernel"``) of these normalised
    specs, in order of first use. A spec of a version before testbeds ran on the ideal
    network; a spec whose hosts are idealised has no kernel.

        >>> specs = [{"testbed": "core-netem", "kernel": "6.18"}, {}, {"testbed": "ideal"}]
        >>> _hosts(specs, "testbed"), _hosts(specs, "kernel")
        (['core-netem', 'ideal'], ['6.18', 'none (idealised hosts)'])
    """
    default = "ideal" if key == "testbed" else None
    values = (spec.get(key, default) for spec in specs)
    return list(dict.fromkeys(v if v is not None else "none (idealised hosts)" for v in values))


def setup_rows(
    res: Results, preset: Any, record: dict[str, Any]
) -> list[tuple[str, str, str, str]]:
    """(item, study, ccfair, why) rows: the preset's, then what the runs themselves record."""
    rows: list[tuple[str, str, str, str]] = []
    if preset is not None:
        rows += [(r.item, r.study, r.ccfair, r.why) for r in preset.setup]
    sweep = record.get("sweep", {})
    grid = ", ".join(
        f"{k} in {{{', '.join(str(v) for v in vals)}}}" for k, vals in res.axes.items()
    )
    if grid:
        rows.append(
            ("grid (this run)", "", f"{grid}; {sweep.get('repetitions', 1)} repetition(s)", "")
        )
    runs = res.table("runs")
    durations = sorted({float(d) for d in runs["duration_s"]})
    rows.append(("duration (this run)", "", ", ".join(f"{d:g} s" for d in durations), ""))
    rows += _host_rows(list(res.specs().values()))
    rows += _cca_rows(res)
    rows += _software_rows(runs)
    return rows


def _host_rows(specs: list[Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """The testbed and host kernel rows: what the runs' specs say they ran on."""
    return [
        (
            "testbed (this run)",
            "",
            ", ".join(_hosts(specs, "testbed")),
            'links and host build (docs/spec.md, "Testbeds and host kernels")',
        ),
        (
            "host kernel (this run)",
            "",
            ", ".join(_hosts(specs, "kernel")),
            "the hosts' Linux: TCP substrate settings and the algorithms' versions",
        ),
    ]


def _cca_rows(res: Results) -> list[tuple[str, str, str, str]]:
    """A row per algorithm: where its parameters differ from ccfair's defaults."""
    return [
        (
            f"{cca} parameters (this run)",
            "",
            text,
            "normalised parameters that differ from ccfair's defaults (ccfair ccas lists them all)",
        )
        for cca, text in _cca_versions(res)
    ]


def _software_rows(runs: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """The backend and ccfair rows: what ran the runs, from the runs table."""
    model = "; ".join(_backend_model(name) for name in sorted(set(runs["backend"])))
    version = (
        ", ".join(sorted(set(runs["ccfair_version"])))
        + " (git "
        + ", ".join(sorted({str(g)[:12] for g in runs["git_revision"]}))
        + ")"
    )
    return [("backend", "", model, ""), ("ccfair", "", version, "")]


def identical_runs(res: Results) -> list[list[str]]:
    """Groups of runs of different points (or seeds) whose flows ended bit-identical:
    delivered bytes, packets sent and dropped of every flow."""
    flows = res.table("flows")
    sig = {
        rid: (
            tuple(g["delivered_bytes"]) + tuple(g["data_sent_pkts"]) + tuple(g["data_dropped_pkts"])
        )
        for rid, g in flows.sort_values(["run_id", "flow"]).groupby("run_id", sort=False)
    }
    groups: dict[Any, list[str]] = {}
    for rid, s in sig.items():
        groups.setdefault(s, []).append(str(rid))
    return [g for g in groups.values() if len(g) > 1]


def _backend_model(name: str) -> str:
    """What a backend runs, with its documentation (the registry's summary); a backend no
    longer registered by its name."""
    if name not in backends.REGISTRY:
        return name
    b = backends.get(name)
    return f"{b.summary} ({b.docs})"


def backend_title(name: str) -> str:
    """``the simulator``, ``the kernel backend``: a backend in a sentence."""
    return backends.get(name).title if name in backends.REGISTRY else f"backend {name}"


def provenance(res: Results) -> list[tuple[str, str]]:
    runs = res.table("runs")
    rows = []
    names = {
        "ccfair_version": "ccfair version",
        "git_revision": "git revision",
        "backend": "backend",
        "host": "host",
        "machine_release": "Linux release of the machine that ran ccfair (not the modelled "
        "hosts' kernel, which the setup table names)",
        "python": "Python",
    }
    for col, label in names.items():
        if col in runs.columns:
            rows.append((label, ", ".join(sorted({str(v) for v in runs[col]}))))
    if "started_at" in runs.columns:
        rows.append(("runs started", f"{runs['started_at'].min()} to {runs['started_at'].max()}"))
    if "wall_time_s" in runs.columns:
        rows.append(("run wall time (sum)", f"{runs['wall_time_s'].sum():.1f} s"))
    if "duration_s" in runs.columns:
        rows.append(("simulated time (sum)", f"{runs['duration_s'].sum():.0f} s"))
    if "engine_events" in runs.columns:
        rows.append(("engine events (sum)", f"{int(runs['engine_events'].sum()):,}"))
    rows.append(("results directory", str(res.root.resolve())))
    rows.append(("report written", datetime.now(UTC).isoformat(timespec="seconds")))
    return rows
