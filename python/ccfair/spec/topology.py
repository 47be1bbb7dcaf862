"""Graph arithmetic of a scenario: channels, shortest-path routing and BDP.

Pure functions over node and link indices; :mod:`ccfair.spec` turns user names into indices,
calls these, and turns failures into :class:`ccfair.errors.SpecError`.

Channels: link ``i`` between nodes ``a`` and ``b`` has channel ``2*i`` carrying packets from
``a`` to ``b`` and channel ``2*i + 1`` carrying packets from ``b`` to ``a`` (the engine's
convention, crates/ccfair-sim/src/spec.rs).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

from ccfair.units import parse_rate

__all__ = [
    "PACKET_BYTES",
    "Graph",
    "ack_channels",
    "bdp_packets",
    "buffer_packets",
]

#: Bytes on the wire of a full packet, the unit of buffers and BDPs (docs/experiments.md).
PACKET_BYTES = 1500


@dataclass(frozen=True)
class Graph:
    """Nodes ``0..n_nodes-1`` joined by full-duplex links ``ends[i] = (a, b)``.

    Example:
        >>> g = Graph(3, [(0, 1), (1, 2)])
        >>> g.shortest_path(0, 2), g.channels([0, 1, 2])
        ([0, 1, 2], [0, 2])
    """

    n_nodes: int
    ends: Sequence[tuple[int, int]]

    @cached_property
    def _adjacency(self) -> list[list[tuple[int, int]]]:
        adjacency: list[list[tuple[int, int]]] = [[] for _ in range(self.n_nodes)]
        for i, (a, b) in enumerate(self.ends):
            adjacency[a].append((b, 2 * i))
            adjacency[b].append((a, 2 * i + 1))
        return adjacency

    @cached_property
    def _channel_of(self) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        for i, (a, b) in enumerate(self.ends):
            out.setdefault((a, b), 2 * i)
            out.setdefault((b, a), 2 * i + 1)
        return out

    def neighbours(self, node: int) -> list[tuple[int, int]]:
        """``(neighbour, channel from node to neighbour)`` in link declaration order.

        Example:
            >>> Graph(3, [(0, 1), (2, 1)]).neighbours(1)
            [(0, 1), (2, 3)]
        """
        return list(self._adjacency[node])

    def channel(self, frm: int, to: int) -> int | None:
        """The channel carrying packets from ``frm`` to adjacent ``to`` (first link in
        declaration order), or None if they are not adjacent.

        Example:
            >>> g = Graph(3, [(0, 1), (2, 1)])
            >>> g.channel(1, 2), g.channel(0, 2)
            (3, None)
        """
        return self._channel_of.get((frm, to))

    def shortest_path(self, src: int, dst: int) -> list[int] | None:
        """Fewest-hop node path from ``src`` to ``dst``, or None if unreachable.

        Breadth-first search that visits each node's neighbours in link declaration order,
        so among equal-length paths the one using earlier-declared links wins.

        Example (a square 0-1-3 / 0-2-3; link 0-1 is declared first):
            >>> Graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)]).shortest_path(0, 3)
            [0, 1, 3]
        """
        # A leaf (a host with one link) reaches everything through its one neighbour, and
        # is reached only through it: route between the neighbours, whose breadth-first
        # trees are shared by every flow (a dumbbell of n flows needs one tree, not n).
        # The paths are the ones a search from the leaf itself would find.
        forest = self._forest
        if forest is not None:
            return forest.path(src, dst)
        prefix: list[int] = []
        suffix: list[int] = []
        adjacency = self._adjacency
        if src != dst and len(adjacency[src]) == 1 and adjacency[src][0][0] != dst:
            prefix, src = [src], adjacency[src][0][0]
        if src != dst and len(adjacency[dst]) == 1 and adjacency[dst][0][0] != src:
            suffix, dst = [dst], adjacency[dst][0][0]
        if src == dst:
            return [*prefix, src, *suffix]
        parent = self._tree(src)
        if dst not in parent:
            return None
        path = [dst]
        while path[-1] != src:
            path.append(parent[path[-1]])
        return [*prefix, *path[::-1], *suffix]

    def _tree(self, src: int) -> dict[int, int]:
        """Breadth-first parents of every node reachable from ``src`` (cached), visiting
        neighbours in link declaration order."""
        cached = self._trees.get(src)
        if cached is not None:
            return cached
        adjacency = self._adjacency
        parent: dict[int, int] = {src: src}
        queue = deque([src])
        while queue:
            node = queue.popleft()
            for nxt, _ in adjacency[node]:
                if nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        self._trees[src] = parent
        return parent

    @cached_property
    def _trees(self) -> dict[int, dict[int, int]]:
        return {}

    @cached_property
    def _forest(self) -> _Forest | None:
        """The graph as rooted trees when it has no cycle (parallel links counted as one):
        then the path between two nodes is unique, the one breadth-first search finds, and
        it is found by walking up from both ends, in time of its length. A search per
        source costs the whole graph per flow: a parking lot of h hops has h + 1 sources
        and took O(h^2) (800 hops: 2 s)."""
        n = self.n_nodes
        pairs = {(min(a, b), max(a, b)) for a, b in self.ends if a != b}
        if len(pairs) >= n:  # more distinct links than a forest of n nodes can have
            return None
        adjacency = self._adjacency
        parent = [-1] * n
        depth = [0] * n
        trees = 0
        for root in range(n):
            if parent[root] != -1:
                continue
            trees += 1
            parent[root] = root
            queue = deque([root])
            while queue:
                node = queue.popleft()
                for nxt, _ in adjacency[node]:
                    if parent[nxt] == -1:
                        parent[nxt] = node
                        depth[nxt] = depth[node] + 1
                        queue.append(nxt)
        if len(pairs) != n - trees:  # a cycle: several paths may tie, search instead
            return None
        return _Forest(parent, depth)

    def channels(self, node_path: Sequence[int]) -> list[int]:
        """Channel ids crossed by a node path (consecutive nodes must be adjacent).

        Example:
            >>> Graph(3, [(0, 1), (2, 1)]).channels([0, 1, 2])
            [0, 3]
        """
        out = []
        for frm, to in zip(node_path, node_path[1:], strict=False):
            ch = self.channel(frm, to)
            if ch is None:
                raise ValueError(f"nodes {frm} and {to} are not adjacent")
            out.append(ch)
        return out


@dataclass(frozen=True)
class _Forest:
    """Rooted trees: each node's parent (a root is its own) and depth."""

    parent: list[int]
    depth: list[int]

    def path(self, src: int, dst: int) -> list[int] | None:
        """The node path from ``src`` to ``dst`` through their lowest common ancestor, or
        None when they are in different trees.

        Example (a path 0-1-2 with a leaf 3 on 1, rooted at 0):
            >>> _Forest([0, 0, 1, 1], [0, 1, 2, 2]).path(2, 3)
            [2, 1, 3]
        """
        parent, depth = self.parent, self.depth
        up, down = [src], [dst]
        a, b = src, dst
        while depth[a] > depth[b]:
            a = parent[a]
            up.append(a)
        while depth[b] > depth[a]:
            b = parent[b]
            down.append(b)
        while a != b:
            if parent[a] == a:  # two roots: no path
                return None
            a, b = parent[a], parent[b]
            up.append(a)
            down.append(b)
        return up + down[-2::-1]


def ack_channels(data_channels: Sequence[int]) -> list[int]:
    """The ACK path of a data path: the same links in reverse order, opposite direction.

    Example:
        >>> ack_channels([0, 2, 5])
        [4, 3, 1]
    """
    return [ch ^ 1 for ch in reversed(data_channels)]


def bdp_packets(rate_bps: int, rtt_ns: int) -> Fraction:
    """Bandwidth-delay product in 1500-byte packets, exactly:
    ``rate x rtt / (8 x 1500)``.

    Example (docs/experiments.md: 50 Mbit/s, RTT 8 ms):
        >>> float(bdp_packets(50_000_000, 8_000_000))
        33.333333333333336
    """
    return Fraction(rate_bps * rtt_ns, 8 * PACKET_BYTES * 1_000_000_000)


def buffer_packets(alpha: float, bdp: Fraction) -> int:
    """``alpha x BDP`` rounded to the nearest whole packet (halves up), at least 1.

    Example:
        >>> buffer_packets(2.0, bdp_packets(50_000_000, 8_000_000))
        67
        >>> buffer_packets(0.5, bdp_packets(50_000_000, 40_000_000))
        83
    """
    return max(1, math.floor(Fraction(alpha) * bdp + Fraction(1, 2)))


def bottlenecks(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(link name, direction) of the bottleneck(s) of a normalised spec: on each flow's data
    path, the link direction(s) of the lowest rate.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> bottlenecks(dumbbell(2, "reno").resolve().normalized)
        [('bottleneck', 'ab')]
    """
    by_pair: dict[tuple[str, str], tuple[str, str, int]] = {}
    for link in spec["links"]:
        a, b = link["between"]
        rate = parse_rate(link["rate"]) or 0
        by_pair[(a, b)] = (link["name"], "ab", rate)
        by_pair[(b, a)] = (link["name"], "ba", rate)
    out: list[tuple[str, str]] = []
    for flow in spec["flows"]:
        hops = [by_pair[(u, v)] for u, v in zip(flow["path"], flow["path"][1:], strict=False)]
        low = min(h[2] for h in hops)
        for name, direction, rate in hops:
            if rate == low and (name, direction) not in out:
                out.append((name, direction))
    return out
