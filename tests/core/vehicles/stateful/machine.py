"""The randomized driver: one Hypothesis rule-based state machine for every link. A rig (one per
link, in rig_*.py) builds the vehicle side, its tap and the bridge, and says which events its
vehicle can have (a walker has no pilot and no battery)."""
from __future__ import annotations

import time
from typing import Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from cityseeker_ros.core.vehicles.authority import State
from cityseeker_ros.core.vehicles.bridge import LINK_ERROR
from cityseeker_ros.core.vehicles.monitor import Marker
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Goal, Velocity
from cityseeker_ros.core.vehicles.safety.envelope import check_envelope
from tests.core.vehicles.stateful.harness import Tap, around, decision, goal_at, judge, wait_for

MAX_AGE_S = 1.0  # the envelope's maximum command age (the monitor's max_stamp_age_s)
KINDS = ["inside", "outside", "outside", "below_floor", "above_ceiling", "fast"]  # next_goal adds inside ones
OUTAGE_S = 1.2  # the MAVLink link's loss threshold is 0.6 s, the bridge's telemetry timeout 0.5 s
FAR_M = (60.0, 100.0)  # from home: inside every rig's 120 m fence
FAR_FLOWN_S = (1.5, 3.0)  # the monitor's speed window (1 s) after the link's 0.5 s prestream and mode switch
HEARTBEAT_S = 1.1  # PX4's and ArduPilot's heartbeat period, and a little
PAUSE = st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.1, 0.2, 0.4])  # after each event: interleavings with the threads


class SafetyMachine(RuleBasedStateMachine):
    """Subclasses set `rig_factory` (a callable returning a started rig)."""

    rig_factory = None
    record: Optional[list] = None  # the soak collects (scenario events, tap counts) here

    def __init__(self) -> None:
        super().__init__()
        self.tap = Tap()
        self.rig = type(self).rig_factory(self.tap)
        self.log: list[str] = []
        self.dropped = False

    @property
    def bridge(self):
        return self.rig.bridge

    def _say(self, line: str) -> None:
        self.log.append(f"{time.monotonic():.3f} {line} [{self.bridge.authority.state.value}]")

    def _decide(self, command, kind: str, goal=None, velocity=None, frame: str = "enu",
                stamp_age_s: float = 0.0) -> None:
        """As the vehicle-bridge node does: the envelope first, then the bridge. The decision is
        marked once the bridge has it (a stop that reached the vehicle while the call was on its way
        is older than the decision, as the bridge counts them too)."""
        now, stamp_at = time.time(), time.monotonic() - stamp_age_s
        check = check_envelope("velocity" if kind == "velocity" else kind, frame, now - stamp_age_s, now, MAX_AGE_S)
        if check.ok:
            self.bridge.command(command)
        decision(self.tap, kind, frame=frame, stamp=stamp_at, goal=goal, velocity=velocity)

    # -- decisions -------------------------------------------------------------------------------
    @rule(bearing=st.floats(0, 360), metres=st.floats(5, 60), alt=st.floats(2, 20), kind=st.sampled_from(KINDS),
          pause=PAUSE)
    def goal(self, bearing, metres, alt, kind, pause):
        self._goal(bearing, metres, alt, kind)
        time.sleep(pause)

    @rule(bearing=st.floats(0, 360), metres=st.floats(5, 60), pause=PAUSE)
    def next_goal(self, bearing, metres, pause):
        """A second goal rule: goals are what a run is mostly made of."""
        self._goal(bearing, metres, 10.0, "inside")
        time.sleep(pause)

    @rule(bearing=st.floats(0, 360), metres=st.floats(FAR_M[0], FAR_M[1]), alt=st.floats(2, 20),
          seconds=st.floats(FAR_FLOWN_S[0], FAR_FLOWN_S[1]))
    def far_goal(self, bearing, metres, alt, seconds):
        """A far goal inside the fence, left to fly: the speed rule judges an excess held for a
        second, and a goal followed at once by the next event is rarely flown that long."""
        self._goal(bearing, metres, alt, "far")
        time.sleep(seconds)

    def _goal(self, bearing, metres, alt, kind):
        speed = None
        if kind == "outside":
            metres = 200.0
        elif kind == "below_floor":
            alt = -50.0
        elif kind == "above_ceiling":
            alt = 60.0
        elif kind == "fast":
            speed = 20.0
        alt = self.rig.altitude(alt)
        lat, lon, alt = goal_at(self.rig.home, bearing, metres, alt)
        self._say(f"goal {kind} {bearing:.0f} deg {metres:.0f} m alt {alt:.0f}")
        self._decide(Goal(lat, lon, alt, None, speed), "goal", goal=(lat, lon, alt))

    @precondition(lambda self: self.rig.velocity)
    @rule(east=st.floats(-4, 4), north=st.floats(-4, 4), up=st.floats(-1.5, 1.5), pause=PAUSE)
    def velocity(self, east, north, up, pause):
        self._say(f"velocity {east:.1f} {north:.1f} {up:.1f}")
        self._decide(Velocity(east, north, up), "velocity", velocity=(east, north, up))
        time.sleep(pause)

    @rule(frame=st.sampled_from(["ned", "base_link"]), east=st.floats(0.5, 3), pause=PAUSE)
    def velocity_in_a_wrong_frame(self, frame, east, pause):
        self._say(f"velocity in {frame}")
        self._decide(Velocity(east, 0.0, 0.0), "velocity", velocity=(east, 0.0, 0.0), frame=frame)
        time.sleep(pause)

    @rule(age=st.sampled_from([5.0, 1e9]), bearing=st.floats(0, 360), pause=PAUSE)
    def stale_goal(self, age, bearing, pause):
        lat, lon, alt = goal_at(self.rig.home, bearing, 30.0, self.rig.altitude(10.0))
        self._say(f"goal stamped {age:g} s ago")
        self._decide(Goal(lat, lon, alt), "goal", goal=(lat, lon, alt), stamp_age_s=age)
        time.sleep(pause)

    @rule(pause=PAUSE)
    def hold(self, pause):
        self._say("hold")
        self._decide(HOLD, "hold")
        time.sleep(pause)

    # -- the operator ----------------------------------------------------------------------------
    @rule(pause=PAUSE)
    def estop(self, pause):
        if self.bridge.door.in_flight:
            self.tap.counts["estop with a call in flight"] += 1
        self._say("e-stop")
        self.tap.mark("estop_trip")
        self.bridge.trip_estop("driver")
        time.sleep(pause)

    @rule(seconds=st.floats(0.05, 0.4), pause=PAUSE)
    def estop_with_a_late_hold(self, seconds, pause):
        """An e-stop whose hold waits `seconds` for a core, on its own thread and on the safety
        thread, as on a loaded machine (the PX4 soak: a take-control's mode change left 2 ms after a
        trip): the trip alone must stop motion."""
        bridge, hold = self.bridge, self.bridge._tick_unless_closed
        self.rig.stall(seconds)

        def late() -> None:
            time.sleep(seconds)
            hold()

        bridge._tick_unless_closed = late  # the trip's thread looks it up when it starts
        try:
            self.estop(0.0)
        finally:
            bridge._tick_unless_closed = hold
        time.sleep(pause)

    @rule(pause=PAUSE)
    def reset_estop(self, pause):
        t = time.monotonic()
        if self.bridge.reset_estop().ok:
            self.tap.add(Marker(t, "estop_reset"))
            self._say("e-stop reset")
        time.sleep(pause)

    @rule(pause=PAUSE)
    def take_control(self, pause):
        t = time.monotonic()
        if self.bridge.take_control():  # refused while the link is down: the operator cannot see the vehicle
            self.tap.add(Marker(t, "operator_take_control"))
            self._say("operator take-control")
        time.sleep(pause)

    @precondition(lambda self: getattr(self.rig, "rtl", True))
    @rule(pause=PAUSE)
    def return_to_launch(self, pause):
        self._say("rtl")
        self.bridge.return_to_launch()
        time.sleep(pause)

    @rule(pause=PAUSE)
    def seek_end(self, pause):
        self._say("seek end")
        self.tap.mark("session_end")
        self.bridge.end_seek()
        time.sleep(pause)

    # -- the vehicle and the machine ---------------------------------------------------------------
    @precondition(lambda self: self.rig.pilot)
    @rule(pause=PAUSE)
    def pilot_switch(self, pause):
        self._pilot_switch()
        time.sleep(pause)

    @precondition(lambda self: self.rig.pilot)
    @rule(bearing=st.floats(0, 360), metres=st.floats(5, 60))
    def pilot_takes_over_then_a_goal(self, bearing, metres):
        """A pilot who keeps the switch for one heartbeat (1 Hz) and then a goal: the vehicle's
        telemetry shows the pilot's mode, so a stack that takes it back is seen doing so (a switch
        followed at once by the stack's own hold is often never seen at all)."""
        self._pilot_switch()
        time.sleep(HEARTBEAT_S)
        self._goal(bearing, metres, 10.0, "inside")
        time.sleep(0.3)

    def _pilot_switch(self) -> None:
        if self.bridge.authority.state in (State.HOLDING, State.ESTOPPED):
            self.tap.counts["pilot switch during a hold"] += 1
        if self.bridge.authority.state is State.STARTING:
            self.tap.counts["pilot switch during the climb"] += 1
        self._say("pilot switch")
        self.rig.pilot_switch()

    @precondition(lambda self: self.rig.battery)
    @rule(pause=PAUSE)
    def low_battery(self, pause):
        self._say("low battery")
        self.rig.low_battery()
        time.sleep(pause)

    @precondition(lambda self: not self.dropped and self.rig.link_drop)
    @rule(pause=PAUSE)
    def drop_link(self, pause):
        self._say("link drop")
        self.rig.drop_link()
        self.tap.mark("link_lost")  # once the vehicle hears nothing: what it heard before is no loss's
        self.dropped = True
        self.dropped_at = time.monotonic()
        time.sleep(pause)

    @precondition(lambda self: not self.dropped and self.rig.link_drop)
    @rule(bearing=st.floats(0, 360), metres=st.floats(5, 60))
    def outage_under_a_goal(self, bearing, metres):
        """A goal flying, a whole outage, the link back and time to act: a stack that resumes the
        goal from before the loss is seen doing so (random draws rarely leave a goal pending across
        a return and then wait)."""
        self._goal(bearing, metres, 10.0, "inside")
        time.sleep(0.2)
        self.drop_link(pause=0.0)
        self.link_back(pause=0.6)

    @precondition(lambda self: self.dropped)
    @rule(pause=PAUSE)
    def link_back(self, pause):
        if isinstance(self.bridge.gate.latest, (Goal, Velocity)):  # decided before the loss: must not resume
            self.tap.counts["link return with a goal pending"] += 1
        self._outage()
        self.rig.restore_link()
        self.tap.mark("link_back")
        self._say("link back")
        self.dropped = False
        wait_for(lambda: self.bridge.connected and self.bridge.authority.state is not State.DISCONNECTED, 5.0)
        time.sleep(pause)

    def _outage(self) -> None:
        """A link drop is an outage of at least OUTAGE_S (longer than any link's loss threshold): a
        millisecond's dropout is one no vehicle link notices, and it is no loss to judge."""
        time.sleep(max(0.0, self.dropped_at + OUTAGE_S - time.monotonic()))

    @rule(seconds=st.floats(0.2, 1.0), pause=PAUSE)
    def stall_safety_thread(self, seconds, pause):
        self._say(f"safety thread stalls {seconds:.1f} s")
        self.rig.stall(seconds)
        time.sleep(pause)

    @rule(pause=PAUSE)
    def restart_bridge(self, pause):
        self._say("bridge restart")
        self.tap.mark("session_end")
        self.rig.restart()
        time.sleep(pause)

    @rule(seconds=st.floats(0.02, 0.8))
    def wait(self, seconds):
        time.sleep(seconds)

    def teardown(self):
        try:
            if self.dropped:  # the radio comes back and the bridge reconnects before the run ends
                self._outage()
                self.rig.restore_link()
                self.tap.mark("link_back")
                # ... and hears the vehicle again (fresh state): a session ending before that cannot be
                # held (the bridge does not act on a vehicle it last saw before the outage)
                wait_for(lambda: self.bridge.connected and self.bridge.authority.state is not State.DISCONNECTED
                         and self.bridge.status().code != LINK_ERROR, 10.0)
            self.tap.mark("session_end")
            self.rig.close()
            time.sleep(0.3)
        finally:
            self.rig.shutdown()
            self.tap.remove_folder()
        violations = judge(self.tap, self.rig.safety, getattr(self.rig, "monitor_settings", None))
        if type(self).record is not None:
            # the whole scenario's wire and the bridge's own steps for a soak's report: a cause may lie
            # seconds before the verdict
            steps = [f"  bridge: {s.before.value} -{s.event.value}-> {s.after.value}"
                     for s in self.bridge.authority.history[-16:]]
            type(self).record.append((self.log + around(self.tap, violations[0].t, before_s=60.0) + steps
                                      if violations else self.log,
                                      dict(self.tap.counts), violations))
        assert not violations, "\n".join([str(v) for v in violations] + ["driver:"] + self.log
                                          + ["what the vehicle saw around the first violation:"]
                                          + around(self.tap, violations[0].t if violations else 0.0))
