"""Run a policy over a dataset's episodes and seeds, resumably and in parallel.

Every (episode, seed) draws its randomness from a generator seeded by both, so results do
not depend on the order episodes run in or on which worker runs them, and a serial and a
parallel run write the same episodes.jsonl.
"""
from __future__ import annotations

import json
import logging
import os
import platform
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np

from cityseeker_ros import __version__
from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.evaluation.config import (
    CONFIG_FILE,
    EPISODES_FILE,
    MEMORY_FILE,
    RESULT_DEFINING,
    RUN_COMMAND_ENV,
    SUMMARY_FILE,
    BenchmarkConfig,
)
from cityseeker_ros.core.evaluation.decisions import summarize_decisions
from cityseeker_ros.core.evaluation.episode_run import EpisodeRunner
from cityseeker_ros.core.evaluation.metrics import summarize
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import EpisodeLog, write_json_atomic
from cityseeker_ros.core.infra.progress import Progress, say
from cityseeker_ros.core.infra.redact import redact, redact_command
from cityseeker_ros.core.infra.text import clean_json
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, World
from cityseeker_ros.core.tasks.family import get_family
from cityseeker_ros.core.tasks.questions.facts import keep_facts


class Benchmark:
    """`Benchmark(config).run(out_dir)` writes episodes.jsonl, summary.json and config.json."""

    def __init__(self, config: BenchmarkConfig) -> None:
        from cityseeker_ros.core.evaluation.executors import EXECUTORS

        config.validate()
        self.config = config
        self.executor = EXECUTORS.get(config.executor)
        self.runner = EpisodeRunner(config, prepare=self.executor.prepares_in_driver)
        self.execution: dict[str, Any] = {}
        self.worlds = self.runner.worlds

    def tasks(self) -> list[tuple[str, int, int]]:
        return run_tasks(self.config, self.worlds)

    def key(self, task: tuple[str, int, int]) -> tuple[str, int]:
        city, i, seed = task
        return self.worlds[city].episodes[i].episode_id, seed

    def manifest(self, command: Optional[str] = None) -> dict[str, Any]:
        return run_manifest(self.config, self.worlds, self.runner.view_sources, command)

    def run(self, out_dir: Path, progress: bool = True, command: Optional[str] = None,
            progress_label: Optional[str] = None, progress_stream: Optional[TextIO] = None) -> dict[str, Any]:
        """`progress`: episodes done of total, rate and time left on `progress_stream` (stderr):
        a line rewritten in place on a terminal, one a minute in a log, and a final line."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if self.config.supervised and self.config.memory is None:
            self.config.memory = str((out / MEMORY_FILE).resolve())
        tasks = self.tasks()
        with RunOutput(out, self.manifest(command), [self.key(t) for t in tasks], group_commit=True) as output:
            todo = [t for t in tasks if self.key(t) not in output.done]
            if tasks and not todo and progress:
                say(nothing_to_run(f"all {len(tasks)} episodes are in {out / EPISODES_FILE}"), stream=progress_stream)
            label = progress_label or f"benchmark {self.config.policy}"
            with (Progress(label, len(tasks), stream=progress_stream, already_done=len(tasks) - len(todo))
                  if progress else nullcontext()) as bar:
                for record in self._execute(todo):
                    output.add(record)
                    if bar is not None:
                        bar.advance()
            return output.write_summary(self.execution)

    def _execute(self, todo: list[tuple[str, int, int]]) -> Iterator[dict[str, Any]]:
        """Records of `todo` in task order, from the configured executor (core/executors)."""
        size = self.config.batch_size
        groups = [todo[i:i + size] for i in range(0, len(todo), size)]
        executor = self.executor(self.config)
        self.execution = executor.stats  # filled in as it runs; summary.json's "execution"
        yield from executor.records(self.runner, groups)


def run_tasks(config: BenchmarkConfig, worlds: dict[str, World]) -> list[tuple[str, int, int]]:
    """(city, episode index, seed) in run order: every episode for the first seed, then the next.
    `facts` "map" keeps only the questions whose every fact is the map's, `per_category` then the
    first N episodes of each category of each city in load order, then `limit` the first K of what
    is left."""
    pairs = []
    for w in worlds.values():
        taken: Counter[str] = Counter()
        kept = keep_facts(enumerate(w.episodes), config.facts, details_of=lambda pair: pair[1].details)
        for i, episode in kept:
            taken[episode.category] += 1
            if config.per_category is None or taken[episode.category] <= config.per_category:
                pairs.append((w.city, i))
    if config.limit is not None:
        pairs = pairs[: config.limit]
    return [(city, i, seed) for seed in config.seeds for city, i in pairs]


def run_manifest(config: BenchmarkConfig, worlds: dict[str, World], view_sources: dict[str, Any],
                 command: Optional[str] = None) -> dict[str, Any]:
    """config.json: the settings, what the data and pixels were, versions; written next to the
    results, with every credential masked (core/infra/redact.py): results are shared, keys are not."""
    import networkx
    import pyproj

    from cityseeker_ros.core.evaluation import agent_settings

    c = config
    family = get_family(c.family)
    facts = {city: f for city, w in sorted(worlds.items()) if w.root is not None and (f := family.describe(w.root))}
    return clean_json(redact({
        **asdict(c),
        "data": str(Path(c.data).resolve()),
        "privileged": bool(getattr(POLICIES.get(c.policy), "privileged", False))
        or any(s.get("oracle") for s in c.strategies),
        "oracle_strategies": [s["name"] for s in c.strategies if s.get("oracle")],
        "run_id": c.run_id(),
        "cities": sorted(worlds),
        "synthetic": any(w.synthetic for w in worlds.values()),
        "view_sources": view_sources,
        # The prompt version (vlm: profile, version, template hash; a seed agent: its version) and
        # every switch of the policy, defaults included (core/evaluation/agent_settings.py).
        "prompt": agent_settings.prompt(c.policy, c.policy_params, c.family),
        "switches": agent_settings.switches(c.policy, c.policy_params),
        "data_files": resolved_keys({p: h for w in worlds.values() for p, h in w.source_files.items()}),
        "package_version": __version__,
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "networkx": networkx.__version__, "pyproj": pyproj.__version__},
        "command": os.environ.get(RUN_COMMAND_ENV) or command or redact_command(sys.argv),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # What the family states beside every result (landmark counts, route lengths); none for needs.
        **({"task_family": {"name": family.name, "world": facts}} if facts else {}),
    }))


def check_resume(out: Path, manifest: dict[str, Any]) -> None:
    """A folder that holds a run with other result-defining settings is never appended to. Paths
    are compared resolved, so `worlds/x` and `/home/me/worlds/x` are the same data; the refusal
    names only the settings that differ, down to the changed entry of a mapping."""
    path = out / CONFIG_FILE
    if not path.exists():
        return
    try:
        previous = clean_json(redact(json.loads(path.read_text(encoding="utf-8"))))  # as a manifest is now
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg}); use a new --out") from None
    if not isinstance(previous, dict):
        raise ConfigError(f"{path}: expected a JSON object; use a new --out")
    before, now = comparable(previous), comparable(manifest)
    changed = [line for k in RESULT_DEFINING for line in differences(k, before.get(k), now.get(k))]
    if changed:
        raise ConfigError(f"{out} holds a run with different settings ({'; '.join(changed)}); "
                          "use a new --out or the same settings to resume")


def resolved_keys(files: dict[str, Any]) -> dict[str, Any]:
    """A path -> value mapping keyed by absolute, symlink-free paths (relative ones from the
    current folder)."""
    return {str(Path(p).resolve()): v for p, v in files.items()}


def comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as check_resume compares it: data file paths resolved (a config.json written
    before they were), and the view parameters that every view source describes left to those
    descriptions, which hold them in canonical form (a panorama folder resolved)."""
    out = dict(manifest)
    out.setdefault("family", DEFAULT_FAMILY)  # written before task families: its runs are needs
    out.setdefault("facts", "all")  # written before --facts: every question ran
    if isinstance(out.get("data_files"), dict):
        out["data_files"] = resolved_keys(out["data_files"])
    described = [set(d) for d in (out.get("view_sources") or {}).values() if isinstance(d, dict)]
    if described and isinstance(out.get("view_params"), dict):
        out["view_params"] = {k: v for k, v in out["view_params"].items() if k not in set.intersection(*described)}
    return out


_ABSENT = object()


def differences(key: str, before: Any, now: Any) -> list[str]:
    """`key: old -> new` for each leaf that differs, mappings followed entry by entry
    (`data_files[/w/graph.json]: 'ab..' -> 'cd..'`, `policy_params.temperature: 0 -> 0.2`)."""
    if before == now:
        return []
    if isinstance(before, dict) and isinstance(now, dict):
        lines = []
        for k in [*before, *(k for k in now if k not in before)]:
            sub = f"{key}[{k}]" if "/" in str(k) or " " in str(k) else f"{key}.{k}"
            lines += differences(sub, before.get(k, _ABSENT), now.get(k, _ABSENT))
        return lines

    def shown(value: Any) -> str:
        return "(absent)" if value is _ABSENT else repr(value)
    return [f"{key}: {shown(before)} -> {shown(now)}"]


def nothing_to_run(what_is_there: str) -> str:
    """The line for a run whose every episode is already in its folder (in process or over ROS)."""
    return f"nothing to run: {what_is_there} (remove the folder, or give another --out, to run them again)"


def resume_note(out: Path, done: set[tuple[str, int]], wanted: Sequence[tuple[str, int]]) -> Optional[str]:
    """One line when resuming with other seeds than the folder holds: seeds are not part of what
    must match, so more seeds extend the run and fewer leave records out of the summary."""
    before = sorted({seed for _, seed in done})
    now = sorted({seed for _, seed in wanted})
    added, left = [s for s in now if s not in before], [s for s in before if s not in now]
    if not before or not (added or left):
        return None
    def names(seeds: list[int]) -> str:
        return ("seeds " if len(seeds) > 1 else "seed ") + ", ".join(map(str, seeds))

    parts = []
    if added:
        parts.append(f"{names(added)} added to the {names(before)} already there "
                     f"({sum(1 for k in wanted if k not in done)} tasks to run)")
    if left:
        kept = sum(1 for _, seed in done if seed in left)
        parts.append(f"the summary covers {names(now)} only; {kept} records of {names(left)} stay in "
                     "episodes.jsonl")
    return f"{out}: resuming with --seeds {len(now)}: " + "; ".join(parts)


class RunOutput:
    """An output folder being filled, by `Benchmark.run` or by the evaluator node: config.json
    checked against a run it may resume and written, records appended to episodes.jsonl (each
    (episode, seed) once), summary.json over the wanted tasks in log order. `group_commit`:
    records reach the disk in batches (core/infra/group_commit.py), for a writer fed by many workers."""

    def __init__(self, out: Path, manifest: dict[str, Any], wanted: Sequence[tuple[str, int]],
                 group_commit: bool = False) -> None:
        from cityseeker_ros.core.infra.group_commit import GroupCommitLog

        self.out, self.manifest, self.wanted = Path(out), manifest, set(wanted)
        self.out.mkdir(parents=True, exist_ok=True)
        check_resume(self.out, manifest)
        write_json_atomic(self.out / CONFIG_FILE, manifest)
        self.log = (GroupCommitLog if group_commit else EpisodeLog)(self.out / EPISODES_FILE)
        self.done = {(r["episode_id"], r["seed"]) for r in self.log.records}
        note = resume_note(self.out, self.done, list(wanted))
        if note:
            logging.getLogger(__name__).warning(note)

    @property
    def complete(self) -> bool:
        return self.wanted <= self.done

    def add(self, record: dict[str, Any]) -> bool:
        """Append a record; False (and nothing written) when its (episode, seed) is already there."""
        key = (record["episode_id"], record["seed"])
        if key in self.done:
            return False
        self.log.append(record)
        self.done.add(key)
        return True

    def write_summary(self, execution: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """`execution`: how the episodes of this session ran (the executor's actors and retries)."""
        if hasattr(self.log, "flush"):
            self.log.flush()
        records = [r for r in self.log.records if (r["episode_id"], r["seed"]) in self.wanted]
        summary = run_summary(records, self.manifest)
        if execution:
            summary["execution"] = execution
        write_json_atomic(self.out / SUMMARY_FILE, summary)
        return summary

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> RunOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_summary(records: Sequence[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    """summary.json of a run's records."""
    summary = summarize(records)
    summary["end_reasons"] = _count(r["end_reason"] for r in records)
    if any("decisions" in r for r in records):
        summary["decisions"] = summarize_decisions(records)
    summary["config"] = manifest
    return summary


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))
