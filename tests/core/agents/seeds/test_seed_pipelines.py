"""The seed agents run where any policy runs: `ablate` (agents x strategies) and the Ray executor
(the serial records, but for wall seconds), against the loopback canned server. (The ROS node
set: tests/ros/test_runner_seed_agents.py.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation import ablation
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from tests.core.agents.seeds.test_seed_golden import _answer
from tests.core.agents.vlm import canned_server
from tests.core.agents.vlm.canned_server import MODEL, CannedServer


@pytest.fixture
def server(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(canned_server, "good_reply", _answer)
    s = CannedServer()
    yield s
    s.close()


def params(server: CannedServer, **switches) -> dict:
    return {"backend": "openai", "model": MODEL, "backend_params": {"base_url": server.url, "timeout_s": 20},
            **switches}


def timeless(path: Path) -> list[dict]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        for step in r.get("decisions", ()):
            step.pop("seconds", None)
            for call in step.get("calls", ()):
                call.pop("seconds", None)
    return records


def test_an_ablation_crosses_the_seed_agents_with_strategies(tiny_city, server, tmp_path):
    config = ablation.AblationConfig(
        data=str(tiny_city), limit=1, max_steps=3,
        policies=[{"label": name, "policy": name, "params": params(server)} for name in ("navgpt", "mapgpt", "prep")],
        cells=ablation.cells_from("baseline,R3"))
    doc = ablation.run_ablation(config, tmp_path / "ablate", progress=False)
    assert set(doc["results"]) == {"navgpt", "mapgpt", "prep"}
    for label, cells in doc["results"].items():
        assert set(cells) == {"baseline", "R3"}
        records = [json.loads(x) for x in (Path(cells["R3"]["path"]) / "episodes.jsonl").read_text().splitlines()]
        assert records and all(d["agent"] == label for r in records for d in r["decisions"])
        assert records[0]["supervisor"]["strategies"]  # R3 ran around the agent
    table = ablation.ablation_tables(doc)[0]
    assert [row[0] for row in table.rows] == ["navgpt", "navgpt", "mapgpt", "mapgpt", "prep", "prep"]


def test_an_ablation_with_a_strategy_a_seed_agent_cannot_use_is_refused(tiny_city, server, tmp_path):
    from cityseeker_ros.core.infra.errors import ConfigError

    config = ablation.AblationConfig(
        data=str(tiny_city), limit=1, max_steps=3,
        policies=[{"label": "prep", "policy": "prep", "params": params(server)}],
        cells=ablation.cells_from("baseline,B1"))
    with pytest.raises(ConfigError, match="strategy B1 acts on the policy's confidence, which policy prep"):
        ablation.run_ablation(config, tmp_path / "ablate", progress=False)


def test_the_ray_executor_writes_the_serial_records_of_a_seed_agent(tiny_city, server, tmp_path):
    kw = dict(data=str(tiny_city), policy="navgpt", policy_params=params(server, cot=True), limit=2, max_steps=3,
              seeds=[0, 1])
    Benchmark(BenchmarkConfig(**kw)).run(tmp_path / "serial", progress=False)
    Benchmark(BenchmarkConfig(**kw, executor="ray")).run(tmp_path / "ray", progress=False)
    serial = timeless(tmp_path / "serial" / "episodes.jsonl")
    assert len(serial) == 4 and all(r["decisions"][0]["calls"] for r in serial)
    assert timeless(tmp_path / "ray" / "episodes.jsonl") == serial
