"""Execution backends: where a scenario runs, described once.

A backend is a :class:`~ccfair.backends.base.Backend`: a name, a one-line summary, its
capabilities and the calls every driver of runs needs. Each backend is one module of this
package exposing ``BACKEND`` (:mod:`~ccfair.backends.sim`, :mod:`~ccfair.backends.kernel`,
:mod:`~ccfair.backends.veth`); :data:`REGISTRY` lists them, one line each. Adding a backend
is a new module and a line here (docs/adding-a-backend.md).

The registry names its modules rather than importing them, so reading the names (the spec's
validation, the CLI's choices) imports no backend; :func:`get` imports one on first use.

This package is the lowest layer above the base modules (:mod:`ccfair.errors`,
:mod:`ccfair.algorithms`, :mod:`ccfair.limits`, :mod:`ccfair.units`, ``ccfair._core``), the
only ones it may import: a backend runs the resolved scenario it is handed (duck-typed), and
the spec, which names backends, sits above it.

Example:
    >>> names()[:2]
    ('sim', 'kernel')
    >>> get("sim").real_time, get("kernel").real_time
    (False, True)
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from ccfair.backends.base import CAPABILITIES, Backend
from ccfair.errors import SpecError, close_matches, show

__all__ = ["REGISTRY", "get", "has", "names", "require", "unknown", "with_capability"]

#: The backends: name -> the module whose ``BACKEND`` implements it. One line per backend.
REGISTRY: dict[str, str] = {
    "sim": "ccfair.backends.sim",
    "kernel": "ccfair.backends.kernel",
    "veth": "ccfair.backends.veth",
}


def names() -> tuple[str, ...]:
    """The registered backends' names, in registry order.

    Example:
        >>> "sim" in names()
        True
    """
    return tuple(REGISTRY)


@functools.cache
def _load(name: str) -> Backend:
    backend = importlib.import_module(REGISTRY[name]).BACKEND
    if not isinstance(backend, Backend) or backend.name != name:
        raise TypeError(f"{REGISTRY[name]}.BACKEND is not a Backend named {name!r}")
    return backend


def unknown(value: Any) -> str:
    """The message for a value that names no backend, with the closest name.

    Example:
        >>> unknown("kernal")[:52]
        '"kernal" is not a backend; did you mean "kernel"? (b'
    """
    hint = close_matches(str(value), list(REGISTRY))
    more = f'; did you mean "{hint[0]}"?' if hint else ";"
    return f"{show(value)} is not a backend{more} (backends: {', '.join(REGISTRY)})"


def get(name: Any, field: str = "backend") -> Backend:
    """The backend called ``name``; an unknown name is a :class:`SpecError` at ``field``
    naming the closest backend.

    Example:
        >>> get("sim").name
        'sim'
        >>> get("kernal", "--backend")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: --backend: "kernal" is not a backend; did you mean \
"kernel"? (backends: sim, kernel...)
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise SpecError(field, name, unknown(name), with_value=False)
    return _load(name)


def with_capability(capability: str) -> list[Backend]:
    """The backends that have ``capability`` (a key of :data:`CAPABILITIES`).

    Example:
        >>> "kernel" in [b.name for b in with_capability("bpf_programs")]
        True
    """
    if capability not in CAPABILITIES:
        raise KeyError(f"{capability!r} is not a capability; capabilities: {list(CAPABILITIES)}")
    return [b for b in map(_load, REGISTRY) if getattr(b, capability)]


def has(name: str, capability: str) -> bool:
    """Whether the backend ``name`` has ``capability``; False for a name no longer
    registered (results saved by another ccfair).

    Example:
        >>> has("kernel", "self_checked"), has("ns3", "self_checked")
        (True, False)
    """
    return name in REGISTRY and bool(getattr(_load(name), capability))


def require(backend: Backend, capability: str, field: str, value: Any) -> None:
    """Refuse ``value`` at ``field`` unless ``backend`` has ``capability``: a
    :class:`SpecError` naming the backends that have it.

    Example:
        >>> require(get("sim"), "bpf_programs", "force_bpf", True)
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: force_bpf: true applies to backend "kernel" or "veth" only \
(backend "sim" lacks bpf_programs: can run ccfair's BPF programs in place of the host's \
modules (force_bpf))
    """
    if getattr(backend, capability):
        return
    able = " or ".join(f'"{b.name}"' for b in with_capability(capability)) or "none"
    raise SpecError(
        field,
        value,
        f'applies to backend {able} only (backend "{backend.name}" lacks {capability}: '
        f"{CAPABILITIES[capability]})",
    )
