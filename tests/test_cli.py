"""The ``ccfair`` command's habits (docs/cli.md): JSON on stdout and nothing else, progress and
notices on stderr, a quiet end in a closed pipe, one-line errors with suggestions, options
in any order, every file of ``check`` checked, shell completion, ``reproduce --dry-run``.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import ccfair
import pytest
from ccfair.execution.sweeps import run_sweep
from ccfair.spec.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]
#: Child processes import the package under test, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


def cli(*args: str, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ccfair", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=kw.pop("env", ENV),
        timeout=300,
        **kw,
    )


def one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    """Exit 2 with exactly one ``error:`` line on stderr, no usage block, no traceback."""
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    return lines[0]


def json_of(out: subprocess.CompletedProcess[str]):
    """stdout is one JSON document (and nothing else); strict: no NaN or Infinity."""
    assert out.returncode == 0, out.stderr

    def refuse(name: str):
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(out.stdout, parse_constant=refuse)


def small_toml(tmp_path: Path, name: str = "small", **kw) -> Path:
    sc = ccfair.dumbbell(2, ["reno", "cubic"], duration="1s", name=name, **kw)
    path = tmp_path / f"{name}.toml"
    path.write_text(sc.to_toml())
    return path


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    """Two grid points x two repetitions of one-second runs."""
    root = tmp_path_factory.mktemp("cli") / "r"
    sw = Sweep.from_dict(
        {
            "name": "clisweep",
            "base": {"builder": "dumbbell", "duration": "1s", "sample_interval": "100ms"},
            "grid": {"alpha": [1, 2]},
            "repetitions": 2,
        }
    )
    assert run_sweep(sw, root, workers=1, progress=False, log=lambda m: None).complete
    return root


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli-spec") / "s.toml"
    path.write_text(
        'name = "d"\nrepetitions = 2\n[base]\nbuilder = "dumbbell"\nduration = "2s"\n'
        "[grid]\nalpha = [1, 2]\n"
    )
    return path


# --------------------------------------------------------------------------------------------
# Machine-readable output


def test_run_json_is_the_only_thing_on_stdout(tmp_path):
    out = cli("run", str(small_toml(tmp_path)), "--no-save", "--json")
    flows = json_of(out)
    assert [f["flow_name"] for f in flows] == ["flow1", "flow2"]
    assert {f["cca"] for f in flows} == {"reno", "cubic"} and flows[0]["goodput_mbps"] > 0
    assert "running 'small'" in out.stderr  # progress goes to stderr


def test_check_json_lists_every_file_with_its_estimate_or_error(tmp_path):
    good = small_toml(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text('duration = "1s"\nbogus = 1\n')
    out = cli("check", str(good), str(bad), str(good), "--json")
    assert out.returncode == 2
    doc = json.loads(out.stdout)
    assert [d["file"] for d in doc] == [str(good), str(bad), str(good)]
    assert [d["valid"] for d in doc] == [True, False, True]
    assert "bogus" in doc[1]["error"]
    first = doc[0]
    assert first["scenario"] == "small" and [f["cca"] for f in first["flows"]] == ["reno", "cubic"]
    bottleneck = next(link for link in first["links"] if link["name"] == "bottleneck")
    assert bottleneck["rate_bps"] == 50e6 and bottleneck["buffer_pkts"] > 0
    assert first["estimate"]["files"] == 5 and first["estimate"]["events"] > 0
    # The failure is also one error line on stderr, naming the file.
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}") and "bogus" in lines[0]


def test_sweep_dry_run_json_lists_points_estimate_and_time(sweep_file, tmp_path):
    doc = json_of(cli("sweep", str(sweep_file), "--dry-run", "--json", cwd=tmp_path))
    assert doc["sweep"] == "d" and doc["runs"] == 4 and doc["finished"] == 0
    assert [p["params"]["alpha"] for p in doc["points"]] == [1, 1, 2, 2]
    assert [p["rep"] for p in doc["points"]] == [0, 1, 0, 1]
    assert len({p["run_id"] for p in doc["points"]}) == 4
    assert doc["estimate"]["files"] == 22 and doc["estimate"]["events"] > 0
    assert doc["time"]["runs_to_run"] == 4 and doc["time"]["wall_s"] > 0
    assert not (tmp_path / "results").exists()


def test_results_commands_print_json_records(results_dir, tmp_path):
    metrics = json_of(cli("metrics", str(results_dir), "--json"))
    assert len(metrics) == 2 and all("jain_index" in row for row in metrics)
    compare = json_of(cli("compare", str(results_dir), str(results_dir), "--json"))
    assert compare and all(row["diff"] == 0 for row in compare)
    run_id = ccfair.Results(results_dir).run_ids[0]
    plots = json_of(
        cli("plot", str(results_dir), run_id, "--format", "svg", "--out", str(tmp_path), "--json")
    )
    assert plots == [{"run_id": run_id, "files": [str(tmp_path / f"timeseries-{run_id}.svg")]}]
    presets = json_of(cli("reproduce", "--list", "--json"))
    harada = next(p for p in presets if p["name"] == "harada-dumbbell")
    assert harada["runs"] > harada["quick_runs"] > 0 and harada["title"]
    builders = json_of(cli("builders", "--json"))
    dumbbell = next(b for b in builders if b["name"] == "dumbbell")
    assert "n_flows" in [a["name"] for a in dumbbell["arguments"]]
    ccas = json_of(cli("ccas", "cubic", "--json"))
    assert [a["name"] for a in ccas] == ["cubic"]


def test_a_sweep_run_prints_its_outcome_as_json(sweep_file, tmp_path):
    out = cli("sweep", str(sweep_file), "--out", str(tmp_path / "r"), "--json", "--workers", "1")
    doc = json_of(out)
    assert doc["complete"] is True and doc["total"] == 4 and len(doc["executed"]) == 4
    assert doc["failed"] == {} and doc["results_dir"] == str(tmp_path / "r")
    assert "sweep 'd'" in out.stderr  # the notices went to stderr


def test_a_closed_pipe_ends_quietly_with_status_0(tmp_path):
    """`ccfair ... | head -1`: the reader goes away while ccfair still writes."""
    sc = ccfair.dumbbell(300, "reno", duration="1s")
    path = tmp_path / "big.toml"
    path.write_text(sc.to_toml())
    p = subprocess.Popen(
        [sys.executable, "-m", "ccfair", "check", str(path), "--engine"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert p.stdout is not None and p.stderr is not None
    assert p.stdout.readline().strip() == b"{"
    p.stdout.close()  # more than a pipe's buffer is still to come
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0, err
    assert err == ""


# --------------------------------------------------------------------------------------------
# Errors and suggestions


@pytest.mark.parametrize(
    "args, hint",
    [
        (["rum"], '"run"'),
        (["Run"], '"run"'),
        (["run", "--backend", "Kernel"], '"kernel"'),
        (["metrics", "x", "--table", "Runs"], '"runs"'),
        (["ccas", "CUBIC"], '"cubic"'),
        (["reproduce", "HARADA-dumbbell"], '"harada-dumbbell"'),
    ],
)
def test_a_mistyped_name_gets_one_line_with_a_suggestion(args, hint):
    line = one_error_line(cli(*args))
    assert f"did you mean {hint}?" in line, line
    assert "usage:" not in line


def test_an_argument_error_is_one_line_naming_the_option():
    line = one_error_line(cli("run", "--seed", "x"))
    assert "--seed" in line and "'x'" in line and "ccfair run --help" in line


def test_an_algorithm_name_in_another_case_gets_a_suggestion(tmp_path):
    text = ccfair.dumbbell(1, "cubic", duration="1s").to_toml()
    assert text.count('cca = "cubic"') == 1
    path = tmp_path / "upper.toml"
    path.write_text(text.replace('cca = "cubic"', 'cca = "CUBIC"'))
    line = one_error_line(cli("check", str(path)))
    assert 'flows[0].cca: "CUBIC"' in line and 'did you mean "cubic"?' in line


def test_options_and_positionals_come_in_any_order(results_dir, tmp_path):
    run_id = ccfair.Results(results_dir).run_ids[1]
    out = cli("plot", str(results_dir), "-q", run_id, "--format", "svg", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / f"timeseries-{run_id}.svg").exists()
    # The global --debug after the command, a positional after options.
    out = cli("check", "--max-events", "1e9", str(small_toml(tmp_path)), "--debug")
    assert out.returncode == 0 and ": valid" in out.stdout, out.stderr


def test_an_unknown_trace_flow_fails_before_anything_runs(tmp_path):
    out = cli("run", str(small_toml(tmp_path)), "--trace", "flow9", "--out", str(tmp_path / "r"))
    line = one_error_line(out)
    assert "flow9" in line and "flow1, flow2" in line
    assert "running" not in out.stdout + out.stderr
    assert not (tmp_path / "r").exists()


def test_check_checks_every_file_and_reports_each(tmp_path):
    good = small_toml(tmp_path)
    bad_key = tmp_path / "bad1.toml"
    bad_key.write_text('duration = "1s"\nbogus = 1\n')
    missing = tmp_path / "missing.toml"
    out = cli("check", str(bad_key), str(good), str(missing))
    assert out.returncode == 2
    assert out.stdout.count(": valid") == 1 and f"{good}: valid" in out.stdout
    errors = out.stderr.strip().splitlines()
    assert len(errors) == 2, out.stderr
    assert errors[0].startswith(f"error: {bad_key}") and "bogus" in errors[0]
    assert errors[1].startswith("error: ") and str(missing) in errors[1]


# --------------------------------------------------------------------------------------------
# Shell completion


@functools.cache
def completion_script(shell: str) -> str:
    out = cli("completion", shell)
    assert out.returncode == 0, out.stderr
    return out.stdout


def complete(words: list[str]) -> list[str]:
    """What the bash completion script offers for the last of ``words`` (being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (
        f"{completion_script('bash')}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _ccfair; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash runs the completion script")
def test_bash_completion_offers_commands_options_choices_and_names():
    assert complete(["ccfair", "re"]) == ["reproduce", "report"]
    assert "--dry-run" in complete(["ccfair", "reproduce", "--d"])
    assert complete(["ccfair", "run", "--backend", "k"]) == ["kernel"]
    assert complete(["ccfair", "reproduce", "harada-d"]) == ["harada-dumbbell"]
    assert complete(["ccfair", "ccas", "cu"]) == ["cubic"]
    assert complete(["ccfair", "metrics", "x", "--table", "h"]) == ["harm"]


def test_zsh_completion_is_the_bash_function_under_bashcompinit():
    bash, zsh = completion_script("bash"), completion_script("zsh")
    function = bash[bash.index("_ccfair()") : bash.index("\ncomplete ")]
    assert function in zsh and "bashcompinit" in zsh


# --------------------------------------------------------------------------------------------
# Progress, dry runs, bench


def test_progress_without_a_terminal_is_a_line_every_few_seconds(monkeypatch):
    from ccfair.execution import outcome

    now = [100.0]
    monkeypatch.setattr(outcome.time, "monotonic", lambda: now[0])
    stream = io.StringIO()  # not a terminal
    bar = outcome.Progress(10, "demo", True, stream=stream)
    for _ in range(10):
        now[0] += 2.0  # a run every 2 s
        bar.update()
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    # One line at the start, one per LINE_INTERVAL_S (runs 3, 6, 9 at 6, 12 and 18 s)
    # and the last.
    assert lines[0] == "demo: 0/10 runs"
    assert [line.split(":")[1].split()[0] for line in lines[1:]] == [
        "3/10",
        "6/10",
        "9/10",
        "10/10",
    ]
    assert "20 s elapsed" in lines[-1]


def test_a_sweep_to_a_log_file_writes_lines(sweep_file, tmp_path):
    log = tmp_path / "log.txt"
    with open(log, "w") as err:
        p = subprocess.run(
            [sys.executable, "-m", "ccfair", "sweep", str(sweep_file), "--out", str(tmp_path / "r")]
            + ["--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=ENV,
        )
    assert p.returncode == 0
    text = log.read_text()
    assert "\r" not in text and "d: 4/4 runs" in text, text


def test_reproduce_dry_run_counts_runs_and_estimates_time_writing_nothing(tmp_path):
    out = cli("reproduce", "harada-dumbbell", "--quick", "--dry-run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "24 runs (24 to run" in out.stdout and "about " in out.stdout
    doc = json_of(
        cli("reproduce", "harada-dumbbell", "--quick", "--dry-run", "--json", cwd=tmp_path)
    )
    assert doc["preset"] == "harada-dumbbell" and doc["runs"] == 24
    assert doc["time"]["runs_to_run"] == 24 and 0 < doc["time"]["wall_s"] < 600
    assert doc["time"]["calibration"]["events_per_s"] > 0
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "args, field",
    [
        (["--workers", "0"], "--workers"),
        (["--workers", "x"], "--workers"),
        (["--repetitions", "0"], "--repetitions"),
        (["--max-runs", "3"], "run limit"),
    ],
)
def test_reproduce_dry_run_refuses_bad_values_in_one_line(args, field):
    line = one_error_line(cli("reproduce", "harada-dumbbell", "--quick", "--dry-run", *args))
    assert field in line


def test_bad_values_of_the_new_options_are_one_line(results_dir, sweep_file, tmp_path):
    line = one_error_line(cli("metrics", str(results_dir), "--csv", ""))
    assert line.startswith('error: --csv: "" is not a file path')
    line = one_error_line(
        cli("compare", str(results_dir), str(results_dir), "--csv", "-", "--json")
    )
    assert "--csv" in line and "--json" in line
    a_file = tmp_path / "file"
    a_file.write_text("")
    line = one_error_line(cli("sweep", str(sweep_file), "--dry-run", "--out", str(a_file)))
    assert line == f"error: {a_file}: is not a directory (--out)"
    line = one_error_line(cli("completion", "fish"))
    assert '"fish" is not one of bash, zsh' in line
    assert "--json" in one_error_line(cli("ccas", "--json=yes"))


def test_bench_frontend_runs_from_an_installed_package(tmp_path):
    """Installed, the package has no scenarios/ beside it: the bench makes its own scenario."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "python" / "ccfair", site / "ccfair")
    # The quick preset's sweep runs; its figures (15 s, not what is tested here) do not.
    script = (
        "import sys, ccfair.bench as b; b.make_figures = lambda res: {}; "
        "b.save_figures = lambda figures, out: []; from ccfair.cli import main; "
        "sys.exit(main(['bench', '--frontend']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "ccfair check" in out.stdout and "harada-dumbbell --quick" in out.stdout


def documented_keys(heading: str) -> set[str]:
    """The keys of the table under ``heading`` in docs/cli.md (its first column)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :].split("\n### ", 1)[0]
    keys: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return keys


def test_the_json_shapes_are_those_docs_cli_md_documents(sweep_file, tmp_path):
    good, bad = small_toml(tmp_path), tmp_path / "bad.toml"
    bad.write_text("nonsense = 1\n")
    checked = json.loads(cli("check", str(good), str(bad), "--json", "--engine").stdout)
    assert set(checked[0]) | set(checked[1]) == documented_keys("### `ccfair check --json")
    dry = json_of(
        cli("reproduce", "harada-dumbbell", "--quick", "--dry-run", "--json", cwd=tmp_path)
    )
    assert set(dry) == documented_keys("### `ccfair sweep --dry-run --json`")
    swept = json_of(cli("sweep", str(sweep_file), "--dry-run", "--json", cwd=tmp_path))
    assert set(swept) == set(dry) - {"preset"}
