"""The builder registry (issue 12, part 3): each topology builder is registered once with its
arguments, derived sweep parameters and docs; sweeps, ``ccfair builders`` and
docs/builders.md read it."""

from __future__ import annotations

import doctest
import inspect
import subprocess
import sys
from pathlib import Path

import ccfair
import ccfair.spec.builders as builders_module
import pytest
from ccfair.errors import SpecError
from ccfair.spec.builders import BUILDERS, Builder, format_markdown, get, taking
from ccfair.spec.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ccfair", *args], capture_output=True, text=True)


def test_every_argument_of_every_builder_has_a_meaning_and_aliases_name_arguments():
    for b in BUILDERS.values():
        params = b.parameters()
        assert set(b.docs) == set(params), b.name
        assert all(b.docs[p] for p in params), b.name
        assert set(b.aliases.values()) <= set(params), b.name
        assert not set(b.aliases) & set(b.derived), b.name
        assert not set(b.unsupported) & set(b.aliases), b.name


def test_an_unknown_builder_names_the_field_and_the_closest_builder():
    with pytest.raises(SpecError) as err:
        Sweep.from_dict({"base": {"builder": "parkinglot"}, "grid": {"alpha": [1]}}).expand()
    assert err.value.path == "base.builder"
    assert str(err.value) == (
        'base.builder: "parkinglot" is not a builder; did you mean "parking_lot"? '
        f"(builders: {', '.join(BUILDERS)})"
    )


def test_a_derived_parameter_a_builder_lacks_names_the_builders_that_take_it():
    assert "dumbbell" in taking("n_flows") and "parking_lot" not in taking("n_flows")
    base = {"builder": "parking_lot", "hops": 2}
    with pytest.raises(SpecError) as err:
        Sweep.from_dict({"base": base, "grid": {"n_flows": [2]}}).expand()
    assert str(err.value) == (
        'grid.n_flows: needs a dumbbell base ([base] builder = "dumbbell"); this base is '
        "parking_lot"
    )
    with pytest.raises(SpecError, match="not supported for parking_lot; set links.L1.loss"):
        Sweep.from_dict({"base": base, "grid": {"loss": [0.01]}}).expand()


def test_docs_builders_md_is_the_registry():
    assert (ROOT / "docs" / "builders.md").read_text() == format_markdown()


def test_ccfair_builders_prints_the_registry_and_refuses_an_unknown_name():
    out = cli("builders", "parking_lot")
    assert out.returncode == 0
    assert out.stdout.startswith("parking_lot: ")
    assert "main_cca" in out.stdout and "dumbbell:" not in out.stdout
    bad = cli("builders", "dumbel")
    assert bad.returncode == 2
    assert 'did you mean "dumbbell"?' in bad.stderr


def _line(
    n_flows: int = 1,
    cca: str = "cubic",
    *,
    hop_delay: str = "5ms",
    buffer_bdp: float = 2.0,
    duration: str = "2s",
    name: str = "line",
) -> ccfair.Scenario:
    """A chain of two links and ``n_flows`` flows end to end (a test builder)."""
    return ccfair.Scenario.from_dict(
        {
            "name": name,
            "duration": duration,
            "nodes": ["a", "b", "c"],
            "links": [
                {"between": ["a", "b"], "rate": "10Mbit/s", "delay": hop_delay},
                {
                    "name": "bottleneck",
                    "between": ["b", "c"],
                    "rate": "10Mbit/s",
                    "delay": hop_delay,
                    "buffer": {"bdp": buffer_bdp, "reference": "f1"},
                },
            ],
            "flows": [
                {"name": f"f{i + 1}", "src": "a", "dst": "c", "cca": cca} for i in range(n_flows)
            ],
        }
    )


def test_a_new_builder_is_one_entry_and_sweeps_use_it(monkeypatch):
    line = Builder(
        name="line",
        function=_line,
        summary="a -> b -> c",
        topology="two links in a chain",
        docs={p: "meaning" for p in inspect.signature(_line).parameters},
        aliases={"delay": "hop_delay", "alpha": "buffer_bdp"},
    )
    monkeypatch.setitem(builders_module.BUILDERS, "line", line)
    points = Sweep.from_dict(
        {
            "base": {"builder": "line", "n_flows": 2},
            "grid": {"delay": ["1ms", "3ms"], "alpha": [1, 4], "cca": ["reno"]},
        }
    ).expand()
    assert len(points) == 4
    last = points[-1].scenario.resolve()
    assert last.link("bottleneck").buffer_bdp == 4
    assert [f.cca for f in last.flows] == ["reno", "reno"]
    assert last.normalized["links"][0]["delay"] == "3ms"
    with pytest.raises(SpecError, match="is not an argument of line\\(\\)"):
        Sweep.from_dict({"base": {"builder": "line", "hops": 2}, "grid": {"alpha": [1]}})
    assert "## `line`" in format_markdown()


def test_docstring_examples_run():
    result = doctest.testmod(builders_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_the_sweep_reads_builders_from_the_registry():
    assert get("dumbbell").function is ccfair.dumbbell
    assert get("parking_lot").function is ccfair.parking_lot
