"""`cityseeker benchmark` and `validate` on the task families: a run that does not fit its family
is one line on stderr (exit 2) and leaves no output folder; validate counts the warnings the
world's build recorded in world.json; with no --max-steps a run records its family's cap."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.agents.policies.families import policies_for

THIN = ["thin data: 62% of street nodes have no building within 30 m", "thin data: 4 shops in 2 km2",
        "thin data: no named street", "thin data: 91% of buildings without a height", "thin data: no landmark"]


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    from tests.core.tasks.landmarks.gridtown import small_grid_world

    return small_grid_world(tmp_path_factory.mktemp("worlds") / "gridtown")


def _copy(world: Path, to: Path, warnings: list[str], drop: str = "") -> Path:
    to.mkdir()
    for f in world.iterdir():
        if f.name != drop:
            (to / f.name).write_bytes(f.read_bytes())
    meta = json.loads((world / "world.json").read_text())
    (to / "world.json").write_text(json.dumps({**meta, "warnings": warnings}))
    return to


def _refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cityseeker: error: ") and "Traceback" not in err
    return err.strip()[len("cityseeker: error: "):]


@pytest.mark.parametrize("family, policy, says", [
    ("landmarks", "question-oracle", "(its oracle is 'oracle')"),
    ("questions", "oracle", "(its oracle is 'question-oracle')"),
    ("needs", "question-random", "its policies: ")])
def test_a_policy_of_another_family_is_one_line_and_nothing_is_written(grid, tmp_path, capsys, family, policy, says):
    out = tmp_path / "out"
    line = _refused(["benchmark", "--data", str(grid), "--family", family, "--policy", policy, "--out", str(out),
                     "--no-progress"], capsys)
    assert line.startswith(f"--policy {policy} does not serve the {family} task family") and says in line
    assert line.endswith("its policies: " + ", ".join(policies_for(family)))
    assert not out.exists()


def test_a_world_built_without_the_family_says_why_in_one_line_and_nothing_is_written(grid, tmp_path, capsys):
    world = _copy(grid, tmp_path / "town", THIN + ["no landmark goals: 1 landmark; a goal needs at least 3"],
                  drop="tasks.landmarks.json")
    out = tmp_path / "out"
    line = _refused(["benchmark", "--data", str(world), "--family", "landmarks", "--policy", "landmark-oracle",
                     "--out", str(out), "--no-progress"], capsys)
    assert line == (f"{world / 'tasks.landmarks.json'}: missing: the world has no landmark goals: 1 landmark; "
                    "a goal needs at least 3 (world.json's warnings)")
    assert not out.exists()


def test_validate_shows_the_warnings_world_json_records(grid, tmp_path, capsys):
    world = _copy(grid, tmp_path / "thin", THIN)
    assert main(["validate", str(world), "--family", "landmarks"]) == 0
    out = capsys.readouterr().out
    for warning in THIN:
        assert f"warning: {world / 'world.json'}: {warning}" in out
    assert "within their own budgets" in out and out.rstrip().endswith("0 error(s), 5 warning(s)")


def test_a_run_without_max_steps_records_its_family_s_cap_and_with_it_caps_every_episode(grid, tmp_path, capsys):
    for name, flags, cap in (("own", [], 150), ("five", ["--max-steps", "5"], 5)):
        out = tmp_path / name
        assert main(["benchmark", "--data", str(grid), "--family", "landmarks", "--policy", "oracle", "--limit", "3",
                     "--out", str(out), "--no-progress", *flags]) == 0
        assert json.loads((out / "config.json").read_text())["max_steps"] == cap
        records = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
        assert all((r["budget"] == 5) if cap == 5 else (r["budget"] > 5) for r in records)
    capsys.readouterr()
