"""Bad scenario specs are rejected before anything runs, naming the field path and value.

Table-driven: each case is a spec (a dict edited from a valid base, or TOML text), the field
path the error must name, and the text of the bad value that must appear in the message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from ccfair import _core
from ccfair.errors import SpecError
from ccfair.spec.scenario import Scenario

CCA = "reno"  # always in the Rust registry


def base() -> dict[str, Any]:
    """A valid dumbbell-like line: h1 - s1 - s2 - h2 plus h3 at s1, two flows."""
    return {
        "name": "base",
        "duration": "10s",
        "links": [
            {"between": ["h1", "s1"], "rate": "1Gbit/s", "delay": "1ms"},
            {
                "name": "bn",
                "between": ["s1", "s2"],
                "rate": "50Mbit/s",
                "delay": "2ms",
                "buffer": {"bdp": 2.0, "reference": "flow1"},
            },
            {"between": ["s2", "h2"], "rate": "1Gbit/s", "delay": "1ms"},
            {"between": ["h3", "s1"], "rate": "1Gbit/s", "delay": "1ms"},
        ],
        "flows": [
            {"src": "h1", "dst": "h2", "cca": CCA},
            {"src": "h3", "dst": "h2", "cca": CCA},
        ],
    }


def edit(fn: Callable[[dict[str, Any]], Any]) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        d = copy.deepcopy(base())
        fn(d)
        return d

    return make


def link(i: int, **kv: Any) -> Callable[[], dict[str, Any]]:
    return edit(lambda d: d["links"][i].update(kv))


def flow(i: int, **kv: Any) -> Callable[[], dict[str, Any]]:
    return edit(lambda d: d["flows"][i].update(kv))


def top(**kv: Any) -> Callable[[], dict[str, Any]]:
    return edit(lambda d: d.update(kv))


def drop(*keys: Any) -> Callable[[], dict[str, Any]]:
    def fn(d: dict[str, Any]) -> None:
        node = d
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]

    return edit(fn)


GOOD_TOML = """
duration = "10s"
[[links]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "5ms"
[[flows]]
src = "a"
dst = "b"
cca = "reno"
"""


@dataclass
class Case:
    id: str
    spec: Callable[[], dict[str, Any]] | str  # dict factory, or TOML text
    path: str
    value: str  # must appear in the message


CASES = [
    # ---- unknown keys, at every level ----
    Case("unknown top-level key", top(durration="5s"), "durration", '"durration"'),
    Case("unknown link key", link(1, rat="5Mbit/s"), "links[1].rat", '"5Mbit/s"'),
    Case("unknown flow key", flow(0, congestion="cubic"), "flows[0].congestion", '"cubic"'),
    Case(
        "unknown buffer key",
        link(1, buffer={"bdp": 2.0, "referense": "flow1"}),
        "links[1].buffer.referense",
        '"flow1"',
    ),
    Case("unknown loss key", link(1, loss={"fwd": 0.1}), "links[1].loss.fwd", "0.1"),
    Case("unknown measure key", top(measure={"begin": "1s"}), "measure.begin", '"1s"'),
    Case("unknown tcp option", top(tcp={"msss": 1400}), "tcp.msss", "1400"),
    Case("unknown flow tcp option", flow(1, tcp={"sackk": True}), "flows[1].tcp.sackk", "true"),
    Case(
        "unknown cca parameter",
        flow(0, cca_params={"betta": 0.7}),
        "flows[0].cca_params.betta",
        "0.7",
    ),
    # ---- wrong types ----
    Case("seed as string", top(seed="1"), "seed", '"1"'),
    Case("seed as bool", top(seed=True), "seed", "true"),
    Case("links not a list", top(links={"a": 1}), "links", '{"a": 1}'),
    Case(
        "link not a table",
        edit(lambda d: d["links"].__setitem__(0, "h1-s1")),
        "links[0]",
        '"h1-s1"',
    ),
    Case("between not two names", link(0, between=["h1"]), "links[0].between", '["h1"]'),
    Case("node name not a string", link(0, between=["h1", 5]), "links[0].between[1]", "5"),
    Case("cca not a string", flow(0, cca=3), "flows[0].cca", "3"),
    Case("buffer as float", link(1, buffer=2.5), "links[1].buffer", "2.5"),
    Case("buffer as string", link(1, buffer="lots"), "links[1].buffer", '"lots"'),
    Case("rate nonsense", link(1, rate="fast"), "links[1].rate", '"fast"'),
    Case("duration nonsense", top(duration="a minute"), "duration", '"a minute"'),
    Case("tcp option wrong type", flow(0, tcp={"mss": "big"}), "flows[0].tcp.mss", '"big"'),
    Case("path not a list", flow(0, path="h1 s1 s2 h2"), "flows[0].path", '"h1 s1 s2 h2"'),
    Case("missing src", drop("flows", 1, "src"), "flows[1].src", "missing"),
    Case("missing duration", drop("duration"), "duration", "missing"),
    # ---- quantities out of range ----
    Case("negative rate", link(1, rate=-5), "links[1].rate", "-5"),
    Case("zero rate", link(2, rate="0Mbit/s"), "links[2].rate", '"0Mbit/s"'),
    Case("negative delay", link(0, delay="-1ms"), "links[0].delay", '"-1ms"'),
    Case("zero duration", top(duration=0), "duration", "0"),
    Case("zero buffer", link(1, buffer=0), "links[1].buffer", "0"),
    Case("zero buffer packets", link(1, buffer={"packets": 0}), "links[1].buffer.packets", "0"),
    Case(
        "bdp alpha zero",
        link(1, buffer={"bdp": 0, "reference": "flow1"}),
        "links[1].buffer.bdp",
        "0",
    ),
    Case(
        "bdp alpha negative",
        link(1, buffer={"bdp": -2, "reference": "flow1"}),
        "links[1].buffer.bdp",
        "-2",
    ),
    Case("bdp without reference", link(1, buffer={"bdp": 2}), "links[1].buffer", '"bdp": 2'),
    Case("loss of one", link(1, loss=1), "links[1].loss", "1"),
    Case("negative loss", link(1, loss={"forward": -0.1}), "links[1].loss.forward", "-0.1"),
    Case("negative seed", top(seed=-1), "seed", "-1"),
    Case("seed too large", top(seed=2**63), "seed", str(2**63)),
    Case("zero sample interval", top(sample_interval="0ms"), "sample_interval", '"0ms"'),
    Case("sample interval beyond duration", top(sample_interval="11s"), "sample_interval", '"11s"'),
    Case("zero size", flow(0, size=0), "flows[0].size", "0"),
    Case("negative size", flow(0, size="-1MB"), "flows[0].size", '"-1MB"'),
    # ---- times and the duration ----
    Case("start beyond duration", flow(1, start="70000ms"), "flows[1].start", '"70000ms"'),
    Case("start at duration", flow(1, start=10), "flows[1].start", "10"),
    Case("stop beyond duration", flow(0, stop="11s"), "flows[0].stop", '"11s"'),
    Case(
        "start jitter past the end",
        flow(0, start="9s", start_jitter="2s"),
        "flows[0].start_jitter",
        '"2s"',
    ),
    Case("negative start jitter", flow(0, start_jitter="-1ms"), "flows[0].start_jitter", '"-1ms"'),
    Case("stop before start", flow(0, start="2s", stop="1s"), "flows[0].stop", '"1s"'),
    Case("stop equal start", flow(0, start="2s", stop=2), "flows[0].stop", "2"),
    Case("negative start", flow(0, start=-1), "flows[0].start", "-1"),
    Case("measure end beyond duration", top(measure={"end": "12s"}), "measure.end", '"12s"'),
    Case(
        "measure end before start", top(measure={"start": "5s", "end": "4s"}), "measure.end", '"4s"'
    ),
    Case("measure start at duration", top(measure={"start": "10s"}), "measure.start", '"10s"'),
    # ---- names and graph ----
    Case("unknown cca", flow(1, cca="vegas"), "flows[1].cca", '"vegas"'),
    Case("unknown flow src", flow(0, src="h9"), "flows[0].src", '"h9"'),
    Case("src equals dst", flow(0, dst="h1"), "flows[0].dst", '"h1"'),
    Case("node not listed", top(nodes=["h1", "s1", "s2", "h2"]), "links[3].between[0]", '"h3"'),
    Case("duplicate node", top(nodes=["h1", "s1", "s2", "h2", "h3", "s1"]), "nodes[5]", '"s1"'),
    Case("duplicate link name", link(2, name="bn"), "links[2].name", '"bn"'),
    Case(
        "duplicate flow name",
        edit(lambda d: [f.update(name="x") for f in d["flows"]]),
        "flows[1].name",
        '"x"',
    ),
    Case("default flow name taken", flow(1, name="flow1"), "flows[1].name", '"flow1"'),
    Case(
        "parallel link",
        edit(lambda d: d["links"].append({"between": ["s2", "s1"], "rate": "1Mbps", "delay": 0})),
        "links[4].between",
        '["s2", "s1"]',
    ),
    Case("self-loop link", link(0, between=["s1", "s1"]), "links[0].between", '["s1", "s1"]'),
    Case(
        "unreachable destination",
        edit(
            lambda d: (
                d["links"].append({"between": ["x", "y"], "rate": "1Mbps", "delay": 0}),
                d["flows"][0].update(dst="y"),
            )
        ),
        "flows[0].dst",
        '"y"',
    ),
    Case(
        "buffer reference not a flow",
        link(1, buffer={"bdp": 1, "reference": "flow9"}),
        "links[1].buffer.reference",
        '"flow9"',
    ),
    Case("path skips a link", flow(0, path=["h1", "s2", "h2"]), "flows[0].path[1]", '"s2"'),
    Case(
        "path from wrong node", flow(0, path=["h3", "s1", "s2", "h2"]), "flows[0].path[0]", '"h3"'
    ),
    Case("path to wrong node", flow(0, path=["h1", "s1", "h3"]), "flows[0].path[2]", '"h3"'),
    Case("path unknown node", flow(0, path=["h1", "s1", "zz", "h2"]), "flows[0].path[2]", '"zz"'),
    Case(
        "path loops", flow(0, path=["h1", "s1", "h3", "s1", "s2", "h2"]), "flows[0].path[3]", '"s1"'
    ),
    Case("empty name", link(0, name=""), "links[0].name", '""'),
    Case("path too short", flow(0, path=["h1"]), "flows[0].path", '["h1"]'),
    # ---- TOML text ----
    Case("TOML syntax error", GOOD_TOML.replace('"10Mbit/s"', "10Mbit/s"), "", "line 5"),
    Case("TOML duplicate key", 'duration = "5s"\n' + GOOD_TOML, "", "line 3"),
    Case(
        "TOML unknown key", GOOD_TOML.replace("[[flows]]", "[[flows]]\ncc = 1"), "flows[0].cc", "1"
    ),
    Case(
        "TOML second link bad",
        GOOD_TOML.replace(
            "[[flows]]", '[[links]]\nbetween = ["b", "c"]\nrate = -5\ndelay = "1ms"\n[[flows]]'
        ),
        "links[1].rate",
        "-5",
    ),
]


def test_enough_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_spec_is_rejected(case: Case):
    with pytest.raises(SpecError) as info:
        if isinstance(case.spec, str):
            Scenario.from_toml_str(case.spec)
        else:
            Scenario.from_dict(case.spec())
    err = info.value
    message = str(err)
    assert err.path == case.path, message
    assert case.value in message, message
    assert "\n" not in message
    if case.path:
        assert message.startswith(f"{case.path}: ")
    assert isinstance(err, ValueError)


def test_base_is_valid():
    Scenario.from_dict(base()).resolve()
    Scenario.from_toml_str(GOOD_TOML).resolve()


def test_unknown_cca_lists_the_known_ones():
    with pytest.raises(SpecError) as info:
        Scenario.from_dict(flow(0, cca="vegas")())
    for name in _core.known_ccas():
        assert name in str(info.value)


def test_value_attribute_is_the_value_as_written():
    with pytest.raises(SpecError) as info:
        Scenario.from_dict(link(1, rate=-5)())
    assert info.value.value == -5
    assert str(info.value) == 'links[1].rate: -5 is not a positive rate (e.g. "50Mbit/s")'


def test_unknown_key_suggests_the_known_one():
    with pytest.raises(SpecError) as info:
        Scenario.from_dict(link(1, dealy="1ms")())
    assert 'did you mean "delay"' in str(info.value)


def test_several_problems_are_all_kept():
    with pytest.raises(SpecError) as info:
        Scenario.from_dict(link(1, rate=-5, delay="soon")())
    assert [e.path for e in info.value.errors] == ["links[1].rate", "links[1].delay"]
    assert str(info.value).startswith("links[1].rate: ")


def test_toml_errors_report_line_and_column_and_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD_TOML.replace('"5ms"', "5ms"))
    with pytest.raises(SpecError) as info:
        Scenario.from_toml(path)
    assert "line 6, column" in str(info.value)
    assert "5ms" in str(info.value)
    assert info.value.source == str(path)
    path.write_text(GOOD_TOML.replace('"reno"', '"vegas"'))
    with pytest.raises(SpecError) as info:
        Scenario.from_toml(path)
    assert info.value.path == "flows[0].cca" and info.value.source == str(path)


def test_not_a_table():
    with pytest.raises(SpecError) as info:
        Scenario.from_dict([1, 2])  # type: ignore[arg-type]
    assert info.value.path == "" and "[1, 2]" in str(info.value)


def test_an_empty_node_list_is_named_as_empty():
    spec = {
        "duration": "1s",
        "nodes": [],
        "links": [{"between": ["a", "b"], "rate": "1Mbit/s", "delay": "1ms"}],
        "flows": [{"src": "a", "dst": "b", "cca": "reno"}],
    }
    with pytest.raises(
        SpecError, match=r'links\[0\].between\[0\]: "a" is not a node; nodes: none$'
    ):
        Scenario.from_dict(spec).resolve()


@pytest.mark.parametrize(
    ("text", "shown"),
    [("\ufeffduration = '1s'\n", r"\ufeffduration = '1s'"), ("x = '1\x00'\n", r"x = '1\x00'")],
)
def test_invisible_characters_in_a_bad_toml_line_are_shown_escaped(text, shown):
    with pytest.raises(SpecError) as info:
        Scenario.from_toml_str(text)
    assert str(info.value).endswith("the line reads: " + shown)
