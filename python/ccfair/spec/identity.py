"""What names a run: the identity of a normalised spec (the spec without options at their
defaults), its run id (a content hash with the backend) and its point key (the run id's hash
without the seed, shared by the repetitions of one point).

A run id names a run everywhere: its files in a results directory
(``RESULTS/<table>/<run_id>.parquet``), the sweep record, the ``run_id`` column. The same
point never runs twice: a finished run is found by its id.

Example:
    >>> run_id_of({"seed": 1, "a": 2}, "sim") == run_id_of({"seed": 1, "a": 2}, "sim")
    True
    >>> point_key({"seed": 1, "a": 2}, "sim") == point_key({"seed": 7, "a": 2}, "sim")
    True
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

from ccfair import _core
from ccfair.spec import queues

__all__ = ["RUN_ID", "IdentityJson", "point_key", "run_id_of", "spec_identity"]

#: A run id: the first 16 hex digits of a content hash (:func:`run_id_of`).
RUN_ID = re.compile(r"[0-9a-f]{16}")


def run_id_of(normalized: dict[str, Any], backend: str) -> str:
    """Content hash of a normalised spec's identity (:func:`spec_identity`) and backend: the
    same point never runs twice.

    Example:
        >>> run_id_of({"a": 1}, "sim") == run_id_of({"a": 1}, "sim")
        True
    """
    return IdentityJson(normalized).run_id(backend)


class IdentityJson:
    """A normalised spec's identity (:func:`spec_identity`) as JSON, each top-level field
    serialised once, for the two hashes that name a run: its run id and its point key
    (which leaves out the seed). At 10,000 flows each serialisation of the identity takes
    ~0.15 s; :attr:`ccfair.spec.resolved.Resolved.identity_json` keeps one per resolved spec.

    The hashed text is exactly ``json.dumps({"spec": identity, "backend": backend},
    sort_keys=True)``, as it always was: finished runs keep their ids
    (tests/test_run.py pins two).

    Example:
        >>> ident = IdentityJson({"seed": 3, "a": [1, 2]})
        >>> ident.run_id("sim") == run_id_of({"seed": 3, "a": [1, 2]}, "sim")
        True
        >>> ident.point_key("sim") == IdentityJson({"seed": 4, "a": [1, 2]}).point_key("sim")
        True
    """

    def __init__(self, normalized: dict[str, Any]) -> None:
        identity = spec_identity(normalized)
        self._identity = identity
        # json.dumps turns other keys into strings and sorts them differently: those few
        # records are serialised whole.
        self._fields = (
            {k: json.dumps(v, sort_keys=True) for k, v in identity.items()}
            if all(isinstance(k, str) for k in identity)
            else None
        )

    def _blob(self, backend: str, without: str | None) -> str:
        if self._fields is None:
            spec = {k: v for k, v in self._identity.items() if k != without}
            return json.dumps({"spec": spec, "backend": backend}, sort_keys=True)
        fields = ", ".join(
            f"{json.dumps(k)}: {text}" for k, text in sorted(self._fields.items()) if k != without
        )
        return f'{{"backend": {json.dumps(backend)}, "spec": {{{fields}}}}}'

    def run_id(self, backend: str) -> str:
        """The run id (:func:`run_id_of`)."""
        return _hash16(self._blob(backend, None))

    def point_key(self, backend: str) -> str:
        """The point key (:func:`point_key`): the run id's hash without the seed, shared by
        the repetitions of one point."""
        return _hash16(self._blob(backend, "seed"))


def _hash16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def _tcp_defaults() -> dict[str, Any]:
    defaults: dict[str, Any] = json.loads(_core.normalize_tcp("{}"))
    return defaults


@functools.cache
def _cca_defaults(cca: str) -> dict[str, Any]:
    defaults: dict[str, Any] = json.loads(_core.normalize_cca(cca, "{}"))
    return defaults


@functools.cache
def _qdisc_defaults(queue: str) -> dict[str, Any]:
    return queues.from_engine(queue, json.loads(_core.normalize_qdisc(queue, "{}")))


def spec_identity(normalized: dict[str, Any]) -> dict[str, Any]:
    """What names a run: the normalised spec without the TCP options, algorithm
    parameters and queue-discipline options that are at their defaults. The normalised
    record keeps them all; the
    identity leaves them out so that a ccfair version adding an option (at a default that
    keeps the old behaviour) keeps every earlier run id, and finished runs, the kernel's
    above all, stay valid.

    Example:
        >>> spec_identity({"tcp": {"mss": 1448, "sack": False}, "flows": []})
        {'tcp': {'sack': False}, 'flows': []}
    """
    tcp_defaults = _tcp_defaults()

    def tcp(options: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v for k, v in options.items() if tcp_defaults.get(k, v) != v or k not in tcp_defaults
        }

    def cca_params(cca: str, params: dict[str, Any]) -> dict[str, Any]:
        defaults = _cca_defaults(cca)
        return {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}

    out = dict(normalized)
    if isinstance(out.get("tcp"), dict):
        out["tcp"] = tcp(out["tcp"])
    flows = []
    # The flows of a scenario mostly have equal options: each distinct set is filtered once
    # (10,000 flows: one filtering, not 10,000). Told apart by ``repr``, which unlike ``==``
    # tells 1, 1.0 and True apart, as the run id's JSON does.
    filtered: dict[tuple[str, ...], dict[str, Any]] = {}
    for f in out.get("flows", []):
        f = dict(f)
        if isinstance(f.get("tcp"), dict):
            key: tuple[str, ...] = ("tcp", repr(f["tcp"]))
            if key not in filtered:
                filtered[key] = tcp(f["tcp"])
            f["tcp"] = dict(filtered[key])
        if isinstance(f.get("cca_params"), dict) and isinstance(f.get("cca"), str):
            key = ("cca_params", f["cca"], repr(f["cca_params"]))
            if key not in filtered:
                filtered[key] = cca_params(f["cca"], f["cca_params"])
            f["cca_params"] = dict(filtered[key])
        flows.append(f)
    if "flows" in out:
        out["flows"] = flows
    if any(isinstance(link, dict) and "qdisc" in link for link in out.get("links", [])):
        out["links"] = [_link_identity(link) for link in out["links"]]
    return out


def _link_identity(link: Any) -> Any:
    """A link without the options of its queue discipline that are at their defaults."""
    if not isinstance(link, dict) or not isinstance(link.get("qdisc"), dict):
        return link
    if link.get("queue") not in queues.DISCIPLINES:
        return link
    defaults = _qdisc_defaults(str(link.get("queue")))
    return {
        **link,
        "qdisc": {k: v for k, v in link["qdisc"].items() if k not in defaults or defaults[k] != v},
    }


def point_key(normalized: dict[str, Any], backend: str) -> str:
    """What a run is, without its seed: runs with the same key are repetitions of one
    point (the same normalised spec and backend, different seeds).

    Example:
        >>> point_key({"seed": 1, "a": 2}, "sim") == point_key({"seed": 7, "a": 2}, "sim")
        True
    """
    return IdentityJson(normalized).point_key(backend)
