"""The live loop without ROS: the simulated walker follows its motion goals, the graph
localiser snaps its fixes, the camera's view-set builder makes one view set per node reached,
and the walked records are the in-process benchmark's (teleporting, and walking at 2 m/s with
GNSS noise). A walker that stops listening stalls the episode, and no decision in time holds
the vehicle."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.live_loop import LiveLoop
from cityseeker_ros.core.loop.run_plan import RunPlan
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Goal, Hold
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.sim import PolicyDecider, SimulatedWalker
from tests.core.evaluation.test_benchmark import lines
from tests.core.loop.rigs import FakeClock, LiveRig

COMPARED = ("episode_id", "seed", "path", "actions", "end_reason", "steps", "metrics")


def live_rig(config: BenchmarkConfig, speed_m_s=None, noise_m=0.0, stall_timeout_s=120.0, estop=None,
             **walker) -> LiveRig:
    bench = Benchmark(config)
    worlds = list(bench.worlds.values())
    world = worlds[0]
    plan = RunPlan.from_keys(config, worlds, [bench.key(t) for t in bench.tasks()])
    clock = FakeClock()
    start = world.graph.nodes[plan.current()[0].episode.start]
    walk = SimulatedWalker(start.lat, start.lon, speed_m_s=speed_m_s, noise_m=noise_m, clock=clock, **walker)
    decider = PolicyDecider(make_policy(config.policy, **config.policy_params),
                            {e.episode_id: e for e in world.episodes})
    return LiveRig(world, lambda outputs: LiveLoop(config, plan, None, outputs, decision_timeout_s=10.0,
                                                   stall_timeout_s=stall_timeout_s, clock=clock, estop=estop),
                   walk, clock, config.max_steps, decider)


@pytest.mark.parametrize("speed_m_s, noise_m", [(None, 0.0), (2.0, 1.0)])
def test_a_walked_live_run_scores_like_the_benchmark(tiny_city, tmp_path, speed_m_s, noise_m):
    config = BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1, 2], max_steps=6)
    Benchmark(config).run(tmp_path / "a", progress=False)
    expected = [json.loads(x) for x in lines(tmp_path / "a" / "episodes.jsonl")]
    rig = live_rig(config, speed_m_s, noise_m)
    rig.loop.start()
    for _ in range(20_000):
        if rig.loop.state == "finished":
            break
        rig.step()
    got = rig.recorder.of("outcome")
    assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected]
    goals = [c for c, _, _ in rig.recorder.of("command") if isinstance(c, Goal)]
    assert goals and rig.walker.moves >= sum(r["steps"] for r in got)
    guidance = rig.recorder.of("guidance")
    assert sum(g.action == "move" for g in guidance) == sum(r["steps"] for r in got)


def test_a_walker_that_stops_listening_stalls_holds_and_the_run_finishes(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="random", limit=1, max_steps=6)
    rig = live_rig(config, speed_m_s=1.5, stall_timeout_s=3.0, follow_goals=0)
    rig.loop.start()
    while rig.loop.state != "finished":
        rig.step()
        assert rig.clock.t < 1100
    [record] = rig.recorder.of("outcome")
    assert record["end_reason"] == "stalled" and record["steps"] == 0
    assert "stall_timeout_s 3" in record["error"]
    commands = rig.recorder.of("command")
    assert isinstance(commands[-1][0], Hold) and "stalled" in commands[-1][1]
    moves = [c for c, _, _ in commands if isinstance(c, Goal)]
    assert 1 <= len(moves) <= 5  # repeated about once a second for 3 s, then never again


def test_no_decision_in_time_holds_the_vehicle_and_resumes(tiny_city):
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", limit=1, max_steps=6)
    rig = live_rig(config)
    rig.answer_decisions = False
    rig.loop.start()
    while rig.loop.state != "holding":
        rig.step()
        assert rig.clock.t < 1100
    command, reason, _ = rig.recorder.of("command")[-1]
    assert isinstance(command, Hold) and "no decision for view set" in reason and rig.loop.holds == 1
    for _ in range(100):  # holding: no goal repeats, no second hold
        rig.step()
    assert rig.recorder.of("command")[-1][0] is command and rig.loop.holds == 1
    rig.answer_decisions = True
    [(view_set, context, round)] = rig.recorder.of("ask")
    decision, records = rig.decider.answer(view_set, context, round)
    rig.loop.decision(view_set.view_set_id, decision, records)
    while rig.loop.state != "finished":
        rig.step()
        assert rig.clock.t < 1200
    [record] = rig.recorder.of("outcome")
    assert record["end_reason"] in ("stopped", "budget_exhausted") and record["holds"][0]["held_s"] >= 10.0


def test_an_estop_reset_moves_nothing_until_a_new_decision(tiny_city):
    """The live loop repeated its goal every second whatever the e-stop, so after the bridge's
    reset the goal from before the e-stop resumed with no new decision. Now nothing leaves while
    latched, and after the reset the policy is asked again where the vehicle last stood; only its
    answer moves the vehicle."""
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", limit=1, max_steps=6)
    rig = live_rig(config, speed_m_s=0.5, stall_timeout_s=600.0, estop=EStop())
    rig.loop.start()
    started = rig.clock.t
    while not rig.recorder.of("ask"):  # at the start, the first decision asked and answered
        rig.step()
        assert rig.clock.t - started < 120
    while not [c for c, _, _ in rig.recorder.of("command")[1:] if isinstance(c, Goal)]:
        rig.step()  # the first step's goal is under way (walking at 0.5 m/s: 40 s a hop)
    rig.loop.trigger_estop("/estop", "e-stop topic true")
    tripped = len(rig.recorder.events)
    command, reason, _ = rig.recorder.of("command")[-1]
    assert isinstance(command, Hold) and "e-stop" in reason
    for _ in range(200):  # 10 s latched: the goal under way would have been repeated 10 times
        rig.step()
    rig.loop.release_estop("/estop")
    reset = len(rig.recorder.events)
    assert rig.loop.reset_estop() == (True, "ok")
    assert [v for k, v in rig.recorder.events[tripped:reset] if k == "command" and isinstance(v[0], Goal)] == []
    for _ in range(40):
        rig.step()
    after = [k for k, v in rig.recorder.events[reset:] if k == "ask" or (k == "command" and isinstance(v[0], Goal))]
    assert after[:2] == ["ask", "command"], after  # a new decision first, then its goal
    assert rig.loop.state == "running"


def test_the_fields_gate_holds_the_walker_whatever_the_loop_sends(tiny_city):
    """The simulated field passes each command through its own safety gate right before the walker,
    as the vehicle bridge does: with that gate's e-stop latched (the loop not told), the loop's goals
    keep coming and the walker takes none of them."""
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", limit=1, max_steps=6)
    rig = live_rig(config, speed_m_s=0.5, stall_timeout_s=600.0)
    rig.loop.start()
    while not [c for c, _, _ in rig.recorder.of("command") if isinstance(c, Goal)]:
        rig.step()
        assert rig.clock.t < 1100
    rig.field.gate.estop.trigger("test", "latched behind the loop's back")
    while rig.walker.goal is not None:  # the goal on its way stands until the loop repeats it: then a hold
        rig.step()
        assert rig.clock.t < 1200
    moves, where, sent = rig.walker.moves, rig.walker.position, len(rig.recorder.of("command"))
    for _ in range(200):  # 10 s: the loop repeats its goal about once a second
        rig.step()
    goals_after = [c for c, _, _ in rig.recorder.of("command")[sent:] if isinstance(c, Goal)]
    assert len(goals_after) >= 5, "the loop kept sending goals"
    assert rig.walker.moves == moves and rig.walker.position == where


def test_a_link_loss_ends_the_episode_and_only_a_decision_after_the_return_moves(tiny_city):
    """The fault as found: after a link loss the loop's one-second goal repeat sent the goal from
    before the loss again once the link was back, with no new decision. Now the loss (the
    bridge's link_error, once it had a link) ends the episode as an error naming it, nothing
    leaves while it lasts, and after the return the next episode's start is sent as a decision
    made then; the goal under way at the loss never leaves again."""
    config = BenchmarkConfig(data=str(tiny_city), policy="forward", limit=2, max_steps=6)
    rig = live_rig(config, speed_m_s=0.5, stall_timeout_s=600.0)
    rig.loop.start()
    rig.loop.vehicle_status("ok", "holding")
    while len([c for c, _, _ in rig.recorder.of("command") if isinstance(c, Goal)]) < 2:
        rig.step()  # the first step's goal is under way (walking at 0.5 m/s: 40 s a hop)
        assert rig.clock.t < 1200
    pre_loss = [v for v in rig.recorder.of("command") if isinstance(v[0], Goal)][-1]
    lost_reason = "no vehicle state for 0.6 s (link_timeout_s 0.5 s); holding"
    rig.loop.vehicle_status("link_error", lost_reason)
    rig.walker.command(HOLD)  # the bridge held it as the link went
    lost = len(rig.recorder.events)
    for _ in range(100):  # 5 s without a link, the bridge republishing its status
        rig.step()
        rig.loop.vehicle_status("link_error", lost_reason)
    assert [v for k, v in rig.recorder.events[lost:] if k == "command"] == []
    [record] = rig.recorder.of("outcome")
    assert record["end_reason"] == "error" and record["error"] == f"link_lost: {lost_reason}"
    rig.loop.vehicle_status("ok", "holding: nothing moves until a decision made after the reconnect")
    back = len(rig.recorder.events)
    for _ in range(40):
        rig.step()
    after = [v for k, v in rig.recorder.events[back:] if k == "command"]
    # The first motion is a new decision: the next episode's start, sent again after the return, or
    # the answer about a view set of that episode, asked after the loss.
    asked_since_loss = {v[0].view_set_id for k, v in rig.recorder.events[lost:] if k == "ask"}
    assert after and (after[0][1].endswith("(after a link return)") or after[0][2] in asked_since_loss), after
    assert all(v[2] != pre_loss[2] for v in after), after  # nothing decided on the pre-loss view set again
