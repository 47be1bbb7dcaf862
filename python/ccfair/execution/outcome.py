"""What a sweep did (:class:`SweepOutcome`), told as it goes: the progress (a bar on a
terminal, lines in a log), each finished run's attempts, a failure in one line.

Example:
    >>> SweepOutcome(Path("r"), total=2, already=1, executed=["a"]).summary()[:54]
    '2 of 2 runs finished (1 executed now, 1 already there)'
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "LINE_INTERVAL_S",
    "Progress",
    "SweepOutcome",
    "format_seconds",
    "note_attempts",
    "one_line",
]


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


#: Seconds between two progress lines when stderr is not a terminal (a log file, CI).
LINE_INTERVAL_S = 5.0


class Progress:
    """Runs done of a sweep, on stderr (or ``stream``): on a terminal, a bar redrawn in place;
    elsewhere (a log file, a CI log, a pipe) plain lines, a carriage return never: one at the
    start, one when a run ends at least :data:`LINE_INTERVAL_S` after the last line, and one
    at the end.

    Example:
        >>> import io
        >>> log = io.StringIO()
        >>> bar = Progress(2, "demo", True, stream=log)
        >>> bar.update(); bar.update(); bar.close()
        >>> log.getvalue().splitlines()[0]
        'demo: 0/2 runs'
    """

    def __init__(self, total: int, desc: str, enabled: bool, stream: TextIO | None = None) -> None:
        self.bar = None
        self.total = total
        self.desc = desc
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.lines = enabled and total > 0 and not _is_terminal(self.stream)
        if enabled and total and not self.lines:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                desc=desc,
                unit="run",
                file=self.stream,
                mininterval=0.5,
                dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
                "[{elapsed}<{remaining}, {rate_fmt}]",
            )
        self.started = self.last_line = time.monotonic()
        self.shown = -1
        if self.lines:
            self._line()

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.lines and time.monotonic() - self.last_line >= LINE_INTERVAL_S:
            self._line()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.lines and self.shown != self.done:
            self._line()

    def _line(self) -> None:
        now = time.monotonic()
        elapsed = now - self.started
        text = f"{self.desc}: {self.done}/{self.total} runs"
        if self.done:
            text += f" ({100 * self.done // self.total}%), {format_seconds(elapsed)} elapsed"
            if self.done < self.total:
                left = elapsed / self.done * (self.total - self.done)
                text += f", about {format_seconds(left)} left"
        print(text, file=self.stream, flush=True)
        self.last_line, self.shown = now, self.done


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def format_seconds(seconds: float) -> str:
    """A time for people: ``"0.4 s"``, ``"42 s"``, ``"3 min 05 s"``, ``"2 h 07 min"``.

    Example:
        >>> format_seconds(0.42), format_seconds(42.4), format_seconds(185), format_seconds(7620)
        ('0.4 s', '42 s', '3 min 05 s', '2 h 07 min')
    """
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
