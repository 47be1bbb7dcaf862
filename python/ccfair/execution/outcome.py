"""What a sweep did (:class:`SweepOutcome`), told as it goes: the progress bar, each finished
run's attempts, a failure in one line.

Example:
    >>> SweepOutcome(Path("r"), total=2, already=1, executed=["a"]).summary()[:54]
    '2 of 2 runs finished (1 executed now, 1 already there)'
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Progress", "SweepOutcome", "note_attempts", "one_line"]


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did.

    Attributes:
        results_dir: where the results are.
        total: distinct runs of the sweep.
        already: runs that were finished before this call (and were not recomputed).
        executed: run ids computed by this call.
        recomputed: run ids found damaged and computed again.
        failed: run id -> one-line error, for runs that raised.
        interrupted: Ctrl-C stopped the sweep before every run finished.
        wall_s: wall time of this call.
        reruns: attempts made again because a self-checked backend's run was flagged.
        flagged: run ids kept flagged (``runs.reliable`` false) after every attempt.
    """

    results_dir: Path
    total: int
    already: int
    executed: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    wall_s: float = 0.0
    reruns: int = 0
    flagged: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every run of the sweep is finished (also when a Ctrl-C came as the last ended)."""
        return not self.failed and self.already + len(self.executed) >= self.total

    def summary(self) -> str:
        """One line for terminals.

        Example:
            >>> SweepOutcome(Path("r"), total=2, already=1, executed=["a"]).summary()[:54]
            '2 of 2 runs finished (1 executed now, 1 already there)'
        """
        done = self.already + len(self.executed)
        state = "complete" if self.complete else "incomplete"
        return (
            f"{done} of {self.total} runs finished ({len(self.executed)} executed now, "
            f"{self.already} already there"
            + (f", {len(self.recomputed)} damaged and recomputed" if self.recomputed else "")
            + (f", {len(self.failed)} failed" if self.failed else "")
            + (f", {self.reruns} flagged attempt(s) run again" if self.reruns else "")
            + (f", {len(self.flagged)} kept flagged" if self.flagged else "")
            + f"); {state}; {self.wall_s:.1f} s wall; results in {self.results_dir}"
        )


def note_attempts(outcome: SweepOutcome, reply: dict[str, Any], say: Callable[[str], None]) -> None:
    """Count a finished run's reruns and say when it stayed flagged."""
    attempts = int(reply.get("attempts", 1))
    outcome.reruns += attempts - 1
    if not reply.get("reliable", True):
        outcome.flagged.append(reply["run_id"])
        say(
            f"run {reply['run_id']}: flagged by its self-checks in all {attempts} attempt(s); "
            "kept and marked unreliable (runs.selfcheck_flags says why)"
        )


class Progress:
    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                desc=desc,
                unit="run",
                file=sys.stderr,
                mininterval=0.5,
                dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
                "[{elapsed}<{remaining}, {rate_fmt}]",
            )

    def update(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
