"""The algorithm registry (issue 12): each algorithm is described once, in Rust
(crates/ccfair-cc/src/registry.rs), and everything in Python that needs to know about
algorithms reads that description: the model table, the kernel backend, the figures,
``ccfair ccas`` and docs/algorithms.md."""

from __future__ import annotations

import dataclasses
import doctest
import json
import subprocess
import sys
from pathlib import Path

import ccfair
import ccfair.algorithms as algorithms_module
import pytest
from ccfair import _core
from ccfair.algorithms import algorithm, algorithms, format_markdown, format_table, names
from ccfair.analysis import models
from ccfair.backends.kernel import host as kernel_host
from ccfair.present.style import CCA_COLORS, cca_color

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ccfair.cli", *args], capture_output=True, text=True
    )


def test_the_registry_names_the_algorithms_the_engine_builds():
    assert names() == list(_core.known_ccas())
    assert len(set(names())) == len(names())


def test_exported_defaults_are_what_the_engine_normalises_to():
    # The metadata's defaults come from the same normalisation the engine applies to a
    # flow's parameters, so the table a user reads is the table a run records.
    for a in algorithms().values():
        assert a.defaults() == json.loads(_core.normalize_cca(a.name, "{}")), a.name


def test_every_parameter_has_a_type_and_a_meaning():
    for a in algorithms().values():
        for p in a.params:
            assert p.kind, (a.name, p.name)
            assert len(p.doc) > 20, (a.name, p.name, p.doc)


def test_families_pacing_and_linux_modules():
    # Pinned for the algorithms ccfair has; a new one needs no change here.
    expected = {
        # name: (family, paces, Linux module, BPF program)
        "reno": ("loss-based", False, "reno", False),
        "cubic": ("loss-based", False, "cubic", False),
        "copa": ("delay-based", True, None, True),
        "bbr": ("model-based", True, "bbr", True),
    }
    for name, want in expected.items():
        a = algorithm(name)
        assert (a.family, a.paces, a.linux_name, a.bpf_program) == want, name
    families = {"loss-based", "delay-based", "model-based"}
    assert {a.family for a in algorithms().values()} <= families


def test_units_are_exported():
    cubic = {p.name: p for p in algorithm("cubic").params}
    assert cubic["beta"].unit == "1/1024" and cubic["beta"].kind == "integer"
    assert cubic["hystart_ack_delta_us"].unit == "us"
    bbr = {p.name: p for p in algorithm("bbr").params}
    assert bbr["probe_rtt_ms"].unit == "ms"
    assert bbr["version"].kind == "linux-6.18 | linux-4.15 | linux-4.13"
    # A profile-dependent default is shown resolved, and the type says null is accepted.
    assert bbr["extra_acked"].default is True and bbr["extra_acked"].kind == "boolean or null"


def test_unknown_algorithm_names_the_closest():
    try:
        algorithm("cubci")
    except KeyError as exc:
        assert 'did you mean "cubic"' in str(exc.args[0])
    else:
        raise AssertionError("no KeyError")


def test_kernel_backend_reads_linux_names_and_bpf_programs_from_the_registry():
    assert kernel_host.LINUX_NAME == {
        a.name: a.linux_name for a in algorithms().values() if a.linux_name is not None
    }
    assert {
        "reno": "reno",
        "cubic": "cubic",
        "bbr": "bbr",
    }.items() <= kernel_host.LINUX_NAME.items()
    assert set(kernel_host.BPF_ALGORITHMS) == {n for n in names() if algorithm(n).bpf_program}
    assert kernel_host.BPF_NAME_RE.match("ccf0123abcdcopa")
    assert kernel_host.BPF_NAME_RE.match("ccf0123abcdbbr")
    assert not kernel_host.BPF_NAME_RE.match("ccf0123abcdcubic")


def test_a_new_loss_based_algorithm_enters_the_model_table(monkeypatch):
    spec = ccfair.dumbbell(2, ["cubic", "bbr"], buffer_bdp=2.0).resolve().normalized
    spec["flows"][0]["cca"] = "newloss"
    assert models.ware_inputs(spec) is None
    registry = dict(algorithms())
    registry["newloss"] = dataclasses.replace(registry["cubic"], name="newloss")
    monkeypatch.setattr(algorithms_module, "algorithms", lambda: registry)
    w = models.ware_inputs(spec)
    assert w is not None and w["n_loss"] == 1 and w["n_bbr"] == 1


def test_every_algorithm_has_its_own_colour_in_every_order():
    colours = [cca_color(n) for n in names()]
    assert len(set(colours)) == len(colours)
    # A name the registry lacks (results of another version) gets a colour that does not
    # depend on which figure met it first.
    assert cca_color("vegas") == cca_color("vegas")
    assert cca_color("vegas") not in CCA_COLORS.values()


def test_ccas_prints_a_table_with_units_defaults_and_meanings():
    p = cli("ccas")
    assert p.returncode == 0, p.stderr
    for n in names():
        assert any(line.startswith(f"{n} (") for line in p.stdout.splitlines()), n
    beta = next(line for line in p.stdout.splitlines() if line.strip().startswith("beta "))
    assert beta.split() == ["beta", "integer", "717", "1/1024"]
    assert "multiplicative decrease" in p.stdout
    assert "kernel backend: Linux module cubic" in p.stdout
    assert max(len(line) for line in p.stdout.splitlines()) <= 100


def test_ccas_selects_algorithms_and_prints_json():
    p = cli("ccas", "reno")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("reno (loss-based; paces: no)") and "cubic" not in p.stdout
    p = cli("ccas", "--json", "copa")
    assert p.returncode == 0, p.stderr
    (copa,) = json.loads(p.stdout)
    assert copa["family"] == "delay-based" and copa["linux_name"] is None
    assert {q["name"] for q in copa["params"]} == set(algorithm("copa").defaults())


def test_ccas_unknown_name_is_one_line_error():
    p = cli("ccas", "vegas")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "vegas" in p.stderr, p.stderr


def test_docs_algorithms_md_is_the_registry():
    # docs/algorithms.md is generated (`ccfair ccas --markdown > docs/algorithms.md`); a
    # parameter added or documented in Rust without regenerating it fails here.
    assert (ROOT / "docs" / "algorithms.md").read_text() == format_markdown()


def test_format_table_wraps_every_parameter_doc():
    text = format_table(["bbr"], width=60)
    docs = [line for line in text.splitlines() if line.startswith("      ")]
    assert len(docs) > len(algorithm("bbr").params)
    assert max(len(line) for line in docs) <= 60
    for p in algorithm("bbr").params:
        assert f"  {p.name} " in text, p.name


def test_docstring_examples():
    result = doctest.testmod(algorithms_module)
    assert result.attempted > 5 and result.failed == 0


@pytest.mark.parametrize(
    "cca, kw, path, text",
    [
        # The key within the table comes from Rust (crates/ccfair-cc/src/params.rs), typed.
        ("bbr", {"cca_params": {"fixed_start_phase": 9}}, "cca_params.fixed_start_phase", "9"),
        ("bbr", {"cca_params": {"version": "linux-3"}}, "cca_params.version", "linux-3"),
        ("cubic", {"cca_params": {"beta": "x"}}, "cca_params.beta", '"x"'),
        ("reno", {"cca_params": {"betta": 1}}, "cca_params.betta", "there are no fields"),
        ("reno", {"tcp": {"rmem": [0, 10, 20]}}, "tcp.rmem", "[0, 10, 20]"),
        # A check across options that fails on a default blames the option the user wrote
        # and names the check.
        ("reno", {"tcp": {"mss": 8948}}, "tcp.mss", "rcv_truesize_bytes: 2304"),
    ],
)
def test_parameter_errors_name_the_key_the_user_wrote(cca, kw, path, text):
    with pytest.raises(ccfair.SpecError) as info:
        ccfair.dumbbell(2, cca, **kw).resolve()
    assert info.value.path.endswith(path), info.value.path
    assert text in str(info.value)
