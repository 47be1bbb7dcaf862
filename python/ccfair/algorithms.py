"""The congestion control algorithms, as the Rust core describes them (one table).

Each algorithm is declared once, in crates/ccfair-cc (its module's ``ALGORITHM`` entry and its
``param_table!``); this module reads that table: name, one-line summary, family (loss-,
delay- or model-based), whether it paces, its Linux module (which the kernel backend runs when
the flow's parameters are the defaults), whether ccfair has a BPF program of it for the kernel
backend, its parameters (type, unit, default, meaning) and the names of its internals. The
model table (which algorithms are loss-based), the kernel backend (which program runs a flow),
the figures (an algorithm's colour) and ``ccfair ccas`` all read it here.

Example:
    >>> algorithm("cubic").family, algorithm("cubic").linux_name, algorithm("bbr").paces
    ('loss-based', 'cubic', True)
    >>> names()[:2]
    ['reno', 'cubic']
"""

from __future__ import annotations

import functools
import json
import textwrap
from dataclasses import dataclass
from typing import Any

from ccfair import _core
from ccfair.errors import did_you_mean, show

__all__ = [
    "Algorithm",
    "Param",
    "algorithm",
    "algorithms",
    "format_markdown",
    "format_table",
    "loss_based",
    "names",
]


@dataclass(frozen=True)
class Param:
    """One parameter of an algorithm.

    Attributes:
        name: key in ``cca_params``.
        kind: what values it takes: ``integer``, ``number``, ``boolean``, the accepted
            strings joined by ``|``; ``or null`` when null defers to another parameter.
        unit: unit of the value (empty for flags and choices).
        default: the value a flow gets when the parameter is left out (variant- and
            version-dependent options resolved).
        doc: what it means.
    """

    name: str
    kind: str
    unit: str
    default: Any
    doc: str


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of the registry.

    Attributes:
        name: name in ``flows[].cca``.
        summary: what it does and the source it follows.
        family: ``loss-based``, ``delay-based`` or ``model-based``.
        paces: TCP paces its packets at the rate it sets (Linux ``SK_PACING_NEEDED``).
        cong_control: it replaces PRR and ``cong_avoid`` with ``cong_control``.
        linux_name: the Linux module of the same algorithm, or None.
        bpf_program: ccfair has a BPF congestion control of it (kernel backend).
        params: its parameters, in the order of the normalised table.
        metrics: names of its time-series internals; counters: of its summary counters.
    """

    name: str
    summary: str
    family: str
    paces: bool
    cong_control: bool
    linux_name: str | None
    bpf_program: bool
    params: tuple[Param, ...]
    metrics: tuple[str, ...]
    counters: tuple[str, ...]

    def defaults(self) -> dict[str, Any]:
        """The normalised parameter table with every default.

        Example:
            >>> algorithm("cubic").defaults()["beta"]
            717
        """
        return {p.name: p.default for p in self.params}


@functools.cache
def algorithms() -> dict[str, Algorithm]:
    """Every algorithm by name, in the registry's order.

    Example:
        >>> list(algorithms())[:4]
        ['reno', 'cubic', 'copa', 'bbr']
    """
    bpf = set(_core.bpf_programs())
    out = {}
    for a in json.loads(_core.algorithms()):
        params = tuple(
            Param(p["name"], _kind(p["kind"]), p["unit"], p["default"], p["doc"])
            for p in a["params"]
        )
        out[a["name"]] = Algorithm(
            name=a["name"],
            summary=a["summary"],
            family=a["family"],
            paces=a["paces"],
            cong_control=a["cong_control"],
            linux_name=a["linux_name"],
            bpf_program=a["name"] in bpf,
            params=params,
            metrics=tuple(a["metrics"]),
            counters=tuple(a["counters"]),
        )
    return out


def _kind(kind: dict[str, Any]) -> str:
    base = " | ".join(kind["choices"]) if kind.get("choices") else kind["base"]
    return f"{base} or null" if kind["nullable"] else base


def names() -> list[str]:
    """Names accepted in ``flows[].cca``, in the registry's order."""
    return list(algorithms())


def algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; KeyError naming the known ones (and the closest).

    Example:
        >>> algorithm("copa").family
        'delay-based'
    """
    found = algorithms().get(name)
    if found is None:
        raise KeyError(
            f"{show(name)} is not an algorithm{did_you_mean(name, names())} "
            f"(known: {', '.join(names())})"
        )
    return found


def loss_based() -> frozenset[str]:
    """Names of the loss-based algorithms.

    Example:
        >>> {"reno", "cubic"} <= loss_based(), "bbr" in loss_based()
        (True, False)
    """
    return frozenset(a.name for a in algorithms().values() if a.family == "loss-based")


def _backends(a: Algorithm) -> str:
    kernel = []
    if a.linux_name:
        kernel.append(f"Linux module {a.linux_name}")
    if a.bpf_program:
        kernel.append("ccfair's BPF program")
    return "simulator; kernel backend: " + (" or ".join(kernel) if kernel else "no")


def _value(v: Any) -> str:
    return "null" if v is None else json.dumps(v) if isinstance(v, str | bool) else str(v)


def format_table(selected: list[str] | None = None, *, width: int = 100) -> str:
    """The algorithms and their parameters as text for terminals (``ccfair ccas``): per
    algorithm its summary, family and backends, then one row per parameter with its type,
    default, unit and meaning (wrapped to ``width``).

    Example:
        >>> print(format_table(["reno"]))  # doctest: +NORMALIZE_WHITESPACE
        reno (loss-based; paces: no)
          Reno as Linux implements it (tcp_reno_* in net/ipv4/tcp_cong.c): slow start, one
          packet per RTT in congestion avoidance, half the window on a loss
          runs on: simulator; kernel backend: Linux module reno
          parameters: none
    """
    out: list[str] = []
    for name in selected or names():
        a = algorithm(name)
        if out:
            out.append("")
        out.append(f"{a.name} ({a.family}; paces: {'yes' if a.paces else 'no'})")
        out += textwrap.wrap(a.summary, width, initial_indent="  ", subsequent_indent="  ")
        out.append(f"  runs on: {_backends(a)}")
        if not a.params:
            out.append("  parameters: none")
            continue
        rows = [("parameter", "type", "default", "unit")] + [
            (p.name, p.kind, _value(p.default), p.unit or "-") for p in a.params
        ]
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        for i, r in enumerate(rows):
            out.append("  " + "  ".join(c.ljust(w[j]) for j, c in enumerate(r)).rstrip())
            if i == 0:
                continue
            p = a.params[i - 1]
            out += textwrap.wrap(p.doc, width, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(out)


def format_markdown() -> str:
    """Every algorithm and its parameters as Markdown: docs/algorithms.md is this text
    (``ccfair ccas --markdown``; a test checks that the file matches the registry).

    Example:
        >>> format_markdown().splitlines()[0]
        '# Algorithms'
    """
    out = [
        "# Algorithms",
        "",
        "Generated from the algorithm registry (crates/ccfair-cc/src/registry.rs) by "
        "`ccfair ccas --markdown`; do not edit by hand. `ccfair ccas` prints the same in a "
        "terminal. Parameters go into a flow's `cca_params`; left out, they take the default "
        "shown (options whose default depends on a variant or version are shown resolved for "
        "the default variant or version).",
        "",
        "| algorithm | family | paces | Linux module | BPF program |",
        "|---|---|---|---|---|",
    ]
    for a in algorithms().values():
        out.append(
            f"| [{a.name}](#{a.name}) | {a.family} | {'yes' if a.paces else 'no'} | "
            f"{a.linux_name or '-'} | {'yes' if a.bpf_program else 'no'} |"
        )
    for a in algorithms().values():
        out += ["", f"## {a.name}", "", a.summary + ".", ""]
        if not a.params:
            out.append("No parameters.")
            continue
        out += ["| parameter | type | default | unit | meaning |", "|---|---|---|---|---|"]
        for p in a.params:
            doc = p.doc.replace("|", "\\|")
            kind = p.kind.replace("|", "\\|")
            out.append(f"| `{p.name}` | {kind} | `{_value(p.default)}` | {p.unit or '-'} | {doc} |")
    return "\n".join(out) + "\n"
