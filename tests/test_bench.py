"""``ccfair bench``'s instruction count and history file (the timing itself is not tested:
speed is never a pass/fail here)."""

from __future__ import annotations

import json

from ccfair import bench


def test_instruction_count_is_skipped_without_valgrind(monkeypatch, capsys):
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    assert bench.instructions_per_hop("dumbbell-cubic") is None
    monkeypatch.setattr(
        bench,
        "run_case",
        lambda name, duration: {
            "wall_s": 1.0,
            "sim_s": 5.0,
            "packet_hops": 10,
            "events": 12,
            "peak_mb": 1.0,
            "engine_mb": 0.5,
        },
    )
    assert bench.main(quick=True, cases=["dumbbell-cubic"], instructions=True) == 0
    out = capsys.readouterr()  # the note on stderr, the table on stdout
    assert "valgrind is not installed" in out.err and "dumbbell-cubic" in out.out


def test_history_gets_one_json_line_per_invocation(monkeypatch, tmp_path):
    m = {"wall_s": 0.5, "sim_s": 5.0, "packet_hops": 1000, "events": 1200}
    monkeypatch.setattr(
        bench, "run_case", lambda name, duration: {**m, "peak_mb": 9.0, "engine_mb": 1.0}
    )
    monkeypatch.setattr(bench, "instructions_per_hop", lambda name: 512.0)
    monkeypatch.setattr(bench.shutil, "which", lambda name: "/usr/bin/valgrind")
    path = tmp_path / "history.jsonl"
    for _ in range(2):
        bench.main(
            quick=True, cases=["dumbbell-bbr-vs-cubic-a0.5"], instructions=True, history=str(path)
        )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2
    case = lines[0]["cases"]["dumbbell-bbr-vs-cubic-a0.5"]
    assert case["instructions_per_hop"] == 512.0 and case["packet_hops"] == 1000
    assert {"commit", "date", "quick", "build"} <= set(lines[0])
    # Which build was measured: the one this test runs with.
    from ccfair import _core

    assert lines[0]["build"] == ("pgo" if _core.BUILD_PGO else "plain")


def test_every_case_has_a_scenario():
    for case in bench.CASES:
        assert bench.scenario_for(case.name, "1s").flows


def test_the_table_shows_what_a_run_costs_after_the_engine(monkeypatch, capsys):
    m = {"wall_s": 0.2, "sim_s": 5.0, "packet_hops": 10, "events": 12, "peak_mb": 1.0}
    m |= {"engine_mb": 0.5, "build_s": 0.04, "save_s": 0.06, "sweep_s": 0.03}
    monkeypatch.setattr(bench, "run_case", lambda name, duration: m)
    assert bench.main(quick=True, cases=["dumbbell-cubic"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert next(line for line in out if line.startswith("case")).split()[-3:-1] == [
        "after/eng",
        "sweep/eng",
    ]
    row = next(line for line in out if "dumbbell-cubic" in line).split()
    # after/eng: (0.04 + 0.06) / 0.2, interactive; sweep/eng: 0.03 / 0.2, a sweep's worker;
    # then the target ("<= 0.3 s").
    assert row[-5:-3] == ["0.50", "0.15"]


def test_a_case_child_times_its_tables_after_the_engine():
    # The real child of one short case: the engine's numbers and the hand-over's, as JSON.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "ccfair.bench", "--child", "dumbbell-cubic", "1s"],
        check=True,
        capture_output=True,
        text=True,
    )
    m = json.loads(out.stdout.strip().splitlines()[-1])
    assert m["packet_hops"] > 0 and m["build_s"] > 0 and m["save_s"] > 0 and m["sweep_s"] > 0


def test_report_json_keeps_the_figure_count_beside_each_steps_time(monkeypatch, tmp_path, capsys):
    """`ccfair bench --report --json`: "figures" counts the figures drawn; the step of the
    same name has its time under "figures_s" (it used to overwrite the count)."""
    steps = {"metrics": 0.1, "figures": 0.25, "saving figures": 0.3, "page": 0.01}
    monkeypatch.setattr(bench, "_time_report", lambda results_dir, tmp: (1.5, steps, 7, 3))
    assert bench.report_main([str(tmp_path)], as_json=True) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["figures"] == 7 and row["runs"] == 3 and row["total_s"] == 1.5
    assert row["figures_s"] == 0.25 and row["saving_figures_s"] == 0.3
    assert row["metrics_s"] == 0.1 and row["page_s"] == 0.01
