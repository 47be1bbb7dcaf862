"""The ``ccfair`` command.

Exit status (docs/spec.md, "Errors"): 0 on success; 2 on any failure, with one ``error:``
line on stderr naming the field, file or run and no traceback: bad input (scenario, sweep,
arguments, files, encodings), a resource limit, a results directory that cannot be used or
written, the kernel backend unable to run here, runs that failed, a lost Dask scheduler, and
(saying so) an internal error; 128 + the signal number after SIGINT or SIGTERM (a kernel run
cleans up first). ``--debug`` shows the traceback of an internal error instead (exit 1).
Output into a pipe whose reader has gone (``ccfair ... | head``) ends quietly with status 0.

The parser (:mod:`~ccfair.cli.parser`) imports nothing heavy, so that ``ccfair --help`` starts
at once; each command's module (:data:`COMMANDS`: ``run``, ``info``, ``sweep``,
``results``, ``study``, ``completion``) is imported when its command runs, and imports what
it needs at the top. The CLI is the top layer of the package: it may import every other.
"""

from __future__ import annotations

import importlib
import os
import select
import sys
from collections.abc import Sequence

from ccfair.cli.common import fail
from ccfair.cli.parser import build_parser
from ccfair.errors import CcfairError

__all__ = ["COMMANDS", "EXIT_INTERRUPTED", "main"]

#: Exit status after SIGINT (128 + 2), as shells report it.
EXIT_INTERRUPTED = 130

#: Command -> the module of this package that runs it (its function ``cmd_<command>``).
COMMANDS: dict[str, str] = {
    "run": "run",
    "cleanup": "run",
    "check": "info",
    "ccas": "info",
    "builders": "info",
    "sweep": "sweep",
    "reproduce": "sweep",
    "report": "results",
    "plot": "results",
    "compare": "results",
    "metrics": "results",
    "validate": "study",
    "bench": "study",
    "completion": "completion",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ccfair`` command; returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise
        # The reader of stdout went away (`ccfair ... | head`): what it wanted is printed.
        # Python would flush stdout again at exit and fail; point it at /dev/null instead.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


def _stdout_reader_gone() -> bool:
    """stdout is a pipe without a reader (Linux's poll reports POLLERR on its write end):
    the broken pipe is the user's ``| head``, not a pipe of ccfair's own (a worker's)."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no stdout, or not a file
        return False


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        module = importlib.import_module(f"ccfair.cli.{COMMANDS[args.command]}")
        return getattr(module, f"cmd_{args.command}")(args)
    except CcfairError as exc:
        return fail(str(exc))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)
        print(f"interrupted (signal {signum}); cleaned up", file=sys.stderr)
        return 128 + signum
    except OSError as exc:  # a file or directory the user named cannot be used
        if args.debug or (isinstance(exc, BrokenPipeError) and _stdout_reader_gone()):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"{where}{exc.strerror or exc}")
    except MemoryError:
        return fail("out of memory; lower the run's size or raise the machine's memory")
    except Exception as exc:  # noqa: BLE001 - the CLI must not dump tracebacks on users
        if args.debug:
            raise
        return fail(
            f"internal error: {type(exc).__name__}: {exc} (a bug in ccfair; rerun with "
            "--debug for the traceback and report it)"
        )
