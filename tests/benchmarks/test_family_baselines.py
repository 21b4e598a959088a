"""benchmarks/family_baselines.py answers a typo in a world, family or policy name with one line
naming the parameter and the known values (exit 2), before any run writes to --out."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.policies.families import policies_for

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "family_baselines.py"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("worlds") / "town"
    folder.mkdir()
    (folder / "world.json").write_text(json.dumps({"format": "cityseeker-world", "name": "town",
                                                   "warnings": ["no questions: no named place"]}))
    return folder


@pytest.mark.parametrize("flags, says", [
    (["--families", "landmark"], "--families: unknown task family 'landmark'; known: landmarks, needs, questions"),
    (["--policies", "orcale"], "--policies: unknown policy 'orcale'; known: "),
    (["--families", "questions", "--policies", "oracle"],
     "--policy oracle does not serve the questions task family (its oracle is 'question-oracle'); its policies: "
     "{questions}"),
    (["--worlds", "{tmp}/nowhere"], "--worlds: {tmp}/nowhere is not a world folder (no world.json"),
])
def test_a_typo_is_one_line_naming_the_parameter_and_nothing_runs(world, tmp_path, flags, says):
    flags = [f.format(tmp=tmp_path) for f in flags]
    worlds = [] if "--worlds" in flags else ["--worlds", str(world)]
    out = tmp_path / "runs"
    proc = subprocess.run([sys.executable, str(SCRIPT), *worlds, *flags, "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("family_baselines: error: ")
    says = says.format(tmp=tmp_path, questions=", ".join(policies_for("questions")))
    assert says in proc.stderr and proc.stdout == ""
    assert not out.exists()


def test_a_family_the_world_has_no_tasks_of_is_said_from_world_json(world, tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--worlds", str(world), "--families", "questions",
                           "--out", str(tmp_path / "runs")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("**town / questions**: no tasks (missing: the world has no questions: no named "
                                   "place (world.json's warnings))")
