"""What `cityseeker run benchmark|camera|vehicle|bag` does: plan the tasks a (possibly resumed) run
still needs, start the launch file's node set with the runner, wait for the evaluator to have
written every task, stop everything started, and return summary.json. And what `cityseeker seek`
does: check the goal and the configuration before any process starts, then one Seek goal."""
from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import POLICIES, make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.benchmark import nothing_to_run, resume_note, run_tasks
from cityseeker_ros.core.evaluation.config import EPISODES_FILE, MEMORY_FILE, SUMMARY_FILE, BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.extras import install_hint
from cityseeker_ros.core.loop.seek import SeekRequest, check_request
from cityseeker_ros.core.sensing.camera import FRAME_SOURCES, make_frame_source
from cityseeker_ros.core.sensing.localisation import GraphLocaliser
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, World
from cityseeker_ros.core.tasks.family import family_of_record, get_family
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import node_sets, vehicle_link
from cityseeker_ros.ros.run_config import RunConfig, checked
from cityseeker_ros.ros.runner import LOG_PREFIX, NodeSpec, RunFailed, Runner
from cityseeker_ros.ros.seek_outcome import EXIT_ERROR, SeekOutcome, exit_code, rejection, write_json


def written_keys(out: Path) -> set[tuple[str, int]]:
    """(episode, seed) of the complete lines of episodes.jsonl (a torn last line is not one)."""
    return {(r["episode_id"], r["seed"]) for r in EpisodeLog(out / EPISODES_FILE).read_new()}


class EpisodeLog:
    """The records of episodes.jsonl as it grows: each read returns the complete lines written
    since the last one (a line still being written waits for its newline)."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset = Path(path), 0

    def read_new(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        records = []
        for line in data[:end].split(b"\n"):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:  # blank, or torn by a crash before a restart appended
                continue
        return records


ENDINGS = {"stopped": "stopped", "answered": "answered", "budget_exhausted": "budget spent",
           "invalid_action": "ended by invalid actions",
           "error": "ended by an error"}


def progress_line(record: dict[str, Any], index: int, total: int) -> str:
    """`episode 3/12 <id> seed 0: budget spent after 35 steps, 12 m from the target: success (within
    50 m)` for a finished task. Success is TCP@50 (the final node within 50 m of the target), so a
    run out of budget can succeed; the line says both, in words that cannot be read as one."""
    metrics, family = record.get("metrics", {}), family_of_record(record)
    reached = float(metrics.get(family.success_metric, 0.0)) >= 100.0
    ending = ENDINGS.get(record["end_reason"], str(record["end_reason"]))
    where = f", {float(metrics['spd']):.0f} m from the target" if metrics.get("spd") is not None else ""
    line = (f"episode {index}/{total} {record['episode_id']} seed {record['seed']}: {ending} after "
            f"{record['steps']} steps{where}: {f'success ({family.success_words})' if reached else 'not reached'}")
    return line + (f" ({' '.join(str(record['error']).split())[:200]})" if record.get("error") else "")


class BridgeSays:
    """The vehicle bridge's lines for the person running the stack (vehicle_link.SAID: the autopilot's
    heartbeat, arming, takeoff, the control mode), read from its log as it grows and printed; only
    for a flying link (a walker says nothing worth a line). Called from the runner's poll: never True."""

    def __init__(self, logs: Path, nodes: Iterable[NodeSpec], log: Callable[[str], None] = print) -> None:
        bridge = next((n for n in nodes if n.name == node_sets.BRIDGE), None)
        params = json.loads(bridge.params.get("link_params") or "{}") if bridge is not None else {}
        self.on = bridge is not None and vehicle_link.flying(str(bridge.params.get("link", "")), params)
        self.path, self.log, self._offset = Path(logs) / f"{node_sets.BRIDGE}.log", log, 0

    def __call__(self) -> bool:
        if not self.on or not self.path.is_file():
            return False
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            text = LOG_PREFIX.sub("", line.strip())
            if text.startswith(vehicle_link.SAID):
                self.log(text)
        return False


WAITING_NOTE_S = 15.0


class Completion:
    """Whether every wanted task is written and summary.json was rewritten after the last of
    them. The runner polls it; each task written is reported through `log` as it appears,
    except those of `quiet` (written by the run this one resumes)."""

    def __init__(self, out: Path, wanted: list[tuple[str, int]], log: Optional[Callable[[str], None]] = None,
                 quiet: Iterable[tuple[str, int]] = (), waiting: Optional[Callable[[], str]] = None,
                 every_s: float = WAITING_NOTE_S) -> None:
        """`waiting`: what the run is doing, said every `every_s` until the first task is written
        (models load, nodes configure: a first episode can take a minute)."""
        self.out, self.wanted, self.log, self.quiet = Path(out), set(wanted), log, set(quiet)
        self.waiting, self.every_s = waiting, every_s
        self._episodes = EpisodeLog(self.out / EPISODES_FILE)
        self._keys: set[tuple[str, int]] = set()
        self._started = self._noted = time.monotonic()

    def __call__(self) -> bool:
        for record in self._episodes.read_new():
            key = (record["episode_id"], record["seed"])
            if key in self._keys:
                continue
            self._keys.add(key)
            if self.log is not None and key not in self.quiet:
                self.log(progress_line(record, len(self._keys & self.wanted), len(self.wanted)))
        now = time.monotonic()
        if (self.log is not None and self.waiting is not None and not (self._keys - self.quiet)
                and now - self._noted >= self.every_s):
            self._noted = now
            self.log(f"waiting for the first episode ({now - self._started:.0f} s): {self.waiting()}")
        episodes, summary = self.out / EPISODES_FILE, self.out / SUMMARY_FILE
        if not episodes.is_file() or not summary.is_file():
            return False
        return self.wanted <= self._keys and summary.stat().st_mtime_ns >= episodes.stat().st_mtime_ns


@contextlib.contextmanager
def domain(domain_id: Optional[int]) -> Iterator[int]:
    """The given id, else $ROS_DOMAIN_ID, else one leased on this host for the run."""
    if domain_id is not None:
        yield domain_id
    elif os.environ.get("ROS_DOMAIN_ID"):
        yield int(os.environ["ROS_DOMAIN_ID"])
    else:
        with ros.lease_domain() as leased:
            yield leased


def run_tasks_with(config: BenchmarkConfig, out: Path, make_nodes: Callable[[list[tuple[str, int]]], list[NodeSpec]],
                   *, single_process: bool = False, respawn: bool = True, timeout_s: Optional[float] = None,
                   domain_id: Optional[int] = None) -> dict[str, Any]:
    """Start the node set for the tasks a (possibly resumed) run still needs, wait until the
    evaluator has written every task, stop everything started; summary.json."""
    config.validate()
    out = Path(out)
    # refused before OUT is made
    worlds = {w.city: w for w in load_dataset(Path(config.data), config.dataset, family=config.family)}
    out.mkdir(parents=True, exist_ok=True)
    if config.supervised and config.memory is None:
        config.memory = str((out / MEMORY_FILE).resolve())
    wanted = [(worlds[c].episodes[i].episode_id, s) for c, i, s in run_tasks(config, worlds)]
    done = written_keys(out)
    todo = [key for key in wanted if key not in done]
    note = resume_note(out, done, wanted)
    if note:
        print(note, flush=True)
    summary = out / SUMMARY_FILE
    if not todo and summary.is_file():
        print(nothing_to_run(f"all {len(wanted)} tasks are in {out / EPISODES_FILE} and {summary} is written"),
              flush=True)
        return json.loads(summary.read_text(encoding="utf-8"))
    nodes = make_nodes(todo)
    if not respawn:
        nodes = [replace(n, respawn=False) for n in nodes]
    missing = ros.missing_ros_modules()
    if missing:
        raise ConfigError(f"ROS 2 is not installed here (missing {', '.join(missing)}): {install_hint('ros')}")
    with domain(domain_id) as domain_id_used:
        print(f"ROS_DOMAIN_ID={domain_id_used}: {len(todo)} of {len(wanted)} tasks to run "
              f"({'one process' if single_process else f'{len(nodes)} processes'}); node logs in {out / 'ros'}",
              flush=True)
        with Runner(nodes, out / "ros", ros.ros_env(domain_id=domain_id_used), single_process=single_process) as runner:
            runner.start()
            says = BridgeSays(out / "ros", nodes, log=lambda line: print(line, flush=True))
            completion = Completion(out, wanted, log=lambda line: print(line, flush=True), quiet=done,
                                    waiting=runner.activity)
            runner.watch(lambda: says() or completion(), timeout_s)
    return json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))


def run_bag(run: RunConfig, *, settle_s: float = 10.0, timeout_s: Optional[float] = None,
            domain_id: Optional[int] = None) -> dict[str, Any]:
    """bag_eval.launch.py's processes: play `run.bag`, decide each played view set with the
    run's policy, record the decisions into `run.out_bag`; `settle_s` after the player ends (time
    for the last decision) the recorder finishes its bag. The report compares them with the
    recorded ones."""
    # Here, not at the top: the records need the ROS message packages, which the other runs
    # report missing themselves (ros.env.missing_ros_modules) rather than fail to import.
    from cityseeker_ros.ros.bag_records import compare_decisions, write_redecision

    bag, out_bag = Path(run.bag), Path(run.out_bag)
    if not bag.exists():
        raise ConfigError(f"{bag}: no such bag")
    if out_bag.exists():
        raise ConfigError(f"{out_bag}: exists; the recorder writes a new bag")
    nodes = node_sets.nodes(run)
    logs = Path(f"{out_bag}.logs")
    with domain(domain_id) as domain_id_used:
        print(f"ROS_DOMAIN_ID={domain_id_used}: playing {bag} into a {run.benchmark.policy} decision node; "
              f"logs in {logs}", flush=True)
        with Runner(nodes, logs, ros.ros_env(domain_id=domain_id_used)) as runner:
            runner.start()
            runner.watch(lambda: runner.exited(node_sets.PLAYER), timeout_s)
            time.sleep(settle_s)
            if runner.end(node_sets.RECORDER) != 0:
                raise RunFailed(f"the recorder failed:\n{runner.tail(node_sets.RECORDER)}")
    return write_redecision(compare_decisions(bag, out_bag), Path(f"{out_bag}.eval"))


# -- cityseeker seek -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeekPlan:
    """A Seek that passed every check made before a process starts: the run (its step budget
    covering the goal's), the goal, and the node set with the simulated walker placed."""

    run: RunConfig
    request: SeekRequest
    nodes: list[NodeSpec]


def plan_seek(run: RunConfig, need: str, *, max_steps: int = 0, preempt: bool = False,
              start: Optional[str] = None, family: str = DEFAULT_FAMILY) -> SeekPlan | SeekOutcome:
    """Everything `cityseeker seek` can check before it starts a process. First the goal, as the
    server would (core.loop.seek.check_request): a bad need or budget is the server's rejection,
    returned. Then the configuration, each error a ConfigError naming what was given: the run's
    settings (policy name, walker, safety file), the world folder and that it loads, where the
    simulated walker starts, the policy's parameters, the frame source and its parameters.
    `max_steps` 0: the family's budget for a goal (family.goal_budget: the run's, 50 for a
    question), which the run's nodes then count; `start`: a node id or "LAT,LON" (--start). An
    unknown family is a bad option (exit 2, as an unknown policy), not the server's bad_family."""
    try:
        goal_family = get_family(family)
    except ConfigError as exc:
        raise ConfigError(f"--family {family}: {exc}") from None
    request = SeekRequest(need, max_steps, preempt, family)
    refused = check_request(request, run.benchmark.max_steps)
    if refused is not None:
        return rejection(refused.code, refused.reason)
    # The camera counts steps too: the run's budget is the goal's, so neither cuts the other short
    # (and a goal of 0 steps is given the run's budget by the server: the family's here).
    budget = max_steps or goal_family.goal_budget(run.benchmark.max_steps)
    run = checked(replace(run, benchmark=replace(run.benchmark, max_steps=budget)))
    world = _seek_world(Path(run.benchmark.data), run.benchmark.dataset)
    walker = _walker_start(world, start, "sim" if run.walker == "sim" or run.link == "walker" else "")
    _check_seek_policy(run.benchmark.policy, run.benchmark.policy_params)
    FRAME_SOURCES.get(run.source)  # a source that opens a device is made by camera_ingest alone
    if run.source == "replay":  # the world rendered: made (and so checked) here, then dropped
        try:
            make_frame_source(run.source, world, run.source_params).close()
        except ConfigError as exc:
            raise ConfigError(f"--source {run.source}: {exc}") from None
    nodes = [place_walker(n, walker) if n.name == node_sets.BRIDGE else n for n in node_sets.seek_nodes(run)]
    return SeekPlan(run, request, nodes)


def plan_ar(run: RunConfig) -> tuple[RunConfig, World]:
    """Everything `cityseeker ar` can check before it starts a process, each error a ConfigError
    naming what was given: the run's settings, the world folder and that it loads (one city), the
    policy and its parameters (as plan_seek), and the `topic` frame source's settings."""
    run = checked(run)
    world = _seek_world(Path(run.benchmark.data), run.benchmark.dataset)
    _check_seek_policy(run.benchmark.policy, run.benchmark.policy_params)
    try:
        make_frame_source(run.source, world, run.source_params).close()
    except ConfigError as exc:
        raise ConfigError(f"the phone camera ({run.source} source): {exc}") from None
    return run, world


def place_walker(bridge: NodeSpec, start: dict[str, str]) -> NodeSpec:
    """The vehicle bridge with its walker started at `start` ({"start": "LAT,LON"} or
    {"start_node": ID}); a bridge of another link is left as it is."""
    if not start or bridge.params.get("link") != "walker":
        return bridge
    params = {**json.loads(bridge.params["link_params"]), **start}
    return replace(bridge, params={**bridge.params, "link_params": json.dumps(params)})


def _seek_world(data: Path, dataset: str) -> World:
    if data.is_file():
        raise ConfigError(f"--world {data}: a file; a world is a folder (with world.json and graph.json, as "
                          f"`cityseeker world build monaco --out FOLDER` writes), e.g. {data.parent}")
    if not data.is_dir():
        raise ConfigError(f"--world {data}: no such folder (`cityseeker world build monaco --out FOLDER` builds "
                          f"one)")
    try:
        worlds = load_dataset(data, dataset)
    except ConfigError as exc:  # the loader names the benchmark's flag
        raise ConfigError(str(exc).replace(f"--data {data}", f"--world {data}", 1)) from None
    if len(worlds) != 1:
        raise ConfigError(f"--world {data} holds {len(worlds)} cities ({', '.join(w.city for w in worlds)}): a "
                          f"seek walks one; give its folder")
    return worlds[0]


def _walker_start(world: World, start: Optional[str], walker: str) -> dict[str, str]:
    """The walker node's start parameters for --start (a node id, or LAT,LON on the graph)."""
    if walker != "sim":
        if start:
            raise ConfigError(f"--start {start}: it places the simulated walker (--walker sim); with a "
                              f"device or a vehicle the fixes say where it stands")
        return {}
    example = world.episodes[0].start if world.episodes else next(iter(world.graph.nodes))
    if not start:
        if not world.episodes:
            raise ConfigError(f"{world.city} has no task whose start the walker could take: give --start NODE_ID "
                              f"or --start LAT,LON (e.g. --start {example})")
        return {}
    if "," in start:
        try:
            lat, lon = (float(v) for v in start.split(","))
        except ValueError:
            raise ConfigError(f"--start {start}: expected a node id (e.g. {example}) or LAT,LON in degrees") from None
        if not (math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180):
            raise ConfigError(f"--start {start}: not a position (LAT in -90..90, LON in -180..180 degrees)")
        loc = GraphLocaliser(world.graph, world.actions).update(lat, lon)  # as the server will place it
        if not loc.on_graph or loc.node_id is None:
            raise ConfigError(f"--start {start}: off the street graph of {world.city}: {loc.reason}")
        return {"start": f"{lat!r},{lon!r}"}
    if start not in world.graph.nodes:
        close = difflib.get_close_matches(start, list(world.graph.nodes), n=3)
        hint = (f"did you mean {' or '.join(close)}?" if close else
                f"its node ids look like {example} (where its first task starts)")
        raise ConfigError(f"--start {start}: no node {start!r} in the street graph of {world.city}; {hint}")
    return {"start_node": start}


def _check_seek_policy(name: str, params: dict[str, Any]) -> None:
    """The policy is made as the decision node makes it, without loading a model: an unknown or
    bad parameter fails here. A privileged policy reads the task's target; a Seek has none."""
    if getattr(POLICIES.get(name), "privileged", False):
        usable = [n for n in POLICIES.names() if not getattr(POLICIES.get(n), "privileged", False)]
        raise ConfigError(f"policy {name!r} reads the task's target, and a Seek has none (its need is given at "
                          f"run time); use one of: {', '.join(usable)}")
    _check_model_server(make_policy(name, **params))


# The model server asked once, at most this long, before any process starts (its own timeout if less).
SERVER_CHECK_S = 5.0


def _check_model_server(policy: Any) -> None:
    """A policy that calls a model server (the openai backend) asks it once for its models before
    any node starts: a server that is not there fails here in a second or so, its cause first
    ("cannot reach the server at URL: connection refused"), not after the node set has started
    and the goal was refused as not_ready. Local backends load nothing here."""
    if getattr(policy, "backend_name", None) != "openai":
        return
    from cityseeker_ros.core.agents.vlm.backend import BackendError, make_backend

    params = dict(policy.backend_params)
    if params.get("check_on_start", True) is False:  # a server that lists other models than it serves
        return
    params.update(retries=0, timeout_s=min(float(params.get("timeout_s", SERVER_CHECK_S)), SERVER_CHECK_S))
    try:
        make_backend("openai", **params).close()
    except BackendError as exc:
        raise ConfigError(str(exc)) from None


def run_seek(run: RunConfig, need: str, *, max_steps: int = 0, preempt: bool = False, start: Optional[str] = None,
             result_file: Optional[Path] = None, timeout_s: Optional[float] = None,
             domain_id: Optional[int] = None, family: str = DEFAULT_FAMILY, extra_nodes: Sequence[NodeSpec] = (),
             started: Optional[Callable[[], None]] = None) -> int:
    """`cityseeker seek`: check everything that can be checked (plan_seek), then start the camera
    node set serving Seek goals, send one goal through nodes/seek_client.py in its own ROS process
    (its feedback and result go to this terminal), stop everything started; the exit code
    (ros/seek_outcome.py). A goal refused by the checks is printed as the server's rejection, and
    nothing starts. Node logs go to OUT/ros (`run.out`), else to a temporary folder that is
    removed at the end, unless the run ended in an error (exit 2): it is kept and named then.
    `extra_nodes` start with the node set (the operator console's server), and `started` is called
    once they all have."""
    temporary = not run.out
    root = Path(tempfile.mkdtemp(prefix="cityseeker-seek-")) if temporary else Path(run.out)
    keep = False
    try:
        # The run's folder holds the node logs and the vehicle bridge's e-stop latch: with no --out
        # the latch went to ./ros/ and every later Seek started from that folder stayed latched.
        plan = plan_seek(replace(run, out=str(root)), need, max_steps=max_steps, preempt=preempt, start=start,
                         family=family)
        if isinstance(plan, SeekOutcome):
            print(f"result: {plan.line()}", flush=True)
            if result_file is not None:
                write_json(plan, result_file)
            return exit_code(plan)
        missing = ros.missing_ros_modules()
        if missing:
            raise ConfigError(f"ROS 2 is not installed here (missing {', '.join(missing)}): {install_hint('ros')}")
        plan = replace(plan, nodes=[*plan.nodes, *extra_nodes])
        keep = True  # from here on, a failure keeps the node logs
        code = _seek(plan, root / "ros", temporary, max_steps, result_file, timeout_s, domain_id, started)
        keep = code == EXIT_ERROR
        return code
    except KeyboardInterrupt:
        keep = False
        raise
    finally:
        if temporary and keep:
            print(f"seek: node logs kept in {root / 'ros'}", file=sys.stderr, flush=True)
        elif temporary:
            shutil.rmtree(root, ignore_errors=True)


def _seek(plan: SeekPlan, logs: Path, temporary: bool, max_steps: int, result_file: Optional[Path],
          timeout_s: Optional[float], domain_id: Optional[int], started: Optional[Callable[[], None]] = None) -> int:
    request = plan.request
    client_args = [request.need, "--max-steps", str(max_steps), "--family", request.family] + (
        ["--preempt"] if request.preempt else [])
    if result_file is not None:
        client_args += ["--json", str(result_file)]
    where = "a temporary folder (kept only if the run fails; --out DIR keeps them)" if temporary else str(logs)
    with domain(domain_id) as domain_id_used:
        print(f"ROS_DOMAIN_ID={domain_id_used}: {', '.join(n.name for n in plan.nodes)}; node logs in {where}",
              flush=True)
        env = ros.ros_env(domain_id=domain_id_used)
        with Runner(plan.nodes, logs, env) as runner:
            runner.start()
            if started is not None:
                started()
            client = ros.spawn(ros.python_module_command("cityseeker_ros.nodes.seek_client", *client_args), env,
                               die_with_parent=True)
            says = BridgeSays(logs, plan.nodes, log=lambda line: print(line, flush=True))
            try:
                runner.watch(lambda: says() or client.poll() is not None, timeout_s)
            finally:
                _stop_client(client)
                says()
    return int(client.returncode)


def _stop_client(client: subprocess.Popen, timeout_s: float = 15.0) -> None:
    """SIGTERM, not SIGINT: the client then cancels a goal it sent (the vehicle holds) and prints
    its result, but says nothing of a goal it never sent: the node or the --timeout that ended
    the run is the news, and the runner says it. SIGKILL after `timeout_s`."""
    ros.stop(client, timeout_s, signal.SIGTERM)
