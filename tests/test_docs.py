"""The docs are true (scripts/check_docs.py): README.md, CHANGELOG.md, benches/README.md and
docs/ pass the check, and each of its rules finds what it is for in a small broken tree."""

from __future__ import annotations

import doctest
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_docs.py"


def _load_check_docs():
    spec = importlib.util.spec_from_file_location("check_docs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_docs"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


check_docs = _load_check_docs()


def _problems(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """The check's lines for a tree of Markdown (and other) files written under tmp_path."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return [str(p) for p in check_docs.check([tmp_path])]


def test_the_repository_docs_pass_the_check():
    p = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout == ""


def test_the_check_exits_1_naming_file_and_line(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nsee [b](b.md)\n")
    p = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 1
    assert p.stdout == f"{tmp_path / 'a.md'}:3: dead link b.md: b.md does not exist\n"


def test_a_path_that_is_not_there_is_exit_2(tmp_path):
    p = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 2 and "no such file" in p.stderr and p.stdout == ""


def test_dead_link(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "docs/a.md": "# A\n\n[ok](b.md) and [up](../README.md)\n[dead](c.md) [dir](sub/)\n",
            "docs/b.md": "# B\n",
            "README.md": "# R\n",
        },
    )
    md = tmp_path / "docs" / "a.md"
    assert problems == [
        f"{md}:4: dead link c.md: c.md does not exist",
        f"{md}:4: dead link sub/: sub does not exist",
    ]


def test_a_link_text_over_two_lines_and_external_links(tmp_path):
    problems = _problems(
        tmp_path,
        {"a.md": "[a link\nover two lines](gone.md) [web](https://example.org/x.md)\n"},
    )
    assert problems == [f"{tmp_path / 'a.md'}:2: dead link gone.md: gone.md does not exist"]


def test_a_link_in_code_is_no_link(tmp_path):
    problems = _problems(tmp_path, {"a.md": "`[x](gone.md)`\n\n```text\n[x](gone.md)\n```\n"})
    assert problems == []


def test_missing_anchor(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "# Setup\n## Setup\n## `ccfair run --json`: the flows\n"
                '<a id="explicit"></a>\n\n'
                "[1](#setup) [2](#setup-1) [3](#ccfair-run---json-the-flows) [4](#explicit)\n"
                "[5](#setup-2) [6](b.md#b-section) [7](b.md#nothing)\n"
            ),
            "b.md": "# B section\n\n```bash\n# not a heading\n```\n",
        },
    )
    md = tmp_path / "a.md"
    assert problems == [
        f'{md}:7: dead anchor #setup-2: no heading or id "setup-2" in a.md',
        f'{md}:7: dead anchor b.md#nothing: no heading or id "nothing" in b.md',
    ]


def test_a_heading_in_a_code_block_is_no_anchor(tmp_path):
    problems = _problems(tmp_path, {"a.md": "# A\n\n```bash\n# comment\n```\n[c](#comment)\n"})
    assert problems == [
        f'{tmp_path / "a.md"}:6: dead anchor #comment: no heading or id "comment" in a.md'
    ]


def test_missing_image(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "here.png").write_bytes(b"\x89PNG")
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "![here](figures/here.png)\n![gone](figures/gone.png)\n"
                '<img src="figures/also-gone.png" width="50%">\n'
            )
        },
    )
    md = tmp_path / "a.md"
    assert problems == [
        f"{md}:2: missing image figures/gone.png: gone.png does not exist",
        f"{md}:3: missing image figures/also-gone.png: also-gone.png does not exist",
    ]


def test_a_file_git_ignores_is_missing(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("results/\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "fig.png").write_bytes(b"\x89PNG")
    problems = _problems(tmp_path, {"a.md": "![f](results/fig.png)\n"})
    assert problems == [
        f"{tmp_path / 'a.md'}:1: missing image results/fig.png: fig.png is ignored by git "
        "(a clone does not have it)"
    ]


def test_wrong_api_name_in_a_python_block(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "# A\n\n```python\n"
                "import ccfair\n"  # line 4
                "from ccfair import Results, run_everything\n"
                "from ccfair.present.style import save\n"
                "r = ccfair.run(ccfair.dumbbell(2, 'reno', duration='5s'))\n"
                "r.plot.timeseries(window=(1, 2))\n"
                "r.plot.delay()\n"  # line 9
                "ccfair.dumbell(2)\n"
                "ccfair.dumbbell(2, bottleneck_dealy='1ms')\n"
                "res = Results('results/x')\n"
                "res.point_metrics(['jain_index']).head()\n"
                "res.runs_table\n"  # line 14
                "```\n"
            )
        },
    )
    md = tmp_path / "a.md"
    assert problems == [
        f"{md}:5: ccfair.run_everything: ccfair has no run_everything",
        f"{md}:9: RunPlots has no attribute delay",
        f"{md}:10: ccfair.dumbell: ccfair has no dumbell",
        f"{md}:11: dumbbell() has no parameter bottleneck_dealy",
        f"{md}:14: Results has no attribute runs_table",
    ]


def test_a_python_block_that_does_not_parse(tmp_path):
    problems = _problems(tmp_path, {"a.md": "```python\nx = {1: 2, ...}\n```\n"})
    assert len(problems) == 1 and problems[0].startswith(f"{tmp_path / 'a.md'}:2: python block")


def test_a_signature_listing_names_the_real_parameters(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "```python\nfrom ccfair import Scenario\n```\n\n```python\n"
                "Scenario.from_toml_str(text: str, *, source: str | None = None) -> Scenario\n"
                "Scenario.from_dict(data, strict=True) -> Scenario\n"  # line 7
                "scenario.to_toml() -> str\n"
                "```\n"
            )
        },
    )
    assert problems == [f"{tmp_path / 'a.md'}:7: Scenario.from_dict() has no parameter strict"]


def test_wrong_api_name_in_inline_code(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "`ccfair.load_table` and `ccfair.present.style.SMOOTH_S` exist;\n"
                "`ccfair.load_tables(d)` and `RunResult.flow_table` do not,\n"
                "nor `Results.plot.dots_and_lines(...)`.\n"
            )
        },
    )
    md = tmp_path / "a.md"
    assert problems == [
        f"{md}:2: RunResult has no attribute flow_table",
        f"{md}:2: ccfair.load_tables: ccfair has no load_tables",
        f"{md}:3: ResultsPlots has no attribute dots_and_lines",
    ]


def test_unknown_cli_option(tmp_path):
    problems = _problems(
        tmp_path,
        {
            "a.md": (
                "```bash\n"
                "ccfair run scenarios/x.toml --json --out d\n"
                "sudo ccfair sweep grid.toml --worker 2   # one too few letters\n"  # line 3
                "pip install . && python3 -m ccfair frobnicate\n"
                "ccfair validate x.toml \\\n  --out d --kernel-only\n"  # line 5
                "```\n\n"
                "```console\n$ ccfair metrics d --csv=- --jsonn\nnot --a-command\n"
                '$ ccfair rum\nerror: ccfair: "rum" is not a command\n```\n'
                "Use `ccfair reproduce harada-dumbbell --dry-run --quik`.\n"  # line 15
                "`sweep --dryrun` without ccfair, `sweep the grid` (no option)\n"  # line 16
            )
        },
    )
    md = tmp_path / "a.md"
    assert problems == [
        f"{md}:3: ccfair sweep: no option --worker",
        f"{md}:4: ccfair: no command frobnicate",
        f"{md}:5: ccfair validate: no option --kernel-only",
        f"{md}:10: ccfair metrics: no option --jsonn",
        f"{md}:15: ccfair reproduce: no option --quik",
        f"{md}:16: ccfair sweep: no option --dryrun",
    ]


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Testbeds and host kernels", "testbeds-and-host-kernels"),
        ("The `[tcp]` table", "the-tcp-table"),
        ("`ccfair run --json`: flows", "ccfair-run---json-flows"),
        ("Queue disciplines (AQM) & ECN", "queue-disciplines-aqm--ecn"),
        ("[Linked](x.md) heading_name", "linked-heading_name"),
    ],
)
def test_github_slugs(heading, slug):
    assert check_docs.github_slug(heading) == slug


def test_the_examples_in_the_script_hold():
    result = doctest.testmod(check_docs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 5 and result.failed == 0


def test_a_doctest_block_keeps_its_line_numbers(tmp_path):
    problems = _problems(
        tmp_path,
        {"a.md": "```pycon\n>>> import ccfair\n>>> ccfair.Limits\nLimits\n>>> ccfair.Limit\n```\n"},
    )
    assert problems == [f"{tmp_path / 'a.md'}:5: ccfair.Limit: ccfair has no Limit"]
