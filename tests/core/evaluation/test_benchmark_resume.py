"""Which episodes a run takes (--per-category) and when a folder's run may be resumed: the same
data spelled as a relative path once and an absolute one the next is the same run, and a
refusal names only the settings that differ."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.datasets.synthetic import synthesize_world
from cityseeker_ros.core.evaluation.benchmark import Benchmark, differences, run_manifest, run_tasks
from cityseeker_ros.core.evaluation.config import RUN_COMMAND_ENV, BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    """The synthetic grid town: 4 episodes in each of the 7 categories and Two-Stage."""
    return synthesize_world(tmp_path_factory.mktemp("grid") / "gridtown")


@pytest.fixture
def dressed(tiny_city, tmp_path) -> Path:
    """A world folder (world.json, graph.json, scene.json, tasks.json): the tiny city dressed."""
    from cityseeker_ros.core.worlds.dress import write_dressed_world

    return write_dressed_world(tiny_city, tmp_path / "worlds" / "tiny")


def _episodes(config: BenchmarkConfig) -> list:
    worlds = {w.city: w for w in load_dataset(Path(config.data))}
    return [worlds[c].episodes[i] for c, i, seed in run_tasks(config, worlds) if seed == config.seeds[0]]


def test_per_category_takes_the_first_n_of_each_category_in_load_order(grid):
    every = _episodes(BenchmarkConfig(data=str(grid), policy="random"))
    counts = Counter(e.category for e in every)
    assert len(counts) == 8 and min(counts.values()) >= 3  # the paper's 7 and Two-Stage
    chosen = _episodes(BenchmarkConfig(data=str(grid), policy="random", per_category=2))
    assert Counter(e.category for e in chosen) == {c: 2 for c in counts}
    expected = [e for e in every if [x.category for x in every[:every.index(e) + 1]].count(e.category) <= 2]
    assert chosen == expected  # load order kept: the same episodes on every machine
    assert _episodes(BenchmarkConfig(data=str(grid), policy="random", per_category=2, limit=5)) == expected[:5]
    tasks = run_tasks(BenchmarkConfig(data=str(grid), policy="random", per_category=1, seeds=[0, 1]),
                      {w.city: w for w in load_dataset(grid)})
    assert len(tasks) == 16 and [s for _, _, s in tasks] == [0] * 8 + [1] * 8


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_per_category_must_be_a_positive_integer(grid, value):
    with pytest.raises(ConfigError, match="--per-category must be"):
        Benchmark(BenchmarkConfig(data=str(grid), policy="random", per_category=value))


def test_a_run_resumes_when_its_data_is_spelled_relative_then_absolute(dressed, tmp_path, monkeypatch):
    """Before, a world folder's data files were recorded as given: `worlds/tiny/graph.json` once
    and `/tmp/.../worlds/tiny/graph.json` the next time, and the resume was refused."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    Benchmark(BenchmarkConfig(data="worlds/tiny", policy="random", limit=1)).run(out, progress=False)
    summary = Benchmark(BenchmarkConfig(data=str(dressed.resolve()), policy="random")).run(out, progress=False)
    assert summary["overall"]["episodes"] == 2
    recorded = json.loads((out / "config.json").read_text())["data_files"]
    assert len(recorded) == 4 and all(Path(p).is_absolute() for p in recorded)
    monkeypatch.chdir(dressed)
    Benchmark(BenchmarkConfig(data=".", policy="random", seeds=[0, 1])).run(out, progress=False)


def _panoramas(folder: Path, nodes) -> Path:
    folder.mkdir()
    for node in nodes:
        Image.new("RGB", (64, 32), (40, 80, 120)).save(folder / f"{node}.jpg")
    return folder


def test_a_panorama_folder_spelled_relative_then_absolute_is_the_same_run(tiny_city, tmp_path, monkeypatch):
    world = load_dataset(tiny_city)[0]
    panos = _panoramas(tmp_path / "panos", world.graph.nodes)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"

    def config(folder: str, **extra) -> BenchmarkConfig:
        return BenchmarkConfig(data=str(tiny_city), policy="random", views="panorama-folder",
                               view_params={"folder": folder, "width": 32, "height": 16, **extra})

    Benchmark(config("panos")).run(out, progress=False)
    Benchmark(config(str(panos))).run(out, progress=False)
    with pytest.raises(ConfigError) as refused:
        Benchmark(config(str(panos), width=48)).run(out, progress=False)
    assert "view_sources.tinytown.width: 32 -> 48" in str(refused.value)
    assert "view_params" not in str(refused.value) and "panos" not in str(refused.value).split("(", 1)[1]


def test_a_refusal_names_only_the_settings_that_differ(dressed, tmp_path):
    """Before, a refusal printed every data file's hash on both sides of every changed mapping."""
    out = tmp_path / "run"
    Benchmark(BenchmarkConfig(data=str(dressed), policy="random")).run(out, progress=False)
    with open(dressed / "world.json", "a", encoding="utf-8") as f:
        f.write("\n")  # the same JSON, another sha256
    with pytest.raises(ConfigError) as refused:
        Benchmark(BenchmarkConfig(data=str(dressed), policy="random", max_steps=20)).run(out, progress=False)
    message = str(refused.value)
    assert f"(data_files[{dressed.resolve() / 'world.json'}]: '" in message and "; max_steps: 35 -> 20)" in message
    assert "graph.json" not in message and "tasks.json" not in message and message.count(" -> ") == 2


def test_differences_follow_mappings_down_to_the_changed_entry():
    before = {"/w/graph.json": "aa", "/w/tasks.json": "bb", "/w/scene.json": "cc"}
    now = {"/w/graph.json": "aa", "/w/tasks.json": "BB", "/w/world.json": "dd"}
    assert differences("data_files", before, now) == [
        "data_files[/w/tasks.json]: 'bb' -> 'BB'", "data_files[/w/scene.json]: 'cc' -> (absent)",
        "data_files[/w/world.json]: (absent) -> 'dd'"]
    assert differences("policy", "random", "random") == []
    assert differences("strategies", [{"name": "B1"}], []) == ["strategies: [{'name': 'B1'}] -> []"]


def test_the_manifest_records_the_command_a_runner_passes_down(grid, monkeypatch):
    """`cityseeker run` starts the evaluator with the user's command in RUN_COMMAND_ENV, so
    config.json names what the user typed rather than the evaluator's node command line."""
    config = BenchmarkConfig(data=str(grid), policy="random")
    worlds = {w.city: w for w in load_dataset(grid)}
    monkeypatch.delenv(RUN_COMMAND_ENV, raising=False)
    assert run_manifest(config, worlds, {}, "evaluator --ros-args")["command"] == "evaluator --ros-args"
    monkeypatch.setenv(RUN_COMMAND_ENV, "cityseeker run benchmark --data x")
    assert run_manifest(config, worlds, {}, "evaluator --ros-args")["command"] == "cityseeker run benchmark --data x"


def test_resuming_with_other_seeds_says_so_in_one_line(tiny_city, tmp_path, caplog):
    """--seeds 3 into a 2-seed run used to extend it, and --seeds 1 to summarise seed 0 alone, in
    silence."""
    def run(seeds: int) -> list[str]:
        caplog.clear()
        Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=list(range(seeds)))).run(
            tmp_path / "out", progress=False)
        return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]

    assert run(2) == []
    assert run(2) == []  # the same seeds: nothing to say
    assert run(3) == [f"{tmp_path / 'out'}: resuming with --seeds 3: seed 2 added to the seeds 0, 1 already there "
                      "(2 tasks to run)"]
    assert run(1) == [f"{tmp_path / 'out'}: resuming with --seeds 1: the summary covers seed 0 only; 4 records of "
                      "seeds 1, 2 stay in episodes.jsonl"]
