"""config.json says which prompts and switches a run used: a seed agent's prompt version (no
longer null), every switch with its default, the vlm policy's profile record unchanged."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.agents.vlm.prompt_profiles import prompt_record
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation import agent_settings
from cityseeker_ros.core.evaluation.benchmark import Benchmark, run_manifest
from cityseeker_ros.core.evaluation.config import CONFIG_FILE, BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError

SEED_AGENTS = ("prep", "navgpt", "mapgpt", "pma")
SERVED = {"backend": "openai", "model": "m", "backend_params": {"base_url": "http://127.0.0.1:9/v1"}}


@pytest.mark.parametrize("agent", SEED_AGENTS)
def test_a_seed_agent_run_records_its_prompt_version_and_every_switch(tiny_city, agent):
    config = BenchmarkConfig(data=str(tiny_city), policy=agent, policy_params={**SERVED, "max_new_tokens": 64})
    manifest = run_manifest(config, {w.city: w for w in load_dataset(tiny_city)}, {})
    cls = POLICIES.get(agent)
    assert manifest["prompt"] == {"agent": agent, "version": cls.version} and cls.version
    switches = manifest["switches"]
    assert switches["max_new_tokens"] == 64 and switches["model"] == "m"  # given
    assert switches["fallback"] == "first"  # a default, recorded too
    assert "backend_instance" not in switches
    made = cls(**SERVED)
    assert {k: switches[k] for k in made.settings()} == made.settings()  # the agent's own switches, all there
    json.dumps(manifest)


def test_prep_with_reflection_off_says_so_and_keeps_planning_on(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="prep", policy_params={**SERVED, "reflection": False})
    switches = run_manifest(config, {w.city: w for w in load_dataset(tiny_city)}, {})["switches"]
    assert switches["reflection"] is False and switches["planning"] is True


def test_the_vlm_record_is_its_profile_record_and_a_baseline_has_none(tiny_city, tmp_path):
    paper = {"prompt_profile": "paper"}
    assert agent_settings.prompt("vlm", paper) == prompt_record("vlm", paper)
    assert agent_settings.switches("vlm", {})["prompt_profile"] == "improved"
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random")).run(tmp_path / "r", progress=False)
    written = json.loads((tmp_path / "r" / CONFIG_FILE).read_text())
    assert written["prompt"] is None and written["switches"] == {}


def test_an_agent_s_own_hooks_win(monkeypatch):
    cls = POLICIES.get("navgpt")
    monkeypatch.setattr(cls, "prompt_record", classmethod(lambda c, params, family: {"version": "x", "family": family}),
                        raising=False)
    monkeypatch.setattr(cls, "run_switches", classmethod(lambda c, params: {"only": params.get("cot")}), raising=False)
    assert agent_settings.prompt("navgpt", {}, "landmarks") == {"version": "x", "family": "landmarks"}
    assert agent_settings.switches("navgpt", {"cot": True}) == {"only": True}


def test_an_unknown_policy_is_refused_by_name():
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        agent_settings.switches("nope", {})
