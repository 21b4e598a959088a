"""Every name a registry knows is offered by the command's help and described in the docs: the
README once listed three of seven policies and two of four packaged worlds, and nothing noticed."""
from __future__ import annotations

import re

import pytest

from cityseeker_ros.cli import build_parser
from cityseeker_ros.core.agents.memory import MEMORY_STORES
from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.agents.vlm.backend import BACKENDS
from cityseeker_ros.core.datasets import DATASETS
from cityseeker_ros.core.evaluation.executors import EXECUTORS
from cityseeker_ros.core.sensing.camera.source import FRAME_SOURCES
from cityseeker_ros.core.sensing.views import VIEW_SOURCES
from cityseeker_ros.core.strategies import STRATEGIES
from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES
from tests.docs_commands import DOCS, documented_commands

# (registry, the subcommand whose help offers it, the option or argument that takes a name)
OFFERED = {
    "policy": (POLICIES, ("benchmark",), "--policy"),
    "view source": (VIEW_SOURCES, ("benchmark",), "--views"),
    "VLM backend": (BACKENDS, ("benchmark",), "--backend"),
    "dataset": (DATASETS, ("benchmark",), "--dataset"),
    "executor": (EXECUTORS, ("benchmark",), "--executor"),
    "strategy": (STRATEGIES, ("benchmark",), "--strategy"),
    "memory store": (MEMORY_STORES, ("benchmark",), "--memory-store"),
    "frame source": (FRAME_SOURCES, ("run", "camera"), "--source"),
    "packaged world": (PACKAGED_SOURCES, ("world", "build"), "source"),
}


def names(registry) -> list[str]:
    return sorted(registry.names() if hasattr(registry, "names") else registry)


def option_help(path: tuple[str, ...], option: str) -> str:
    parser = build_parser()
    for name in path:
        parser = next(a for a in parser._actions if a.dest in ("command", "run_command", "world_command")
                      and name in (a.choices or {})).choices[name]
    for action in parser._actions:
        if option in action.option_strings or action.dest == option:
            return action.help or ""
    return ""


@pytest.mark.parametrize("what", sorted(set(OFFERED) - {"memory store"}))
def test_the_help_offers_every_registered_name(what):
    registry, path, option = OFFERED[what]
    text = option_help(path, option)
    missing = [n for n in names(registry) if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    assert missing == [], f"`cityseeker {' '.join(path)} --help` {option} does not name {what} {missing}: {text!r}"


@pytest.mark.parametrize("what", sorted(OFFERED))
def test_the_docs_describe_every_registered_name(what):
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)
    missing = [n for n in names(OFFERED[what][0]) if not any(f in text for f in (f"`{n}`", f"`{n}:", f"**{n}**"))]
    assert missing == [], f"no doc names {what} {missing} (as `{missing[0]}`)"


def subcommands() -> list[tuple[str, ...]]:
    """Every `cityseeker` subcommand path: ("benchmark",), ("world", "synth"), ..."""
    found = []
    for action in build_parser()._actions:
        for name, sub in (action.choices or {}).items() if action.dest == "command" else ():
            nested = [a for a in sub._actions if a.dest in ("run_command", "world_command", "bag_command")]
            found += [(name, inner) for a in nested for inner in a.choices] if nested else [(name,)]
    return found


def test_every_subcommand_has_a_documented_command():
    """`world synth` was named only in the licence section, in prose, with no command to copy."""
    used = {tuple(c.args()[:2]) for c in documented_commands() if c.program.endswith("cityseeker")}
    used |= {path[:1] for path in used}
    paths = subcommands()
    assert ("world", "synth") in paths and ("benchmark",) in paths
    assert [p for p in paths if p not in used] == []
