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


# ---- residuals of the third round of hostile input (each failed before its fix) ----------

import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from ccfair.errors import ResultsError, SpecError  # noqa: E402


def _one_short_line(text: str, most: int = 1000) -> str:
    assert text and "\n" not in text and len(text) <= most, text[:300]
    return text


@pytest.mark.parametrize(
    "field", [("name",), ("testbed",), ("kernel",), ("duration",), ("links", 1, "queue")]
)
def test_a_lone_surrogate_in_a_string_is_a_spec_error(field):
    # pydantic's string check raised a raw UnicodeEncodeError.
    doc = copy.deepcopy(BASE)
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = "a\ud800b"
    with pytest.raises(SpecError, match="not Unicode text") as e:
        ccfair.Scenario.from_dict(doc)
    assert e.value.path == ".".join(str(k) for k in field).replace(".1.", "[1].")
    _one_short_line(str(e.value)).encode("utf-8")  # printable on any stream


def test_a_lone_surrogate_in_a_key_or_builder_argument_is_a_spec_error():
    with pytest.raises(SpecError, match="not Unicode text"):
        ccfair.Scenario.from_dict({**BASE, "x\udc80": 1})
    with pytest.raises(SpecError, match="not Unicode text"):
        ccfair.dumbbell(duration="1s", testbed="ideal\ud800")


@pytest.mark.parametrize(
    "where, value",
    [
        (("links", 1, "loss"), 10**400),
        (("links", 1, "buffer", "bdp"), 10**400),
        (("links", 1, "qdisc", "probability"), 10**400),
    ],
    ids=["loss", "bdp", "red.probability"],
)
def test_integers_too_large_for_a_float_are_spec_errors(where, value):
    # math.isfinite(10**400) raises OverflowError, which validation let through raw.
    doc = copy.deepcopy(BASE)
    if where[-2] == "qdisc":
        doc["links"][1]["queue"] = "red"
        doc["links"][1]["qdisc"] = {}
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(SpecError) as e:
        ccfair.Scenario.from_dict(doc).resolve()
    assert e.value.path.startswith("links[1].")
    _one_short_line(str(e.value))


def test_a_sweep_axis_of_numbers_too_large_or_values_of_no_spec_type_is_a_spec_error():
    base = {"builder": "dumbbell", "duration": "1s"}
    with pytest.raises(SpecError, match="bdp|alpha|positive"):
        Sweep.from_dict({"name": "s", "base": base, "grid": {"alpha": [10**400]}}).expand()
    for bad in (b"x", 1j, object()):
        # json.dumps of a label raised TypeError.
        with pytest.raises(SpecError, match="not a value a spec can hold") as e:
            Sweep.from_dict({"name": "s", "base": base, "grid": {"alpha": [1, bad]}})
        assert e.value.path == "grid.alpha[1]"


@pytest.mark.parametrize("text", [None, b'name = "x"', 3, ["a"]])
def test_toml_text_that_is_not_a_str_is_a_spec_error(text):
    # tomllib raised AttributeError (None) and TypeError (bytes).
    for parse in (ccfair.Scenario.from_toml_str, Sweep.from_toml_str):
        with pytest.raises(SpecError, match="TOML text must be a str"):
            parse(text)


@pytest.mark.parametrize("path", ["a\x00b", "a\ud800b"])
def test_a_results_path_the_file_system_cannot_take_is_a_results_error(path):
    # os.stat raised ValueError (NUL) and UnicodeEncodeError (a lone surrogate).
    with pytest.raises(ResultsError, match="is not a path"):
        ccfair.Results(path)


def test_a_ten_thousand_character_key_makes_a_short_message_path_included():
    # The message cut values, but the path (which holds the key) was shown whole:
    # 5,000 characters of key gave a 5,240-character line.
    for doc in (
        {**BASE, "k" * 10_000: 1},
        {
            **BASE,
            "links": [
                *BASE["links"][:1],
                {**BASE["links"][1], "queue": "codel", "qdisc": {"q" * 10_000: 1}},
                BASE["links"][2],
            ],
        },
        {**BASE, "tcp": {"t" * 10_000: 1}},
    ):
        with pytest.raises(SpecError) as e:
            ccfair.Scenario.from_dict(doc).resolve()
        text = _one_short_line(str(e.value), 1500)  # with the list of known names
        assert not any(c * 300 in text for c in "kqt"), text[:300]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--no-save", "--seed", "x" * 100_000],
        ["run", "--no-save", "--max-events", "x" * 100_000],
        ["ccas", "x" * 100_000],
        ["check", "x" * 100_000],
        ["metrics", ".", "--unknown-option-" + "x" * 100_000],
    ],
)
def test_cli_errors_about_a_long_argument_are_one_short_line(args):
    # argparse, the OS (File name too long) and `ccas` quoted the argument whole: lines of
    # 100,000 characters (2,000 after the backstop).
    out = _cli(*args)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("error: ") and len(line) < 600, line[:300]


def test_numpy_scalars_and_exotic_values_in_new_fields_are_spec_errors_or_accepted():
    # numpy NaN, negative zero and infinities reach the new fields as Python numbers.
    for value in (np.float64("nan"), np.float64("inf"), np.float64(-0.0), np.int64(-1)):
        for make in (
            lambda v: ccfair.dumbbell(
                duration="1s", bottleneck_queue={"name": "codel", "target": v}
            ),
            lambda v: ccfair.dumbbell(duration="1s", testbed=v),
            lambda v: ccfair.dumbbell(duration=v),
        ):
            try:
                make(value).resolve()
            except SpecError as exc:
                _one_short_line(str(exc))


def _python_lines_of_resolve(scenario: ccfair.Scenario) -> int:
    """Python line events of ``scenario.resolve()`` (after a first call): a count of
    work that does not depend on the machine's speed or load."""
    scenario.resolve()
    count = 0

    def tracer(frame, event, arg):  # noqa: ANN001 - sys.settrace's signature
        nonlocal count
        count += 1
        return tracer

    sys.settrace(tracer)
    try:
        scenario.resolve()
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize(
    "make",
    [
        lambda n: ccfair.parking_lot(n, duration="1s"),
        lambda n: ccfair.dumbbell(n_flows=n, duration="1s"),
    ],
    ids=["parking_lot hops", "dumbbell flows"],
)
def test_resolution_work_grows_linearly_with_the_scenario(make):
    # Each flow of a parking lot searched the whole graph from its own source: work grew
    # with hops^2 (25 -> 100 hops: 8.6x the lines, 100 -> 400: 12.7x; 800 hops 2 s).
    small, large = _python_lines_of_resolve(make(25)), _python_lines_of_resolve(make(100))
    assert large / small < 5.0, (small, large)


def test_a_report_or_file_is_never_renamed_onto_a_device_fifo_or_link(tmp_path):
    # `ccfair report --out /dev/null`, as root, renamed the page onto /dev/null: the device
    # became a regular file for every process of the machine. A FIFO stands in for it here.
    import os
    from pathlib import Path

    from ccfair.report.page import write_report
    from ccfair.store.files import check_replaceable, write_bytes_atomic

    with pytest.raises(ResultsError, match="is a device, not a regular file"):
        check_replaceable(Path("/dev/null"))  # looked at, not written
    results = tmp_path / "res"
    ccfair.run(ccfair.dumbbell(duration="0.3s")).save(results)
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    for target, kind in ((fifo, "a FIFO"), (link, "a symbolic link")):
        with pytest.raises(ResultsError, match=f"is {kind}, not a regular file"):
            write_report(results, target)
        with pytest.raises(ResultsError, match=f"is {kind}, not a regular file"):
            write_bytes_atomic(target, b"x")
    assert fifo.is_fifo() and link.is_symlink() and not (tmp_path / "elsewhere.html").exists()
    out = _cli("report", str(results), "--out", str(fifo))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "FIFO" in out.stderr


@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    from ccfair.execution.sweeps import run_sweep

    root = tmp_path_factory.mktemp("fuzz") / "res"
    spec = {
        "name": "fz",
        "base": {"builder": "dumbbell", "duration": "0.5s", "ccas": ["reno", "cubic"]},
        "grid": {"alpha": [1, 2]},
    }
    run_sweep(Sweep.from_dict(spec), root, workers=1, progress=False, log=lambda m: None)
    return ccfair.Results(root)


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.point_metrics(1),
        lambda r: r.point_metrics([]),
        lambda r: r.point_metrics(["jain_index"], percentiles=[float("nan")]),
        lambda r: r.point_metrics(["jain_index"], percentiles=["5"]),
        lambda r: r.point_metrics(["jain_index"], percentiles=[10**400]),
        lambda r: r.point_summary(r.run_metrics(), ["jain_index"], np.array(["a", "b"])),
        lambda r: r.compare(r, values=np.float64("nan")),
        lambda r: r.select(alpha=np.array([1, 2])),
        lambda r: r.table(["flows"]),
        lambda r: r.table(np.array(["a", "b"])),
        lambda r: ccfair.load_table(r.root, np.array(["a", "b"])),
        lambda r: ccfair.load(r.root, run_id=np.array(["a", "b"])),
    ],
)
def test_wrong_types_in_the_results_api_are_ccfair_errors(small_results, call):
    # TypeError (iterating a number), ValueError (pandas' "No objects to concatenate",
    # numpy's ambiguous truth value, quantile of NaN), OverflowError: raw before.
    with pytest.raises(CcfairError) as e:
        call(small_results)
    _one_short_line(str(e.value))


def test_results_api_takes_numpy_labels_and_cuts_long_names(small_results):
    assert small_results.select(alpha=np.int64(2)).run_ids  # a notebook's number
    for call in (
        lambda: small_results.table("t" * 10_000_000),
        lambda: ccfair.load(small_results.root, run_id="r" * 10_000_000),
    ):
        # A 10 MB name made a 10 MB message.
        with pytest.raises(CcfairError) as e:
            call()
        _one_short_line(str(e.value))


@pytest.mark.parametrize("option, value", [("--testbed", "ideal"), ("--kernel", "6.18")])
def test_a_testbed_or_kernel_given_twice_names_the_option(option, value):
    # The error named `grid.testbed`, an axis the user never wrote.
    out = _cli("reproduce", "harada-dumbbell", "--quick", "--dry-run", option, value, option, value)
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert line == f'error: {option}: "{value}" is given twice; give each value once'


def test_a_results_directory_named_with_a_non_utf8_byte_is_written_read_and_verified(
    tmp_path,
):
    # pyarrow encodes paths as UTF-8: `run --out $'o\xff'` was an internal error
    # (UnicodeEncodeError) and a sweep there failed every run.
    from ccfair.store.read import verify_run

    root = tmp_path / "o\udcff"  # how Python names the byte 0xff of a file name
    result = ccfair.run(ccfair.dumbbell(duration="0.3s"))
    result.save(root)
    res = ccfair.Results(root)
    assert len(res.flows) == len(result.flows)
    assert verify_run(root, result.run_id) is None
    assert ccfair.load(root).run_id == result.run_id
    out = _cli("run", "--duration", "0.3s", "--trace", "flow1", "-q", "--out", str(root))
    assert out.returncode == 0, out.stderr
    assert len(list((root / "trace").glob("*.parquet"))) == 1
