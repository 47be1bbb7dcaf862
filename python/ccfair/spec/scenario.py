"""The scenario: a network, its flows and the run parameters, validated whole.

One schema, three ways in: a TOML file (:meth:`Scenario.from_toml`), a Python dict of the same
shape (:meth:`Scenario.from_dict`), or a builder (:func:`ccfair.spec.shapes.dumbbell`,
:func:`~ccfair.spec.shapes.parking_lot`). Every way in validates the whole spec before
anything runs and raises :class:`~ccfair.errors.SpecError` naming the field path and the bad
value.

:meth:`Scenario.resolve` produces the engine's ``RunSpec`` JSON (crates/ccfair-sim/src/spec.rs:
integers in ns, bit/s and packets, names replaced by indices, routes as channel ids, CCA
parameters and TCP options normalised by the Rust core) and a normalised user-level record for
provenance (:mod:`ccfair.spec.resolve`). The user-facing schema is documented in docs/spec.md.

Example:
    >>> sc = Scenario.from_toml_str('''
    ... duration = "10s"
    ... [[links]]
    ... between = ["a", "b"]
    ... rate = "10Mbit/s"
    ... delay = "5ms"
    ... [[flows]]
    ... src = "a"
    ... dst = "b"
    ... cca = "reno"
    ... ''')
    >>> r = sc.resolve()
    >>> r.engine_spec["flows"][0]["path"], r.engine_spec["flows"][0]["ack_path"]
    ([0], [1])
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import tomllib
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, ValidationError

from ccfair.errors import SpecError
from ccfair.limits import MAX_FLOWS, MAX_LINKS, MAX_NODES
from ccfair.spec import resolve as resolution
from ccfair.spec.parts import (
    Backend,
    Flow,
    KernelName,
    Link,
    Measure,
    Name,
    Options,
    Seed,
    SpecModel,
    TestbedName,
    duration_type,
)
from ccfair.spec.pydantic_errors import spec_error_of
from ccfair.spec.resolved import DERIVED_FLOW_KEYS, DERIVED_LINK_KEYS, Resolved
from ccfair.spec.toml import check_nesting, decode_error, dumps, load_toml, read_spec_file
from ccfair.testbeds import KERNELS, TESTBEDS
from ccfair.units import plain

__all__ = ["Scenario", "as_scenario", "resolution_deferred"]

#: Set while :func:`resolution_deferred` is active: :meth:`Scenario.from_dict` checks types
#: and units only, because the caller resolves the scenario it builds from the result.
_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ccfair_resolution_deferred", default=False
)


@contextlib.contextmanager
def resolution_deferred() -> Iterator[None]:
    """Within it, :meth:`Scenario.from_dict` (and so the builders) checks types and units
    only and resolves nothing: for a caller that turns the scenario back into a dict,
    changes it and validates the result whole (a sweep's point), so that each point is
    resolved once, not once per step.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> with resolution_deferred():
        ...     sc = dumbbell(2, "reno")
        >>> sc._resolved is None
        True
    """
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


class Scenario(SpecModel):
    """A whole scenario: network, flows and run parameters (see docs/spec.md).

    Build one with :meth:`from_toml`, :meth:`from_toml_str`, :meth:`from_dict` or a builder
    (:func:`dumbbell`, :func:`parking_lot`); those validate everything, including node
    references, routes and CCA parameters. Constructing the model directly checks types and
    units only; :meth:`resolve` checks the rest.

    Example:
        >>> sc = Scenario.from_dict({
        ...     "duration": "10s",
        ...     "links": [{"between": ["a", "b"], "rate": "10Mbit/s", "delay": "5ms"}],
        ...     "flows": [{"src": "a", "dst": "b", "cca": "reno"}],
        ... })
        >>> Scenario.from_dict(sc.to_dict()) == sc
        True
    """

    name: Name = "scenario"
    #: Where the scenario runs by default ("sim" when absent); ``ccfair run --backend`` and
    #: ``ccfair.run(backend=...)`` override it. Not part of the normalised record: the same
    #: scenario on two backends has one spec and two run ids.
    backend: Backend | None = None
    duration: duration_type("duration", positive=True)  # type: ignore[valid-type]
    seed: Seed = 1
    sample_interval: duration_type("sample_interval", positive=True) = 10_000_000  # type: ignore[valid-type]
    measure: Measure | None = None
    nodes: list[Name] | None = None
    #: The testbed (:data:`ccfair.testbeds.TESTBEDS`); absent: ``"linux-stock"``,
    #: Linux hosts as shipped on ccfair's drop-tail links.
    testbed: TestbedName | None = None
    #: The hosts' Linux generation (:data:`ccfair.testbeds.KERNELS`); absent: the
    #: testbed's (``"6.18"``, none for ``ideal``).
    kernel: KernelName | None = None
    tcp: Options = Field(default_factory=dict)
    links: Annotated[list[Link], Field(min_length=1)]
    flows: Annotated[list[Flow], Field(min_length=1)]

    #: The resolution this scenario was checked with (:meth:`from_dict` resolves it to
    #: validate it): kept, so that running it resolves nothing again. Dropped when a field
    #: is assigned or the scenario copied; not part of what the scenario is (``==``).
    _resolved: Resolved | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).model_fields:
            super().__setattr__("_resolved", None)
        super().__setattr__(name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario) or type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic's models are

    def __copy__(self) -> Scenario:
        out = super().__copy__()
        out._resolved = None  # model_copy(update=...) changes the copy's fields directly
        return out

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Scenario:
        out = super().__deepcopy__(memo)
        out._resolved = None
        return out

    # ---- ways in ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Validate a dict of the TOML schema (fully: types, units, names, routes, CCAs).

        Example:
            >>> Scenario.from_dict({"duration": 5, "links": [{"between": ["a", "b"],
            ...     "rate": 1e6, "delay": 0.001}], "flows": [{"src": "a", "dst": "b",
            ...     "cca": "reno"}]}).duration
            5000000000
        """
        if not isinstance(data, Mapping):
            raise SpecError("", data, "is not a scenario table (a dict of keys)")
        data = plain(data)  # numpy's numbers as Python's
        _check_bounds(data)
        _check_renamed(data)
        try:
            sc = cls.model_validate(dict(data))
        except ValidationError as exc:
            raise spec_error_of(exc, cls) from None
        if not _DEFERRED.get():
            # Validating is resolving: the result is kept for the run (resolve()).
            sc._resolved = resolution.resolve(sc, raw=data)
        return sc

    @classmethod
    def from_toml_str(cls, text: str, *, source: str | None = None) -> Scenario:
        """Parse and validate TOML text; ``source`` (a file name) is recorded on errors.

        Example:
            >>> Scenario.from_toml_str('duration = "1s"\\n[[links]]\\nbetween = ["a", "b"]\\n'
            ...     'rate = "1Mbit/s"\\ndelay = "1ms"\\n[[flows]]\\nsrc = "a"\\ndst = "b"\\n'
            ...     'cca = "reno"\\n').links[0].delay
            1000000
        """
        try:
            data = load_toml(text)
        except tomllib.TOMLDecodeError as exc:
            raise decode_error(exc, text, source) from None
        except SpecError as exc:
            exc.source = source
            raise
        try:
            return cls.from_dict(data)
        except SpecError as exc:
            exc.source = source
            raise

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Scenario:
        """Read, parse and validate a TOML scenario file.

        Example:
            >>> sc = Scenario.from_toml("scenarios/dumbbell.toml")  # doctest: +SKIP
        """
        text = read_spec_file(path, "scenario")
        return cls.from_toml_str(text, source=os.fspath(path))

    @classmethod
    def from_normalized(cls, record: Mapping[str, Any]) -> Scenario:
        """Rebuild a scenario from a :attr:`Resolved.normalized` record (derived keys such
        as ``buffer_pkts`` are dropped); it resolves to the same engine spec.

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> sc = dumbbell(2, "reno")
            >>> Scenario.from_normalized(sc.resolve().normalized).resolve().engine_json == (
            ...     sc.resolve().engine_json)
            True
        """
        d = _strip_none(dict(record))
        d["links"] = [
            {k: v for k, v in _strip_none(link).items() if k not in DERIVED_LINK_KEYS}
            for link in record.get("links", [])
        ]
        d["flows"] = [
            {k: v for k, v in _strip_none(flow).items() if k not in DERIVED_FLOW_KEYS}
            for flow in record.get("flows", [])
        ]
        return cls.from_dict(d)

    # ---- ways out ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The spec as a dict of the TOML schema (quantities as strings with units; absent
        optional fields and empty option tables omitted).
        ``Scenario.from_dict(sc.to_dict()) == sc``.

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> dumbbell(2, "reno").to_dict()["links"][2]["rate"]
            '50Mbit/s'
        """
        d = self.model_dump(exclude_none=True)
        # Empty option tables are the default; leave them out.
        if not d.get("tcp"):
            d.pop("tcp", None)
        for flow in d["flows"]:
            for key in ("cca_params", "tcp"):
                if not flow.get(key):
                    flow.pop(key, None)
        return d

    def to_toml(self) -> str:
        """The spec as TOML text. ``Scenario.from_toml_str(sc.to_toml()) == sc``.

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> print(dumbbell(1, "reno").to_toml().splitlines()[0])
            name = "dumbbell"
        """
        return dumps(self.to_dict())

    def resolve(self) -> Resolved:
        """Check everything and compute the engine's run spec and the normalised record.

        A scenario is resolved once: the record is kept (from :meth:`from_dict`, which
        resolves to validate, or from the first call) and returned again until a field of
        the scenario is assigned. Change a scenario by building a new one (or with
        ``model_copy(update=...)``), not by editing its links or flows in place.

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> r = dumbbell(2, "reno", bottleneck_delay="2ms").resolve()
            >>> r.link("bottleneck").buffer_pkts, round(r.link("bottleneck").bdp_pkts, 2)
            (67, 33.33)
            >>> r is dumbbell(2, "reno").resolve(), r is r.scenario.resolve()
            (False, True)
        """
        if self._resolved is None:
            self._resolved = resolution.resolve(self, raw=None)
        return self._resolved


def _check_renamed(data: Mapping[str, Any]) -> None:
    """Keys of earlier versions that were renamed: an error naming the new key, rather than
    "unknown field". ``profile`` named the testbed (and the word also named BBR's version)."""
    if "profile" in data:
        raise SpecError(
            "profile",
            data["profile"],
            f"was renamed testbed (testbeds: {', '.join(TESTBEDS)}); the host kernel is "
            f"kernel ({', '.join(KERNELS)})",
        )


def _check_bounds(data: Mapping[str, Any]) -> None:
    """Nesting, string lengths and the number of flows, links and nodes, checked before
    validation so that no input makes validation slow (docs/spec.md, "Limits")."""
    check_nesting(data, "")
    for key, most in (("flows", MAX_FLOWS), ("links", MAX_LINKS), ("nodes", MAX_NODES)):
        items = data.get(key)
        if isinstance(items, list) and len(items) > most:
            raise SpecError(
                key,
                None,
                f"has {len(items)} entries; a scenario has at most {most} {key}",
                with_value=False,
            )


def _strip_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def as_scenario(scenario: Scenario | dict[str, Any] | str | os.PathLike[str]) -> Scenario:
    """Accept a Scenario, a spec dict, or a path to a TOML file."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario)
    if not isinstance(scenario, str | os.PathLike):
        raise SpecError(
            "scenario", scenario, "is not a Scenario, a spec dict or the path of a TOML file"
        )
    return Scenario.from_toml(scenario)
