"""The parking-lot fidelity targets of docs/validation/ for a finished `ccfair validate` study:
per point, the main flow's goodput on both backends (every repetition, then the means over the
simulator's runs and over the kernel runs that passed their self-checks) and the largest share
difference over the point's flows.

Targets (docs/validation/README.md): the main flow's mean goodput within a factor of 1.5 of
Linux's or within 1 Mbit/s of it, whichever allows more, and every flow's mean share within
10 percentage points.

    python scripts/main_flow_targets.py validation/10hop > validation/10hop/targets.md

Writes a markdown table to stdout, and `targets.csv` and `figures/main_flow.png` (the main
flow's goodput, simulator against Linux, every repetition, with the target band) next to the
study's tables. Kernel runs
the self-checks flagged are listed in their own column and take no part in the means or the
targets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

GOODPUT_FACTOR = 1.5
GOODPUT_SLACK_MBPS = 1.0
SHARE_SLACK_PP = 10.0


def goodput_ok(sim_mbps: float, kernel_mbps: float) -> bool:
    """Whether the simulator's mean goodput meets the target against Linux's.

    Example:
        >>> goodput_ok(0.4, 0.2), goodput_ok(6.0, 3.0), goodput_ok(4.4, 3.0)
        (True, False, True)
    """
    if abs(sim_mbps - kernel_mbps) <= GOODPUT_SLACK_MBPS:
        return True
    low, high = sorted((sim_mbps, kernel_mbps))
    return low > 0 and high / low <= GOODPUT_FACTOR


def _reps(values: pd.Series) -> str:
    return " ".join(f"{v:.2f}" for v in values) or "none reliable"


def targets(study: Path) -> pd.DataFrame:
    """One row per point of the study in ``study`` (a `ccfair validate --out` directory)."""
    points = pd.read_csv(study / "validate_points.csv")
    runs = pd.read_csv(study / "validate_runs.csv")
    main_runs = runs[runs["flow"] == "main"]
    rows = []
    for point, g in points.groupby("point", sort=False):
        main = g[g["flow"] == "main"].iloc[0]
        mine = main_runs[main_runs["point"] == point]
        reliable = mine[mine["kernel_reliable"].astype(bool)]
        flagged = mine[~mine["kernel_reliable"].astype(bool)]
        sim = float(main["goodput_sim_mbps"])
        kern = float(main["goodput_kernel_mbps"]) if len(reliable) else float("nan")
        share_pp = (g["share_diff"].abs().max() * 100) if len(reliable) else float("nan")
        rows.append(
            {
                "pair": main["pair"],
                "alpha": main["param_alpha"],
                "main_sim_runs_mbps": _reps(mine["goodput_sim_mbps"]),
                "main_linux_runs_mbps": _reps(reliable["goodput_kernel_mbps"]),
                "main_linux_flagged_mbps": " ".join(
                    f"{v:.2f}" for v in flagged["goodput_kernel_mbps"]
                ),
                "main_sim_mbps": sim,
                "main_linux_mbps": kern,
                "goodput_ok": goodput_ok(sim, kern) if len(reliable) else None,
                "max_share_diff_pp": share_pp,
                "share_ok": bool(share_pp <= SHARE_SLACK_PP) if len(reliable) else None,
                "n_sim": int(main["n_sim"]),
                "n_linux_reliable": len(reliable),
            }
        )
    return pd.DataFrame(rows)


def figure(study: Path, path: Path) -> Path:
    """The main flow's goodput per repetition, simulator (x) against Linux (y), log axes:
    colour = the main flow's algorithm, marker = the cross flows', filled = a reliable
    kernel run, hollow = flagged; the grey band is the target around the diagonal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from ccfair.present.style import cca_color

    runs = pd.read_csv(study / "validate_runs.csv")
    main = runs[runs["flow"] == "main"]
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    x = np.logspace(-2, 2, 400)
    hi = np.maximum(x * GOODPUT_FACTOR, x + GOODPUT_SLACK_MBPS)
    lo = np.minimum(x / GOODPUT_FACTOR, np.maximum(x - GOODPUT_SLACK_MBPS, 1e-3))
    ax.fill_between(x, lo, hi, color="0.88", label="target: x1.5 or +-1 Mbit/s")
    ax.plot(x, x, color="0.4", lw=0.8)
    markers = {"reno": "o", "cubic": "s", "bbr": "^"}
    for (main_cca, cross), g in main.groupby(
        [main["cca"], main["pair"].str.split(" vs ").str[1]], sort=False
    ):
        for reliable, sub in g.groupby(g["kernel_reliable"].astype(bool)):
            ax.scatter(
                sub["goodput_sim_mbps"].clip(lower=0.01),
                sub["goodput_kernel_mbps"].clip(lower=0.01),
                marker=markers.get(cross, "D"),
                s=46,
                facecolors=cca_color(main_cca) if reliable else "none",
                edgecolors=cca_color(main_cca),
                label=f"{main_cca} main vs {cross}" + ("" if reliable else " (flagged)"),
            )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(0.01, 30),
        ylim=(0.01, 30),
        xlabel="main flow goodput, simulator (Mbit/s)",
        ylabel="main flow goodput, Linux (Mbit/s)",
        title=f"{study.name}: the main flow on both backends, every repetition",
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def _fmt(v: object) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def markdown(t: pd.DataFrame) -> str:
    head = (
        "| main vs cross | alpha | main, sim runs | main, Linux runs | flagged Linux runs "
        "| sim mean | Linux mean | goodput ok | max share diff (pp) | shares ok |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        "| "
        + " | ".join(
            _fmt(r[c])
            for c in (
                "pair",
                "alpha",
                "main_sim_runs_mbps",
                "main_linux_runs_mbps",
                "main_linux_flagged_mbps",
                "main_sim_mbps",
                "main_linux_mbps",
                "goodput_ok",
                "max_share_diff_pp",
                "share_ok",
            )
        )
        + " |"
        for _, r in t.iterrows()
    ]
    judged = t[t["n_linux_reliable"] > 0]
    tail = (
        f"\n{len(judged)} of {len(t)} points have a reliable Linux run; main-flow goodput "
        f"target met at {int(judged['goodput_ok'].sum())}, share target met at "
        f"{int(judged['share_ok'].sum())}.\n"
    )
    return head + "\n".join(lines) + "\n" + tail


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    study = Path(argv[0])
    missing = [n for n in ("validate_points.csv", "validate_runs.csv") if not (study / n).is_file()]
    if missing:
        print(
            f"error: {study} is not a `ccfair validate --out` directory (no {missing[0]})",
            file=sys.stderr,
        )
        return 2
    t = targets(study)
    t.to_csv(study / "targets.csv", index=False)
    figure(study, study / "figures" / "main_flow.png")
    print(markdown(t), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
