"""A sweep on a Dask cluster (``cluster="tcp://HOST:PORT"``): each missing run is a task whose
worker returns the run's Parquet bytes, which this process writes, so that workers need no
shared file system. ``dask[distributed]`` is an optional dependency, imported only here.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.errors import RunError, SpecError
from ccfair.execution.outcome import Progress, SweepOutcome, note_attempts, one_line
from ccfair.execution.workers import run_to_bytes
from ccfair.spec.resolved import Resolved
from ccfair.store.directory import write_run_bytes

__all__ = ["close_quietly", "connect", "run_dask"]


def _worker_versions() -> dict[str, str]:
    return {"version": _core.__version__, "git_revision": _core.__git_revision__}


def connect(address: str, timeout: float) -> Any:
    """A Dask client of the scheduler at ``address`` with at least one worker."""
    try:
        from distributed import Client
    except ImportError:
        raise SpecError(
            "--cluster",
            address,
            "needs the dask distributed package: pip install 'ccfair[cluster]'",
        ) from None
    if not isinstance(address, str) or not address:
        raise SpecError("--cluster", address, "is not a scheduler address, e.g. tcp://host:8786")
    with _quiet_dask():
        try:
            client = Client(address, timeout=f"{timeout}s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError, ...
            raise SpecError("--cluster", address, f"cannot be reached: {one_line(exc)}") from None
        try:
            client.wait_for_workers(1, timeout=max(timeout, 60.0))
        except Exception:  # noqa: BLE001 - a timeout, or the scheduler going away
            close_quietly(client)
            raise SpecError(
                "--cluster", address, "has no workers (none joined within 60 s)"
            ) from None
    return client


def run_dask(
    client: Any,
    missing: list[str],
    specs: dict[str, Resolved],
    backend: str,
    root: Path,
    outcome: SweepOutcome,
    bar: Progress,
    say: Callable[[str], None],
    limits: dict[str, int],
    retries: int = 0,
) -> None:
    """Run ``missing`` on the cluster of ``client``, writing each run here as its task returns
    (workers need no shared file system); what happened goes into ``outcome``."""
    from distributed import as_completed

    with _quiet_dask():
        _warn_other_versions(client, say)
        futures = _submit(client, missing, specs, backend, limits, retries)
        try:
            for fut in as_completed(list(futures)):
                _record(client, fut, futures[fut], root, outcome, say)
                bar.update()
                fut.release()
        except KeyboardInterrupt:
            outcome.interrupted = True
            say("\ninterrupted: cancelling the runs on the cluster")
            with contextlib.suppress(Exception):
                client.cancel(list(futures))
        except RunError:
            raise
        except (OSError, TimeoutError) as exc:
            raise _lost(client, outcome, exc) from None
        except Exception as exc:  # noqa: BLE001 - distributed's own errors when the link drops
            if _connection_lost(client, exc):
                raise _lost(client, outcome, exc) from None
            raise


def _warn_other_versions(client: Any, say: Callable[[str], None]) -> None:
    """Say which workers run another ccfair than this process: their runs would not be the
    runs this version makes (the sweep still runs; the user decides)."""
    mine = _worker_versions()
    for worker, version in client.run(_worker_versions).items():
        if version != mine:
            say(f"warning: worker {worker} runs ccfair {version}, this process {mine}")


def _submit(
    client: Any,
    missing: list[str],
    specs: dict[str, Resolved],
    backend: str,
    limits: dict[str, int],
    retries: int,
) -> dict[Any, str]:
    """One task per missing run, named by its run id so that the scheduler's dashboard and
    logs say which run is which; returns each future's run id."""
    return {
        client.submit(
            run_to_bytes,
            rid,
            specs[rid],
            backend,
            limits,
            retries,
            key=f"ccfair-run-{rid}",
            pure=False,
        ): rid
        for rid in missing
    }


def _record(
    client: Any,
    fut: Any,
    rid: str,
    root: Path,
    outcome: SweepOutcome,
    say: Callable[[str], None],
) -> None:
    """Write a finished task's run here, or record its failure and go on with the others; a
    lost scheduler is no run's failure, so it ends the sweep."""
    try:
        res = fut.result()
    except Exception as exc:  # noqa: BLE001 - record and go on with the others
        if _connection_lost(client, exc):
            raise _lost(client, outcome) from None
        outcome.failed[rid] = one_line(exc)
        say(f"run {rid} failed: {outcome.failed[rid]}")
    else:
        write_run_bytes(root, rid, res["tables"])
        outcome.executed.append(rid)
        note_attempts(outcome, res, say)


def _connection_lost(client: Any, exc: BaseException) -> bool:
    """Whether ``exc`` means the scheduler is gone (rather than a run failing): the client
    says so, or distributed cancelled the run or closed the link."""
    if getattr(client, "status", "running") not in ("running", "connecting"):
        return True
    lost = ("FutureCancelledError", "CancelledError", "CommClosedError", "StreamClosedError")
    return type(exc).__name__ in lost


def _lost(client: Any, outcome: SweepOutcome, exc: BaseException | None = None) -> RunError:
    """The error of a sweep whose Dask scheduler went away (finished runs are kept)."""
    address = getattr(getattr(client, "scheduler", None), "address", "the scheduler")
    why = f" ({one_line(exc)})" if exc is not None else ""
    return RunError(
        f"--cluster {address}: lost the connection to the Dask scheduler{why}; "
        f"{len(outcome.executed)} run(s) finished and are kept in {outcome.results_dir}; "
        "rerun the same command to run the rest"
    )


@contextmanager
def _quiet_dask() -> Iterator[None]:
    """Keep distributed's own log records (tracebacks when a connection drops) off the
    terminal while a sweep runs: ccfair reports the failure itself, in one line."""
    # distributed sets levels on its child loggers (distributed.client, ...): quiet each.
    names = ["distributed", "tornado", "asyncio"]
    names += [
        n
        for n in list(logging.root.manager.loggerDict)
        if n.startswith(("distributed.", "tornado.", "asyncio."))
    ]
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, saved, strict=True):
            lg.disabled = was


def close_quietly(client: Any) -> None:
    with _quiet_dask(), contextlib.suppress(Exception):
        client.close(timeout=5)
