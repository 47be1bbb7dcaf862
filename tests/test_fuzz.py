"""Property-based fuzzing of the spec schema (hypothesis), bounded in time.

Mutated scenarios and sweeps go through the Python API; every one must either raise a ccfair
error (one line) or run within its resource estimate: no crash, no raw exception, no run above
its estimate. scripts/fuzz_campaign.py runs the same mutations at scale (thousands of specs,
the CLI too); this test keeps a small sample of them in CI.
"""

from __future__ import annotations

import copy

import ccfair
import pytest
from ccfair.errors import CcfairError
from ccfair.limits import Limits, estimate
from ccfair.spec.sweep import Sweep

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: Small limits keep every accepted run short.
LIMITS = Limits(memory="300MB", events=300_000)

BASE = {
    "name": "fuzz",
    "duration": "2s",
    "sample_interval": "50ms",
    "links": [
        {"between": ["h1", "s1"], "rate": "100Mbit/s", "delay": "1ms"},
        {
            "name": "bottleneck",
            "between": ["s1", "s2"],
            "rate": "10Mbit/s",
            "delay": "5ms",
            "buffer": {"bdp": 1.0, "reference": "f1"},
        },
        {"between": ["s2", "h2"], "rate": "100Mbit/s", "delay": "1ms"},
    ],
    "flows": [
        {"name": "f1", "src": "h1", "dst": "h2", "cca": "cubic"},
        {
            "name": "f2",
            "src": "h1",
            "dst": "h2",
            "cca": "bbr",
            "start": "0.5s",
            "tcp": {"init_cwnd": 10, "rmem": [4096, 131072, 6291456], "rcv_truesize_bytes": 2304},
        },
    ],
}

PATHS = [
    ("duration",),
    ("sample_interval",),
    ("seed",),
    ("name",),
    ("tcp",),
    ("nodes",),
    ("links", 0, "rate"),
    ("links", 1, "delay"),
    ("links", 1, "buffer"),
    ("links", 1, "loss"),
    ("links", 2, "between"),
    ("flows", 0, "cca"),
    ("flows", 1, "start"),
    ("flows", 1, "stop"),
    ("flows", 1, "tcp", "init_cwnd"),
    ("flows", 1, "tcp", "rmem"),
    ("flows", 1, "tcp", "rmem", 2),
    ("flows", 1, "tcp", "rcv_truesize_bytes"),
    ("flows", 0, "cca_params"),
    ("flows", 0, "size"),
    ("flows", 1, "path"),
    ("measure",),
    ("links",),
    ("flows",),
    ("flows", 0, "name"),
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "1ns",
            "1e10s",
            "0s",
            "1e999999999Mbit/s",
            "１s",
            "-5ms",
            "1Tbit/s",
            "reno",
            "bbr",
            "h1",
            "s2",
            "4294967295",
            "inf",
            "",
            "fit",
            "linux",
            [1, 1, 1],
            [4096, 131072, 2**31 - 1],
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _set(doc: dict, path: tuple, value: object) -> None:
    node: object = doc
    for key in path[:-1]:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return
    if isinstance(node, dict) or (isinstance(node, list) and path[-1] < len(node)):
        node[path[-1]] = value


def _check_run_or_error(doc: dict) -> None:
    try:
        sc = ccfair.Scenario.from_dict(doc)
        est = estimate(sc.resolve())
        r = ccfair.run(sc, limits=LIMITS)
    except CcfairError as exc:
        text = str(exc)
        assert text and "\n" not in text and len(text) < 5000
        return
    # No run above its estimate.
    assert len(r.links) == est.link_rows
    assert len(r.timeseries) <= est.timeseries_rows
    assert int(r.runs["engine_events"].iloc[0]) <= est.events


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=3))
def test_mutated_scenarios_raise_a_ccfair_error_or_run_within_their_estimate(mutations):
    doc = copy.deepcopy(BASE)
    for path, value in mutations:
        _set(doc, path, value)
    _check_run_or_error(doc)


SWEEP_KEYS = [
    "name",
    "repetitions",
    "filters",
    "baselines",
    "backend",
    "bottlenecks",
    "preset",
    "grid",
    "base",
]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.sampled_from(SWEEP_KEYS), values), min_size=1, max_size=3),
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "alpha",
                    "delay",
                    "ccas",
                    "params.bbr",
                    "rate",
                    "duration",
                    "links.bottleneck.loss",
                    "x.y",
                ]
            ),
            values,
        ),
        max_size=2,
    ),
)
def test_mutated_sweeps_raise_a_ccfair_error_or_expand(top, axes):
    spec: dict = {
        "name": "f",
        "base": {"builder": "dumbbell", "duration": "1s"},
        "grid": {"alpha": [1, 2]},
    }
    for key, value in top:
        spec[key] = value
    if isinstance(spec.get("grid"), dict):
        for key, value in axes:
            spec["grid"][key] = value
    try:
        points = Sweep.from_dict(spec).expand(limits=Limits(runs=200))
    except CcfairError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert 0 < len(points) <= 200 * 8
