"""What a benchmark run is: its configuration and the names of the files it writes."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views import VIEW_SOURCES
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
from cityseeker_ros.core.tasks.family import get_family
from cityseeker_ros.core.tasks.questions.facts import check_setting

EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "config.json"
# Settings that change results: a resumed run must match them exactly.
RESULT_DEFINING = ("data_files", "dataset", "family", "facts", "policy", "policy_params", "max_steps",
                   "max_invalid_retries", "dtw_threshold_m", "views", "view_params", "view_sources",
                   "strategies", "rounds", "max_backtracks", "follow_hints", "prompt")
QUESTIONS = "questions"  # the family whose task files record where each fact comes from (--facts)
MEMORY_FILE = "memory.sqlite"
# The command a user typed, for the processes it started (`cityseeker run` sets it for its ROS
# nodes): config.json records that command, not the evaluator node's own command line.
RUN_COMMAND_ENV = "CITYSEEKER_RUN_COMMAND"


@dataclass
class BenchmarkConfig:
    data: str
    policy: str
    dataset: str = "auto"
    policy_params: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0])
    # The run's step cap, over every family (an episode's own budget, PReP's or CityEQA's, is
    # capped by it); None: the family's default_max_steps (CitySeeker's 35 for needs).
    max_steps: Optional[int] = None  # an int once made (__post_init__)
    max_invalid_retries: int = 2
    limit: Optional[int] = None
    # Only the first N episodes of each category in each city, in load order: a small run that
    # still covers every category, the same episodes on every machine (then `limit` applies).
    per_category: Optional[int] = None
    workers: int = 1
    dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M
    views: Optional[str] = None  # a view source name; None = headings only, no images
    view_params: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 1  # episodes run in lockstep per process, so a VLM decides for all in one call
    # BCR strategies ({"name": "B1", ...params}; privileged ones need "oracle": true) and rounds
    # per episode; with either, a supervisor runs the policy and remembers in `memory`.
    strategies: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 1
    max_backtracks: int = 3
    follow_hints: str = "auto"
    memory: Optional[str] = None  # SQLite file; None: memory.sqlite in the output folder
    executor: str = "local"  # where episodes run: core/executors (local process pool, ray)
    ray_address: Optional[str] = None  # --executor ray: a cluster to join; None starts a local instance
    family: str = DEFAULT_FAMILY  # the task family whose episodes run (core/tasks/family.py)
    # "map": only the questions whose every fact is the map's (no renderer-made colour or storeys)
    facts: str = "all"

    def __post_init__(self) -> None:
        if self.max_steps is None:
            self.max_steps = _default_max_steps(self.family)

    @property
    def supervised(self) -> bool:
        return bool(self.strategies) or self.rounds > 1

    def run_id(self) -> str:
        """Names this run's memory: the same settings resume the same memory."""
        settings = {k: getattr(self, k) for k in ("dataset", "policy", "policy_params", "max_steps",
                                                   "max_invalid_retries", "views", "view_params", "strategies",
                                                   "rounds", "max_backtracks", "follow_hints")}
        settings["data"] = str(Path(self.data).resolve())
        if self.family != DEFAULT_FAMILY:  # the first family's runs keep the memory they had
            settings["family"] = self.family
        return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def make_strategies(self) -> list[Any]:
        from cityseeker_ros.core.strategies import make_strategy

        if not isinstance(self.strategies, list):
            raise ConfigError(f"strategies must be a list, got {self.strategies!r}")
        return [make_strategy(spec) for spec in self.strategies]

    def check_serves(self) -> None:
        """The policy serves the run's family, else one line naming the family's policies. Not
        part of validate(): a Seek run's config names no family, its goals bring their own."""
        from cityseeker_ros.core.agents.policies.families import check_serves

        check_serves(self.policy, self.family)

    def validate(self) -> None:
        """The executor's name is checked where it is used (Benchmark), which keeps this module
        free of the executors that run episodes for it."""
        from cityseeker_ros.core.strategies.bcr_policy import refuse_unusable

        get_family(self.family)
        refuse_unusable(POLICIES.get(self.policy), self.make_strategies())  # before any episode runs
        if check_setting(self.facts) != "all" and self.family != QUESTIONS:
            raise ConfigError(f"--facts {self.facts} applies to the {QUESTIONS} family, whose task files record "
                              f"where each fact comes from; --family is {self.family}")
        if self.views is not None:
            VIEW_SOURCES.get(self.views)
        if not isinstance(self.view_params, dict):
            raise ConfigError(f"view parameters must be a mapping, got {self.view_params!r}")
        for name in ("max_steps", "max_invalid_retries", "workers", "limit", "per_category", "batch_size", "rounds",
                     "max_backtracks"):
            value = getattr(self, name)
            optional = name in ("limit", "per_category") and value is None
            if not (isinstance(value, int) and not isinstance(value, bool)) and not optional:
                raise ConfigError(f"--{name.replace('_', '-')} must be an integer, got {value!r}")
        if not isinstance(self.dtw_threshold_m, (int, float)) or isinstance(self.dtw_threshold_m, bool):
            raise ConfigError(f"dtw threshold must be a number of metres, got {self.dtw_threshold_m!r}")
        if not isinstance(self.policy_params, dict):
            raise ConfigError(f"policy parameters must be a mapping, got {self.policy_params!r}")
        if not self.seeds:
            raise ConfigError("--seeds must be at least 1")
        if self.max_steps < 1:
            raise ConfigError(f"--max-steps must be >= 1, got {self.max_steps}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        if self.per_category is not None and self.per_category < 1:
            raise ConfigError(f"--per-category must be >= 1, got {self.per_category}")
        if self.workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.workers}")
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.rounds < 1:
            raise ConfigError(f"--rounds must be >= 1, got {self.rounds}")
        if self.dtw_threshold_m <= 0:
            raise ConfigError(f"dtw threshold must be > 0 m, got {self.dtw_threshold_m}")


def _default_max_steps(family: str) -> int:
    """The family's cap when a run names none; an unknown family's name fails in validate()."""
    try:
        return get_family(family).default_max_steps()
    except ConfigError:
        return DEFAULT_MAX_STEPS
