"""A sweep's grid: how each grid value becomes part of a point's scenario dict.

A grid key is a derived parameter (:data:`DERIVED`: ``delay``, ``alpha``, ``ccas``, ...), a
builder argument, ``params.<cca>`` (algorithm parameters) or a dotted path into the scenario
(``links.bottleneck.delay``, ``flows.*.cca_params.bw_rtts``). This module classifies the keys,
labels the values, sets paths, applies derived parameters to builder arguments or to a
scenario table, and makes the homogeneous baseline scenarios of a mixed point.
:class:`ccfair.spec.sweep.Sweep` expands the grid with them.

Example:
    >>> parse_path("links[2].buffer.bdp")
    ['links', 2, 'buffer', 'bdp']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ccfair.algorithms import names as algorithm_names
from ccfair.errors import SpecError, close_matches, show
from ccfair.spec import builders, queues
from ccfair.spec.parts import Flow, Link
from ccfair.spec.scenario import Scenario

__all__ = [
    "DERIVED",
    "Label",
    "apply_params",
    "apply_table_derived",
    "axis",
    "baseline_spec",
    "builder_kwargs",
    "classify",
    "homogeneous",
    "value_label",
    "parse_path",
    "set_path",
]

#: Derived grid parameters and what they set.
DERIVED: dict[str, str] = {
    "delay": "one-way delay of the bottleneck link(s)",
    "alpha": "buffer of the bottleneck link(s), as a multiple of the reference flow's BDP",
    "rate": "rate of the bottleneck link(s)",
    "loss": "random loss probability of the bottleneck link(s)",
    "bottleneck_queue": "queue of the bottleneck link(s): a name (droptail, netem, codel, "
    "fq_codel, pie, red) or a table of the name and the discipline's options "
    '({queue = "codel", ecn = true}); labelled "codel+ecn"',
    "ccas": "the flows' algorithms: a list with one per flow, or one per group of flows "
    "(dumbbell); [main, cross] for a parking lot",
    "n_flows": "number of flows of a dumbbell",
    "per_cca": "flows per entry of ccas (dumbbell): n_flows = len(ccas) x per_cca",
    "rtt_ratio": "dumbbell: flow i's base RTT is spread linearly from flow 1's RTT up to "
    "rtt_ratio x that (longer sender access links)",
    "params.<cca>": "cca_params merged into every flow running <cca>",
}

Label = str | int | float | bool


# --------------------------------------------------------------------------------------------
# Labels and values


def value_label(value: Any) -> Label:
    """How a grid value is shown in tables and figures.

    Example:
        >>> value_label(["reno", "bbr"]), value_label(2.0), value_label({"a": 1})
        ('reno-bbr', 2.0, '{"a":1}')
    """
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list) and all(isinstance(v, bool | int | float | str) for v in value):
        return "-".join(str(v) for v in value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def axis(key: str, raw: Any) -> list[tuple[Label, Any]]:
    """The (label, value) pairs of grid axis ``key``: a table names its values; a list's
    values label themselves (a ``bottleneck_queue`` as :func:`ccfair.spec.queues.label`
    says: ``"fq_codel"``, ``"codel+ecn"``).

    Example:
        >>> axis("bottleneck_queue", ["fq_codel", {"queue": "codel", "ecn": True}])
        [('fq_codel', 'fq_codel'), ('codel+ecn', {'queue': 'codel', 'ecn': True})]
    """
    items: list[tuple[Label, Any]]
    if isinstance(raw, Mapping):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list) and key == "bottleneck_queue":
        items = [(queues.label(v), v) for v in raw]
    elif isinstance(raw, list):
        items = [(value_label(v), v) for v in raw]
    else:
        raise SpecError(
            f"grid.{key}",
            raw,
            f'is not a list of values (or a table of named values); e.g. {key} = ["2ms", "18ms"]',
        )
    if not items:
        raise SpecError(f"grid.{key}", raw, "is empty; give at least one value")
    seen: dict[Label, int] = {}
    for i, (label, _) in enumerate(items):
        if label in seen:
            raise SpecError(
                f"grid.{key}",
                raw,
                f"has two values labelled {show(label)} (entries {seen[label]} and {i}); "
                "give each value once, or name them with a table",
            )
        seen[label] = i
    for label, value in items:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise SpecError(f"grid.{key}", value, "is not a plain value (JSON/TOML)") from None
        del label
    return items


# --------------------------------------------------------------------------------------------
# Dotted paths into a scenario dict


_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


def parse_path(path: str) -> list[str | int]:
    """``"links[2].buffer.bdp"`` -> ``["links", 2, "buffer", "bdp"]``.

    Example:
        >>> parse_path("flows.*.cca_params.bw_rtts")
        ['flows', '*', 'cca_params', 'bw_rtts']
    """
    tokens: list[str | int] = []
    for part in path.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise ValueError(f"segment {part!r} is not a name or name[index]")
        tokens.append(m.group(1))
        tokens += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return tokens


_FIELDS = {
    "": tuple(Scenario.model_fields),
    "links": tuple(Link.model_fields),
    "flows": tuple(Flow.model_fields),
}


def _check_field(key: str, name: str, section: str) -> None:
    allowed = _FIELDS[section]
    if name in allowed:
        return
    where = "a scenario field" if not section else f"a field of {section}"
    hint = close_matches(name, allowed)
    more = f'; did you mean "{hint[0]}"?' if hint else ""
    raise SpecError(
        f"grid.{key}",
        None,
        f"{show(name)} is not {where}{more} (fields: {', '.join(allowed)})",
        with_value=False,
    )


def set_path(doc: dict[str, Any], key: str, tokens: list[str | int], value: Any) -> None:
    """Set ``value`` at the path ``tokens`` of the scenario dict ``doc`` (names select list
    items by their ``name``; ``*`` selects all)."""
    _check_field(key, str(tokens[0]), "")

    def walk(node: Any, i: int, section: str) -> None:
        tok = tokens[i]
        last = i == len(tokens) - 1
        if isinstance(node, list):
            targets = _selected_items(key, node, tok, section)
            if last:
                raise SpecError(
                    f"grid.{key}", None, f"selects {section} items, not a field", with_value=False
                )
            for item in targets:
                nxt = tokens[i + 1]
                if isinstance(nxt, str) and section in _FIELDS:
                    _check_field(key, nxt, section)
                walk(item, i + 1, section)
            return
        if not isinstance(node, dict) or not isinstance(tok, str):
            raise SpecError(
                f"grid.{key}",
                None,
                f"goes through {show(node)}, which has no field {show(tok)}",
                with_value=False,
            )
        if last:
            node[tok] = value
            return
        walk(_sub_table(node, tok), i + 1, tok if tok in ("links", "flows") else "")

    walk(doc, 0, "")


def _selected_items(key: str, items: list[Any], tok: str | int, section: str) -> list[Any]:
    """The items of a list of ``section`` (links or flows) that a path token selects: by
    index, all (``*``), or by name, so that a grid key can say which link it sets."""
    if isinstance(tok, int):
        if not 0 <= tok < len(items):
            raise SpecError(
                f"grid.{key}",
                None,
                f"index [{tok}] is out of range: the scenario has {len(items)} {section}",
                with_value=False,
            )
        return [items[tok]]
    if tok == "*":
        return list(items)
    names = [_item_name(section, j, item) for j, item in enumerate(items)]
    targets = [item for item, name in zip(items, names, strict=True) if name == tok]
    if not targets:
        raise SpecError(
            f"grid.{key}",
            None,
            f"names no item of {section}: {show(tok)} is not one of {', '.join(names)}",
            with_value=False,
        )
    return targets


def _sub_table(node: dict[str, Any], tok: str) -> Any:
    """The value under ``node[tok]`` that a longer path goes on into, made a table when it
    is absent or a scalar short form, so that a sub-field can be set."""
    child = node.get(tok)
    if child is None:
        child = node[tok] = {}
    elif isinstance(child, int | float) and tok in ("buffer", "loss"):
        # Expand the scalar short forms so that a sub-field can be set.
        child = node[tok] = (
            {"packets": child} if tok == "buffer" else {"forward": child, "reverse": child}
        )
    return child


# --------------------------------------------------------------------------------------------
# Derived parameters, builder arguments and baselines


def classify(key: str, builder: str | None) -> str:
    """What a grid key is: ``alias``/``derived`` (derived parameter), ``params``
    (``params.<cca>``), ``arg`` (builder argument) or ``path`` (dotted scenario path)."""
    if key.startswith("params."):
        _check_params_key(key)
        return "params"
    if key in ("delay", "alpha", "rate", "loss", "bottleneck_queue"):
        _check_alias(key, builder)
        return "alias"
    if key == "ccas" or any(key in b.derived for b in builders.BUILDERS.values()):
        _check_derived(key, builder)
        return "derived"
    if builder is not None and key in builders.get(builder).parameters():
        return "arg"
    _check_field_path(key, builder)
    return "path"


def _check_params_key(key: str) -> None:
    """A ``params.<cca>`` key must name a known algorithm, or its axis would set nothing."""
    cca = key[len("params.") :]
    if not cca:
        raise SpecError(f"grid.{key}", None, "names no algorithm (params.<cca>)", with_value=False)
    known = algorithm_names()
    if cca not in known:
        hint = close_matches(cca, known)
        more = f'; did you mean "{hint[0]}"?' if hint else ""
        raise SpecError(
            f"grid.{key}",
            None,
            f"{show(cca)} is not a known congestion control{more} (known: {', '.join(known)})",
            with_value=False,
        )


def _check_alias(key: str, builder: str | None) -> None:
    """An alias (delay, alpha, ...) the base's builder cannot vary is refused with its
    reason."""
    unsupported = builders.get(builder).unsupported if builder is not None else {}
    if key in unsupported:
        raise SpecError(
            f"grid.{key}",
            None,
            f"is not supported for {builder}; {unsupported[key]}",
            with_value=False,
        )


def _check_derived(key: str, builder: str | None) -> None:
    """A builder's own derived parameter needs a base of that builder (``ccas`` goes with
    any base)."""
    if key != "ccas" and (builder is None or key not in builders.get(builder).derived):
        able = builders.taking(key)
        raise SpecError(
            f"grid.{key}",
            None,
            f"needs a {' or '.join(able)} base ([base] builder = {show(able[0])}); this "
            f"base is {builder or 'a scenario table'}",
            with_value=False,
        )


def _check_field_path(key: str, builder: str | None) -> None:
    """Any other key must be a dotted path into a scenario field; the error lists what the
    key could have been."""
    try:
        tokens = parse_path(key)
    except ValueError as exc:
        raise SpecError(
            f"grid.{key}", None, f"is not a field path: {exc}", with_value=False
        ) from None
    first = tokens[0]
    if not isinstance(first, str) or first not in _FIELDS[""]:
        known = [*DERIVED, *(builders.get(builder).parameters() if builder else [])]
        hint = close_matches(str(first), [*known, *_FIELDS[""]])
        more = f'; did you mean "{hint[0]}"?' if hint else ""
        raise SpecError(
            f"grid.{key}",
            None,
            f"{show(key)} is not a derived parameter ({', '.join(DERIVED)}), "
            + (f"an argument of {builder}(), " if builder else "")
            + f"or a scenario field path like links.NAME.delay{more}",
            with_value=False,
        )


def builder_kwargs(
    builder: str,
    base: dict[str, Any],
    grid: dict[str, Any],
    labels: Mapping[str, Label],
) -> dict[str, Any]:
    """Merge the base arguments with the grid's derived parameters and arguments: an alias
    sets its argument, the builder's other derived parameters go through its
    ``grid_arguments`` (:mod:`ccfair.spec.builders`)."""
    b = builders.get(builder)
    kwargs = dict(base)
    for k, v in grid.items():
        if k in b.aliases:
            kwargs[b.aliases[k]] = v
        elif k not in b.derived:
            kwargs[k] = v
    return b.grid_arguments(kwargs, grid) if b.grid_arguments is not None else kwargs


def _bottleneck_links(
    doc: dict[str, Any], names: list[str] | None, key: str
) -> list[dict[str, Any]]:
    links = doc["links"]
    if names is not None:
        chosen = []
        for name in names:
            found = [link for link in links if link.get("name", _default_name(link)) == name]
            if not found:
                raise SpecError(
                    "bottlenecks",
                    name,
                    "is not a link of the base scenario; links: "
                    + ", ".join(str(link.get("name", _default_name(link))) for link in links),
                )
            chosen += found
        return chosen
    chosen = [
        link
        for link in links
        if isinstance(link.get("buffer"), Mapping) and "bdp" in link["buffer"]
    ]
    if not chosen:
        chosen = [link for link in links if link.get("name") == "bottleneck"]
    if not chosen:
        raise SpecError(
            f"grid.{key}",
            None,
            "needs bottleneck links: the base has no link with a BDP buffer and none named "
            '"bottleneck"; list them with bottlenecks = ["LINK", ...]',
            with_value=False,
        )
    return chosen


def _item_name(section: str, index: int, item: Mapping[str, Any]) -> str:
    """The name of a link or flow, with the defaults of docs/spec.md (``a-b``, ``flow<i>``)."""
    if item.get("name"):
        return str(item["name"])
    return _default_name(item) if section == "links" else f"flow{index + 1}"


def _default_name(link: Mapping[str, Any]) -> str:
    a, b = link["between"]
    return f"{a}-{b}"


def apply_table_derived(
    doc: dict[str, Any],
    key: str,
    value: Any,
    bottlenecks: list[str] | None,
    labels: Mapping[str, Label],
) -> None:
    """Derived parameters on a scenario-table base."""
    if key == "ccas":
        flows = doc["flows"]
        n = len(flows)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or n % len(value):
            raise SpecError(
                "grid.ccas",
                value,
                f"is not a list whose length divides the {n} flows of the base (one per flow "
                "or per equal group)",
            )
        per = n // len(value)
        for i, flow in enumerate(flows):
            flow["cca"] = value[i // per]
            flow.pop("cca_params", None)
        return
    field_name = {"delay": "delay", "rate": "rate", "loss": "loss", "alpha": "buffer"}.get(key)
    for link in _bottleneck_links(doc, bottlenecks, key):
        if key == "bottleneck_queue":
            queue, qdisc = queues.split_queue_value(value, "grid.bottleneck_queue")
            link["queue"] = queue
            link.pop("qdisc", None)
            if qdisc is not None:
                link["qdisc"] = dict(qdisc)
        elif key == "alpha":
            buf = link.get("buffer")
            ref = buf.get("reference") if isinstance(buf, Mapping) else None
            if ref is None:
                ref = doc["flows"][0].get("name", "flow1")
            link["buffer"] = {"bdp": value, "reference": ref}
        else:
            link[str(field_name)] = value
    del labels


def apply_params(doc: dict[str, Any], cca: str, value: Any, labels: Mapping[str, Label]) -> None:
    if not isinstance(value, Mapping):
        raise SpecError(
            f"grid.params.{cca}", value, "is not a table of parameters (e.g. {rate_th = 2.0})"
        )
    for flow in doc["flows"]:
        if flow.get("cca") == cca:
            flow["cca_params"] = {**flow.get("cca_params", {}), **value}
    del labels


def homogeneous(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The baseline scenarios of a point: for each algorithm of a mixed point, the same
    scenario with every flow running that algorithm (with the parameters of its first flow)."""
    flows = doc["flows"]
    ccas: list[str] = []
    for f in flows:
        if f["cca"] not in ccas:
            ccas.append(f["cca"])
    if len(ccas) < 2:
        return []
    out = []
    for cca in ccas:
        params = next(f.get("cca_params", {}) for f in flows if f["cca"] == cca)
        bdoc = json.loads(json.dumps(doc))
        for f in bdoc["flows"]:
            f["cca"] = cca
            if params:
                f["cca_params"] = dict(params)
            else:
                f.pop("cca_params", None)
        out.append((cca, bdoc))
    return out


def baseline_spec(normalized: Mapping[str, Any], cca: str) -> dict[str, Any] | None:
    """The normalised spec of the run that is ``normalized`` with every flow running ``cca``
    (the parameters of its first ``cca`` flow): the harm baseline of ``cca``'s flows.

    Example:
        >>> import ccfair
        >>> rec = ccfair.dumbbell(2, ["reno", "cubic"]).resolve().normalized
        >>> [f["cca"] for f in baseline_spec(rec, "cubic")["flows"]]
        ['cubic', 'cubic']
    """
    flows = normalized.get("flows", [])
    mine = [f for f in flows if f.get("cca") == cca]
    if not mine:
        return None
    params = mine[0].get("cca_params", {})
    out: dict[str, Any] = json.loads(json.dumps(normalized))
    for f in out["flows"]:
        f["cca"] = cca
        f["cca_params"] = params
    return out
