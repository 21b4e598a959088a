"""Data files are text from outside: a question.json that escapes lone surrogates ("\\ud800" is
valid JSON, but no valid text) loads with U+FFFD in their place, and a run over it records and
reports without failing."""
from __future__ import annotations

import json

from cityseeker_ros.cli import main
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.datasets.problems import Problems
from tests.conftest import tiny_layout, write_city


def _surrogate_city(tmp_path):
    edges, episodes = tiny_layout()
    episodes[0]["question"] = "I'm thirsty \ud800 near the \udfff station."
    episodes[0]["folder"] = "convenience \udc80store"
    episodes[1]["question"] = "Find a pharmacy \ud83d\ude00, then a bank \udbff."
    folder = write_city(tmp_path / "TinyTown_1", edges, episodes)  # json.dumps escapes them: "\ud800"
    assert "\\ud800" in (folder / "question.json").read_text(encoding="ascii")
    return folder


def test_escaped_lone_surrogates_load_as_replacement_characters(tmp_path):
    folder = _surrogate_city(tmp_path)
    problems = Problems(strict=False)
    (world,) = load_dataset(folder, "auto", problems)
    assert problems.errors == []
    first = world.episodes[0]
    assert first.instruction == "I'm thirsty \ufffd near the \ufffd station."
    assert first.request == "convenience \ufffdstore"
    assert world.episodes[1].instruction == "Find a pharmacy 😀, then a bank \ufffd."
    for e in world.episodes:
        "".join((e.instruction, e.request, e.city, e.episode_id)).encode("utf-8")  # raises on a lone surrogate


def test_validate_benchmark_and_report_over_such_data(tmp_path, capsys):
    folder = _surrogate_city(tmp_path)
    assert main(["validate", str(folder)]) == 0
    out = tmp_path / "out"
    assert main(["benchmark", "--data", str(folder), "--policy", "random", "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_bytes().decode("utf-8").splitlines()]
    assert records[0]["instruction"] == "I'm thirsty \ufffd near the \ufffd station."
    assert "\ufffd" in (out / "report.html").read_bytes().decode("utf-8")
