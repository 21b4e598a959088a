"""Which task families a policy serves (`Policy.families`), and the refusal of a policy a run's
family cannot use, before anything runs (it would end every episode in error or unanswered).
Here, not on TaskFamily: tasks never import agents."""
from __future__ import annotations

from typing import Any

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.family import get_family


def serves(policy_class: Any, family: str) -> bool:
    """Whether a policy class serves `family`: its `families` names it, or is None (every family:
    a model policy speaks each family's prompts)."""
    families = getattr(policy_class, "families", None)
    return families is None or family in families


def policies_for(family: str) -> list[str]:
    """The registered policies that serve `family`, by name."""
    from cityseeker_ros.core.agents.policies import POLICIES

    return [n for n in POLICIES.names() if serves(POLICIES.get(n), family)]


def check_serves(policy: str, family: str) -> None:
    """Refuse a policy that does not serve `family`, naming the ones that do and its oracle."""
    from cityseeker_ros.core.agents.policies import POLICIES

    if serves(POLICIES.get(policy), family):
        return
    oracle = get_family(family).oracle
    hint = f" (its oracle is {oracle!r})" if "oracle" in policy else ""
    raise ConfigError(f"--policy {policy} does not serve the {family} task family{hint}; "
                      f"its policies: {', '.join(policies_for(family))}")
