"""``ccfair check`` (what scenario files resolve to and cost), ``ccfair ccas`` and ``ccfair
builders`` (the algorithms' and builders' registries). No run, no results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from ccfair import algorithms as algorithm_registry
from ccfair.cli.options import limits_of
from ccfair.errors import SpecError
from ccfair.limits import check, estimate
from ccfair.spec import builders as builder_registry
from ccfair.spec import queues
from ccfair.spec.scenario import as_scenario


def cmd_check(args: argparse.Namespace) -> int:
    lim = limits_of(args)
    for path in args.scenario:
        resolved = as_scenario(path).resolve()
        if args.engine:
            print(json.dumps(resolved.engine_spec, indent=2))
            continue
        est = estimate(resolved)
        check(resolved.engine_spec, lim)  # a run ccfair would refuse is not "valid"
        print(f"{path}: valid")
        for link in resolved.links:
            bdp = (
                f"{link.buffer_bdp:g} x BDP of {link.reference} ({link.bdp_pkts:.2f} pkt)"
                if link.buffer_bdp is not None
                else "no reference"
            )
            print(
                f"  link {link.name:12s} {link.a}-{link.b}  {link.rate_bps / 1e6:g} Mbit/s  "
                f"{link.delay_ns / 1e6:g} ms  buffer {link.buffer_pkts} pkt ({bdp})  "
                f"queue {queues.describe(link.queue, link.qdisc)}"
            )
        for flow in resolved.flows:
            print(
                f"  flow {flow.name:10s} {flow.cca:8s} {'>'.join(flow.node_path)}  "
                f"RTT {flow.base_rtt_ns / 1e6:g} ms  BDP {flow.bdp_pkts:.2f} pkt"
            )
        print(f"  {est.summary()}")
    return 0


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
        print(
            json.dumps(
                [dataclasses.asdict(algorithm_registry.algorithm(n)) for n in chosen], indent=1
            )
        )
    else:
        print(algorithm_registry.format_table(args.names or None))
    return 0


def cmd_builders(args: argparse.Namespace) -> int:
    for name in args.names:
        builder_registry.get(name, "builders")
    print(
        builder_registry.format_markdown()
        if args.markdown
        else builder_registry.format_table(args.names or None),
        end="",
    )
    return 0
