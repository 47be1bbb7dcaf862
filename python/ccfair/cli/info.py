"""``ccfair check`` (what scenario files resolve to and cost), ``ccfair ccas`` and ``ccfair
builders`` (the algorithms' and builders' registries). No run, no results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from ccfair import algorithms as algorithm_registry
from ccfair.cli.common import fail
from ccfair.cli.options import limits_of
from ccfair.cli.output import print_json
from ccfair.errors import CcfairError, SpecError
from ccfair.limits import Limits, check, estimate
from ccfair.spec import builders as builder_registry
from ccfair.spec import queues
from ccfair.spec.scenario import as_scenario


def cmd_check(args: argparse.Namespace) -> int:
    """Check every file given (each failure is one ``error:`` line naming its file); exit
    status 2 if any failed."""
    lim = limits_of(args)
    reports = []  # for --json
    failed = 0
    for path in args.scenario:
        try:
            report = _check_file(path, lim)
        except (CcfairError, OSError) as exc:
            failed += 1
            message = _failure(path, exc)
            fail(message)
            reports.append({"file": path, "valid": False, "error": message})
            continue
        resolved = report.pop("resolved")
        if args.json:
            del report["summary"]
            if args.engine:
                report["engine_spec"] = resolved.engine_spec
            reports.append(report)
            continue
        if args.engine:
            print(json.dumps(resolved.engine_spec, indent=2))
        else:
            _print_check(report)
        sys.stdout.flush()  # each file's report before the next file's error line
    if args.json:
        print_json(reports)
    return 2 if failed else 0


def _failure(path: str, exc: BaseException) -> str:
    """The one line of a file that failed, naming the file."""
    if isinstance(exc, OSError):
        return f"{path}: {exc.strerror or exc}"
    message = str(exc)
    return message if path in message else f"{path}: {message}"


def _check_file(path: str, lim: Limits) -> dict[str, Any]:
    """One file's report (the JSON of ``check --json``); raises what is wrong with it."""
    resolved = as_scenario(path).resolve()
    est = estimate(resolved)
    check(resolved.engine_spec, lim)  # a run ccfair would refuse is not "valid"
    links = [
        {
            "name": link.name,
            "a": link.a,
            "b": link.b,
            "rate_bps": link.rate_bps,
            "delay_ns": link.delay_ns,
            "buffer_pkts": link.buffer_pkts,
            "buffer_bdp": link.buffer_bdp,
            "bdp_pkts": link.bdp_pkts,
            "reference": link.reference,
            "queue": queues.describe(link.queue, link.qdisc),
        }
        for link in resolved.links
    ]
    flows = [
        {
            "name": flow.name,
            "cca": flow.cca,
            "node_path": list(flow.node_path),
            "base_rtt_ns": flow.base_rtt_ns,
            "bdp_pkts": flow.bdp_pkts,
        }
        for flow in resolved.flows
    ]
    return {
        "file": path,
        "valid": True,
        "scenario": resolved.normalized["name"],
        "links": links,
        "flows": flows,
        "estimate": est.to_dict(),
        "summary": est.summary(),
        "resolved": resolved,
    }


def _print_check(report: dict[str, Any]) -> None:
    print(f"{report['file']}: valid")
    for link in report["links"]:
        bdp = (
            f"{link['buffer_bdp']:g} x BDP of {link['reference']} ({link['bdp_pkts']:.2f} pkt)"
            if link["buffer_bdp"] is not None
            else "no reference"
        )
        print(
            f"  link {link['name']:12s} {link['a']}-{link['b']}  {link['rate_bps'] / 1e6:g} "
            f"Mbit/s  {link['delay_ns'] / 1e6:g} ms  buffer {link['buffer_pkts']} pkt ({bdp})  "
            f"queue {link['queue']}"
        )
    for flow in report["flows"]:
        print(
            f"  flow {flow['name']:10s} {flow['cca']:8s} {'>'.join(flow['node_path'])}  "
            f"RTT {flow['base_rtt_ns'] / 1e6:g} ms  BDP {flow['bdp_pkts']:.2f} pkt"
        )
    print(f"  {report['summary']}")


def cmd_ccas(args: argparse.Namespace) -> int:
    for name in args.names:
        try:
            algorithm_registry.algorithm(name)
        except KeyError as exc:
            raise SpecError("ccas", name, str(exc.args[0]), with_value=False) from None
    if args.markdown:
        print(algorithm_registry.format_markdown(), end="")
    elif args.json:
        chosen = args.names or list(algorithm_registry.algorithms())
        print_json([dataclasses.asdict(algorithm_registry.algorithm(n)) for n in chosen])
    else:
        print(algorithm_registry.format_table(args.names or None))
    return 0


def cmd_builders(args: argparse.Namespace) -> int:
    for name in args.names:
        builder_registry.get(name, "builders")
    chosen = [builder_registry.get(n, "builders") for n in args.names] or list(
        builder_registry.BUILDERS.values()
    )
    if args.json:
        print_json(
            [
                {
                    "name": b.name,
                    "summary": b.summary,
                    "topology": b.topology,
                    "grid_keys": {**b.aliases, **{d: None for d in b.derived}},
                    "arguments": [dataclasses.asdict(a) for a in b.arguments()],
                }
                for b in chosen
            ]
        )
        return 0
    print(
        builder_registry.format_markdown()
        if args.markdown
        else builder_registry.format_table(args.names or None),
        end="",
    )
    return 0
