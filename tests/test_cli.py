"""The `cityseeker` command as a user runs it: options, config files and one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cityseeker_ros.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_benchmark_prints_summary_and_writes_files(tiny_city, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["benchmark", "--data", str(tiny_city), "--policy", "oracle", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "policy oracle on tinytown: 2 episodes x 1 seed(s)" in text
    assert "tce" in text and "solvable ceiling: 100.0%" in text
    assert (out / "summary.json").is_file() and (out / "episodes.jsonl").is_file()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_config_file_with_flag_override(tiny_city, tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(f"data: {tiny_city}\npolicy: random\nseeds: 2\nmax-steps: 4\nout: {tmp_path / 'a'}\n")
    assert main(["benchmark", "--config", str(cfg), "--no-progress", "--seeds", "3"]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["config"]["seeds"] == [0, 1, 2] and summary["config"]["max_steps"] == 4
    assert summary["overall"]["as"] == 4.0


def test_shipped_config_is_valid(tiny_city, tmp_path):
    from cityseeker_ros.cli import load_options

    options = load_options(REPO / "config" / "benchmark.yaml")
    assert options["policy"] == "random" and options["seeds"] == 20 and options["max_steps"] == 35


@pytest.mark.parametrize("argv, message", [
    (["benchmark", "--data", "{city}", "--policy", "gpt", "--out", "{tmp}/x"], "unknown policy 'gpt'; known:"),
    (["benchmark", "--data", "{tmp}/missing", "--policy", "random", "--out", "{tmp}/x"], "no such directory"),
    (["benchmark", "--data", "{city}", "--out", "{tmp}/x"], "--policy is required"),
    (["benchmark", "--data", "{city}", "--policy", "random", "--out", "{tmp}/x", "--seeds", "0"], "--seeds must be"),
    (["benchmark", "--config", "{tmp}/nope.yaml"], "nope.yaml: no such file"),
    (["report", "{tmp}"], "no summary.json here"),
    (["validate", "{tmp}/missing"], "no such directory"),
])
def test_bad_input_gives_one_line_error_not_traceback(tiny_city, tmp_path, argv, message):
    argv = [a.format(city=tiny_city, tmp=tmp_path) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", *argv], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and message in proc.stderr
    assert proc.stderr.startswith("cityseeker: error:")


def test_bad_config_keys_and_types(tiny_city, tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("polcy: random\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "unknown option(s) polcy; known: data, dataset, policy" in capsys.readouterr().err
    cfg.write_text(f"data: {tiny_city}\npolicy: random\nout: {tmp_path / 'o'}\nmax-steps: many\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "--max-steps must be an integer, got 'many'" in capsys.readouterr().err
    cfg.write_text("[unclosed\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "invalid YAML" in capsys.readouterr().err
