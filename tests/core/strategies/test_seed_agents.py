"""The BCR strategies with the seed agents: a strategy that acts on a confidence (B1; B3 with its
confidence trigger) is refused at start-up with one line naming what works with what, since no
seed agent reports one; the prompt strategies (R1-R3, C1-C2) reach each agent's prompt, in the
place its paper keeps memory (navgpt/mapgpt: History; prep: beside its memory summary; pma: beside
the Manager's map)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.agents.seeds.pma_support import Scripted
from tests.core.agents.seeds.pma_support import good_reply as pma_reply
from tests.core.agents.seeds.seed_support import ByRole, texts

SEEDS = ("prep", "navgpt", "mapgpt", "pma")


def _agent(name):
    return make_policy(name, backend_instance=Scripted(pma_reply) if name == "pma" else ByRole())


@pytest.mark.parametrize("agent", SEEDS)
@pytest.mark.parametrize("strategy", ["B1", "oracle:B3"])
def test_a_confidence_strategy_is_refused_with_one_line_naming_what_works(supervise, agent, strategy):
    with pytest.raises(ConfigError) as refused:
        supervise(_agent(agent), [strategy])
    line = str(refused.value)
    code = strategy.split(":")[-1]
    assert "\n" not in line and f"strategy {code}" in line and f"policy {agent}" in line
    assert "R1-R3, C1-C2, B2 or B3 with confidence_trigger=false" in line and "vlm policy" in line


def test_b3_without_its_confidence_trigger_is_accepted(supervise):
    record, sup = supervise(_agent("navgpt"), [{"name": "B3", "oracle": True, "confidence_trigger": False}],
                            max_steps=3)
    assert record["steps"] >= 1 and [s.code for s in sup.strategies] == ["B3"]


def _prompts(supervise, agent, strategies, round=0, rounds=1):
    backend = Scripted(pma_reply) if agent == "pma" else ByRole()
    supervise(make_policy(agent, backend_instance=backend), strategies, max_steps=3, round=round, rounds=rounds)
    return [texts(r) for _, r in backend.requests]


@pytest.mark.parametrize("agent", SEEDS)
@pytest.mark.parametrize("strategy", ["R3", "C1", "C2"])
def test_a_prompt_strategy_reaches_the_agents_prompt(supervise, agent, strategy):
    plain = _prompts(supervise, agent, [])
    if strategy == "R3":  # this round's recent steps
        guided = _prompts(supervise, agent, [strategy])
        assert plain[0] == guided[0] or agent == "pma"  # the first call has nothing to retrieve yet
    else:  # the cognitive maps describe earlier rounds: the second round's prompts carry them
        _prompts(supervise, agent, [strategy], round=0, rounds=2)
        guided = _prompts(supervise, agent, [strategy], round=1, rounds=2)
    assert plain != guided, f"{strategy} left {agent}'s prompts byte-identical"
    words = {"R3": "step 0", "C1": "Streets walked before", "C2": "start"}[strategy]
    assert any(words in t and t not in plain for t in guided)
