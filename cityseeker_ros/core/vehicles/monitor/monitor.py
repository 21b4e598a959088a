"""The flight-rules monitor: fed a time-ordered stream of observations, it returns each violation of a
named rule (rules.RULES) as soon as it is found. Pure and deterministic: no threads, no I/O, no clock;
time comes from the observations, so a recorded stream replays to the same verdicts.

It knows nothing of the bridge and imports none of it (a test keeps it so): it judges what went on the
wire and what the vehicle said, with the safety file read by its own reader (limits.py).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.vehicles.monitor import rules as R
from cityseeker_ros.core.vehicles.monitor.geometry import distance_m, offset
from cityseeker_ros.core.vehicles.monitor.limits import FlightLimits
from cityseeker_ros.core.vehicles.monitor.observations import (
    ARM,
    ESTOP_RESET,
    ESTOP_TRIP,
    GOAL_COMMAND,
    HOLD,
    LINK_BACK,
    LINK_LOST,
    MODE,
    OPERATOR_TAKE_CONTROL,
    POSITION,
    RTL,
    SESSION_END,
    STOPS,
    TAKEOFF,
    TERMINATE,
    VELOCITY,
    VELOCITY_COMMAND,
    Decision,
    Marker,
    Observation,
    Reported,
    Sent,
    Violation,
)

# The modes an autopilot moves on to by itself after the stack asked for one (PX4: a takeoff ends in a
# loiter, a return ends in a landing; ArduCopter: RTL and SMART_RTL end in LAND).
DEFAULT_SUCCESSORS: Mapping[str, tuple[str, ...]] = {
    "AUTO.TAKEOFF": ("AUTO.LOITER",), "AUTO.RTL": ("AUTO.LAND",), "RTL": ("LAND",), "SMART_RTL": ("LAND",)}
DEFAULT_TAKEOFF_MODES = ("AUTO.TAKEOFF",)  # modes a takeoff command enters by itself (PX4)
VALID_VELOCITY_FRAMES = ("enu", "")
CARROT_SLACK_M = 1.0  # a carrot's next point may be this much farther on than its speed alone takes it


@dataclass(frozen=True)
class MonitorSettings:
    """The tolerances each rule states; docs/vehicles.md quotes these defaults."""

    settle_s: float = 1.5  # after the stack asks for a mode, the previous one may still be reported this long
    # A setpoint repeating the target already streaming may still leave this long after a marker or a foreign
    # mode (it was in flight when the stack learnt of it); a new target, a takeoff or a mode change may not.
    reaction_s: float = 0.3
    # Where the vehicle stamps what it saw on arrival, a message the stack sent (checked) just before an
    # event may be seen this long after it: the delivery time of the observed path. 0 for a wire tap.
    transport_s: float = 0.0
    speed_tolerance_fraction: float = 0.2  # speed limit * (1 + fraction) + margin ...
    speed_tolerance_m_s: float = 0.5
    speed_window_s: float = 1.0  # ... exceeded by every sample for this long
    min_position_dt_s: float = 0.2  # speed from two positions at least this far apart (when no velocity reported)
    lookahead_s: float = 1.0  # a velocity setpoint is judged where it takes the vehicle in this time
    fence_tolerance_m: float = 0.5  # MAVLink's 1e-7 degree rounding, the two geometries' differences
    altitude_tolerance_m: float = 0.5
    # A session's end is followed by a hold within this; shorter than PX4's offboard-loss time (COM_OF_LOSS_T,
    # 1 s), so that the autopilot's own failsafe is not taken for a pilot who holds the vehicle.
    end_within_s: float = 0.5
    max_stamp_age_s: float = 1.0  # a command stamped older than this (or further in the future) is stale
    max_stamp_future_s: float = 0.5
    goal_match_m: float = 1.0  # a position setpoint this close to a refused goal flies it
    successors: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_SUCCESSORS))
    takeoff_modes: tuple[str, ...] = DEFAULT_TAKEOFF_MODES


@dataclass(frozen=True)
class RuleStatus:
    name: str
    statement: str
    checked: bool
    why: str  # "" when checked in full; else what was missing or what to know about the verdict
    judged: int  # observations this rule looked at
    violations: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "statement": self.statement, "checked": self.checked, "why": self.why,
                "judged": self.judged, "violations": self.violations}


class FlightMonitor:
    """`feed(obs)` returns the violations `obs` reveals; `finish(t)` those only the end of the stream shows.

    passive: a wire tap that sees no decisions or markers; rules needing them are reported "not checked"
    (never passed), and pilot_wins reports every re-entry after a foreign mode, since an operator's
    take-control cannot be seen there.
    """

    def __init__(self, limits: FlightLimits, settings: Optional[MonitorSettings] = None, *,
                 passive: bool = False) -> None:
        self.limits = limits
        self.settings = settings or MonitorSettings()
        self.passive = passive
        self.violations: list[Violation] = []
        self.counts: Counter[str] = Counter()  # observations fed, by kind
        self.events: list[tuple[float, str]] = []  # what the monitor noticed that is not a violation
        self._judged: Counter[str] = Counter()
        self._said: set[tuple[Any, ...]] = set()
        self._last_key: dict[str, Any] = {}
        self._t = -math.inf
        self._finished = False
        # stops, decisions, markers
        self._stop_t: Optional[float] = None
        self._estop_t: Optional[float] = None  # set while the e-stop is tripped
        self._decision_t = -math.inf  # the latest goal or velocity decision that may be obeyed
        self._bad: list[tuple[Decision, str]] = []  # refused decisions not yet superseded
        self._in_force: Optional[Decision] = None  # the latest goal or velocity that may be obeyed
        self._link_lost_t: Optional[float] = None  # set while the link is lost
        self._link_back_t: Optional[float] = None
        self._end_t: Optional[float] = None
        self._end_due: Optional[float] = None
        self._battery: Optional[float] = None  # the charge the vehicle last reported, 0..1
        self._motion_t: Optional[float] = None
        self._streaming: Optional[Sent] = None  # the latest setpoint sent
        self._streaming_at: dict[str, Optional[Sent]] = {}  # what was streaming when a marker or a foreign mode came
        # modes
        self._mode: Optional[str] = None
        self._armed: Optional[bool] = None
        self._expected: set[str] = set()
        self._before: set[str] = set()  # what was expected before the latest request (valid while it settles)
        self._request_t: Optional[float] = None
        self._any_mode = False  # the latest request named no mode: the next change it settles into is ours
        self._pilot_t: Optional[float] = None
        self._pilot_mode = ""
        # where the vehicle is
        self._pos: Optional[tuple[float, float, float]] = None
        self._speed_pos: Optional[tuple[float, float, float, float]] = None  # t, lat, lon, alt
        self._over: dict[str, Optional[float]] = {"ground": None, "vertical": None}

    # -- feeding -------------------------------------------------------------------------------------
    def feed(self, obs: Observation) -> list[Violation]:
        if self._finished:
            raise ValueError("the monitor was finished; make a new one for a new stream")
        if obs.t < self._t:
            raise ValueError(f"observations must come in time order: t={obs.t} after t={self._t}")
        self._t = obs.t
        found: list[Violation] = []
        self._check_end_deadline(obs.t, found)
        if isinstance(obs, Sent):
            self.counts[f"sent {obs.kind}"] += 1
            self._sent(obs, found)
        elif isinstance(obs, Reported):
            self.counts["reported"] += 1
            self._reported(obs, found)
        elif isinstance(obs, (Decision, Marker)):
            if self.passive:
                raise ValueError("a passive monitor is fed no decisions or markers; make it with passive=False")
            self.counts[f"decision {obs.command}" if isinstance(obs, Decision) else f"marker {obs.kind}"] += 1
            self._decision(obs) if isinstance(obs, Decision) else self._marker(obs)
        else:
            raise TypeError(f"not an observation: {obs!r}")
        self.violations += found
        return found

    def feed_all(self, observations: Iterable[Observation]) -> list[Violation]:
        found: list[Violation] = []
        for obs in observations:
            found += self.feed(obs)
        return found

    def finish(self, t: float) -> list[Violation]:
        """The end of the stream at `t`: a session end whose hold is overdue by then is a violation."""
        found: list[Violation] = []
        if not self._finished:
            self._t = max(self._t, t)
            self._check_end_deadline(t, found)
            self._finished = True
        self.violations += found
        return found

    def _flag(self, rule: str, t: float, key: Any, detail: str, found: list[Violation], once: bool = True) -> None:
        """once: one violation per key (an episode: a stop, a pilot's switch); else one per run of equal keys
        (a setpoint stream repeating the same bad target)."""
        if once:
            if (rule, key) in self._said:
                return
            self._said.add((rule, key))
        else:
            if self._last_key.get(rule) == key:
                return
            self._last_key[rule] = key
        found.append(Violation(rule, t, detail))

    # -- what the stack sent -------------------------------------------------------------------------
    def _sent(self, s: Sent, found: list[Violation]) -> None:
        what = _describe(s)
        if s.moves:
            self._motion_rules(s, what, found)
            self._motion_t = s.t
        if s.kind in (POSITION, VELOCITY):
            self._streaming = s
        if s.kind in (POSITION, TAKEOFF, VELOCITY):
            self._fence(s, what, found)
        if s.kind in (POSITION, VELOCITY) and not self.passive:
            self._refused(s, what, found)
        if s.kind in STOPS:
            self._stop_t = s.t
            if self._end_due is not None and s.kind in self._ending_stops():
                self._end_due = None
        if s.kind in (MODE, *STOPS) and s.kind != TERMINATE:
            self._request(s.mode or None, s.t)
        if s.kind == TAKEOFF:
            self._expected |= self._closure(self.settings.takeoff_modes)

    def _motion_rules(self, s: Sent, what: str, found: list[Violation]) -> None:
        if not self.passive:
            self._judged[R.NO_MOTION_AFTER_HOLD] += 1
            if self._estop_t is not None:
                if not self._in_flight(s, "estop", self._estop_t, decided_before=True):
                    self._flag(R.NO_MOTION_AFTER_HOLD, s.t, ("estop", self._estop_t),
                               f"{what} sent while the e-stop tripped at t={self._estop_t:.2f} s is latched", found)
            elif self._stop_t is not None and self._decision_t <= self._stop_t:
                self._flag(R.NO_MOTION_AFTER_HOLD, s.t, ("stop", self._stop_t),
                           f"{what} sent after the stop at t={self._stop_t:.2f} s with no decision since", found)
            self._judged[R.NO_MOTION_AFTER_LINK_RETURN] += 1
            if self._link_lost_t is not None and not self._in_flight(s, "lost", self._link_lost_t):
                self._flag(R.NO_MOTION_AFTER_LINK_RETURN, s.t, ("lost", self._link_lost_t),
                           f"{what} sent while the link is lost (since t={self._link_lost_t:.2f} s)", found)
            elif self._link_back_t is not None and self._decision_t <= self._link_back_t:
                self._flag(R.NO_MOTION_AFTER_LINK_RETURN, s.t, ("back", self._link_back_t),
                           f"{what} sent after the link came back at t={self._link_back_t:.2f} s with no "
                           "decision since", found)
            self._judged[R.ENDS_IN_HOLD] += 1
            if (self._end_t is not None and self._decision_t <= self._end_t
                    and not self._in_flight(s, "end", self._end_t, self.settings.end_within_s, decided_before=True)):
                self._flag(R.ENDS_IN_HOLD, s.t, ("moved", self._end_t),
                           f"{what} sent after the session ended at t={self._end_t:.2f} s", found)
        if s.kind in (POSITION, VELOCITY, TAKEOFF, ARM, MODE):
            self._judged[R.PILOT_WINS] += 1
            if self._pilot_t is not None:
                if not self._in_flight(s, "pilot", self._pilot_t, decided_before=True):
                    kind = "setpoint" if s.kind in (POSITION, VELOCITY) else s.kind
                    self._flag(R.PILOT_WINS, s.t, (self._pilot_t, kind),
                               f"{what} sent after the vehicle went to {self._pilot_mode} by itself at "
                               f"t={self._pilot_t:.2f} s (a pilot or its failsafe) with no operator take-control"
                               + (" (passive: a take-control is not visible on the wire)" if self.passive else ""),
                               found)

    def _in_flight(self, s: Sent, event: str, since: float, window: Optional[float] = None,
                   decided_before: bool = False) -> bool:
        """A message already on its way when `event` came, within the window and with no stop sent
        since: a setpoint repeating the target that was streaming then, or (`decided_before`: an
        e-stop trip, a session end) anything carrying out a decision made within the window before
        the event, which the stack had taken up before it heard of the event. A motion after the
        stack's own stop is never in flight."""
        window = self.settings.reaction_s if window is None else window
        if s.t - since > window or (self._stop_t is not None and self._stop_t > since):
            return False
        if s.t - since <= self.settings.transport_s:
            return True  # sent before the event, seen after it
        if s.kind in (POSITION, VELOCITY) and _continues(s, self._streaming_at.get(event)):
            return True
        return decided_before and 0.0 <= since - self._decision_t <= self.settings.reaction_s

    def _fence(self, s: Sent, what: str, found: list[Violation]) -> None:
        lim, tol = self.limits, self.settings.fence_tolerance_m
        problems = []
        if s.kind == VELOCITY:
            if s.velocity_enu is None or self._pos is None:
                return
            lat, lon, alt = self._pos
            e, n, u = s.velocity_enu
            ahead_s = self.settings.lookahead_s
            lat1, lon1 = offset(lat, lon, e * ahead_s, n * ahead_s)
            alt1 = alt + u * ahead_s
            out0, out1 = lim.area.outside_by_m(lat, lon), lim.area.outside_by_m(lat1, lon1)
            if out1 > tol and out1 > out0 + 1e-3:  # out through the edge, or further out
                problems.append(f"its {ahead_s:g} s look-ahead is {out1:.1f} m outside the {lim.area.describe()}")
            if u > 0 and alt1 > lim.max_altitude_m + self.settings.altitude_tolerance_m:
                problems.append(f"climbs to {alt1:.1f} m, above the {lim.max_altitude_m:g} m ceiling")
            if u < 0 and alt1 < lim.min_altitude_m - self.settings.altitude_tolerance_m:
                problems.append(f"descends to {alt1:.1f} m, below the {lim.min_altitude_m:g} m floor")
            key: Any = ("velocity", tuple(round(v, 3) for v in s.velocity_enu))
        else:
            lat, lon = (s.lat, s.lon) if s.lat is not None and s.lon is not None else (
                (self._pos[0], self._pos[1]) if self._pos is not None else (None, None))
            if lat is not None and lon is not None:
                out = lim.area.outside_by_m(lat, lon)
                if out > tol:
                    problems.append(f"({lat:.7f}, {lon:.7f}) is {out:.1f} m outside the {lim.area.describe()}")
            if s.alt_m is not None:
                if s.alt_m > lim.max_altitude_m + self.settings.altitude_tolerance_m:
                    problems.append(f"{s.alt_m:.1f} m is above the {lim.max_altitude_m:g} m ceiling")
                if s.alt_m < lim.min_altitude_m - self.settings.altitude_tolerance_m:
                    problems.append(f"{s.alt_m:.1f} m is below the {lim.min_altitude_m:g} m floor")
            if lat is None and s.alt_m is None:
                return
            key = (s.kind, None if lat is None else round(lat, 7), None if lon is None else round(lon, 7),
                   None if s.alt_m is None else round(s.alt_m, 2))
        self._judged[R.INSIDE_FENCE] += 1
        if problems:
            self._flag(R.INSIDE_FENCE, s.t, key, f"{what}: " + "; ".join(problems), found, once=False)
        else:
            self._last_key.pop(R.INSIDE_FENCE, None)

    def _refused(self, s: Sent, what: str, found: list[Violation]) -> None:
        """A refused decision leaves the one in force flying (the bridge never hears it): a setpoint
        that decision explains is its own, even where it also matches the refused one (a velocity
        in force parallel to a refused one cannot be told from it on the wire)."""
        self._judged[R.REFUSES_BAD_FRAMES_AND_STALE_STAMPS] += 1
        if self._bad and self._flies(s, self._in_force):
            return
        for d, why in self._bad:
            if self._flies(s, d):
                target = "the velocity" if s.kind == VELOCITY else "to the goal"
                self._flag(R.REFUSES_BAD_FRAMES_AND_STALE_STAMPS, s.t, ("refused", d.t),
                           f"{what} flies {target} decided at t={d.t:.2f} s that must be refused ({why})", found)

    def _flies(self, s: Sent, d: Optional[Decision]) -> bool:
        """`s` is a setpoint for decision `d`: a velocity along it, or a position at its goal."""
        if d is None:
            return False
        if s.kind == VELOCITY:
            return d.velocity is not None and s.velocity_enu is not None and _along(s.velocity_enu, d.velocity)
        return (s.kind == POSITION and d.goal is not None and s.lat is not None and s.lon is not None
                and distance_m(s.lat, s.lon, d.goal[0], d.goal[1]) <= self.settings.goal_match_m)

    # -- modes ---------------------------------------------------------------------------------------
    def _closure(self, modes: Iterable[str]) -> set[str]:
        out, todo = set(), list(modes)
        while todo:
            m = todo.pop()
            if m not in out:
                out.add(m)
                todo += self.settings.successors.get(m, ())
        return out

    def _request(self, mode: Optional[str], t: float) -> None:
        self._before = self._expected_now(t)
        self._request_t = t
        self._any_mode = mode is None
        self._expected = self._closure([mode]) if mode else set()

    def _settling(self, t: float) -> bool:
        return self._request_t is not None and t - self._request_t <= self.settings.settle_s

    def _expected_now(self, t: float) -> set[str]:
        return self._expected | self._before if self._settling(t) else set(self._expected)

    # -- what the vehicle reported -------------------------------------------------------------------
    def _ending_stops(self) -> tuple[str, ...]:
        """The stops that end a session: a hold, the safety file's end action, and on a low battery
        (reported at or below rtl_battery_fraction) the return the bridge makes for it."""
        low = self.limits.rtl_battery_fraction
        battery_low = low is not None and self._battery is not None and self._battery <= low
        return (HOLD, self.limits.end_action, *((RTL,) if battery_low else ()))

    def _reported(self, r: Reported, found: list[Violation]) -> None:
        if r.armed is not None:
            self._armed = r.armed
        if r.battery is not None:
            self._battery = r.battery
        if r.mode is not None:
            self._mode_report(r.mode, r.t)
        if r.lat is not None and r.lon is not None:
            alt = r.alt_m if r.alt_m is not None else (self._pos[2] if self._pos is not None else 0.0)
            self._pos = (r.lat, r.lon, alt)
        self._speeds(r, found)

    def _mode_report(self, mode: str, t: float) -> None:
        previous, self._mode = self._mode, mode
        if previous is None:
            if self._request_t is None:
                self._expected = self._closure([mode])  # where the stream started: the baseline
            return
        if mode == previous:
            return
        if mode in self._expected:
            # the vehicle got where the stack last asked: the order of reports is the vehicle's, so a mode
            # shown or asked for before this one (an accepted pilot's among them) returns only by someone else
            self._expected, self._before = self._closure([mode]), set()
            return
        if mode in self._expected_now(t):
            return
        if self._any_mode and self._settling(t):
            self._expected, self._any_mode = self._closure([mode]), False
            return
        self._expected = self._closure([mode])
        if self._armed is False:
            return  # on the ground, a mode change is not a takeover
        self.events.append((t, f"the vehicle went from {previous} to {mode} by itself"))
        if self._pilot_t is None:
            self._pilot_t, self._pilot_mode = t, mode
            self._streaming_at["pilot"] = self._streaming
            self._end_due = None  # a pilot holds the vehicle: the session's hold is theirs now

    # -- speed ---------------------------------------------------------------------------------------
    def _speeds(self, r: Reported, found: list[Violation]) -> None:
        ground = vertical = None
        if r.velocity_enu is not None:
            e, n, u = r.velocity_enu
            ground, vertical = math.hypot(e, n), abs(u)
        elif r.lat is not None and r.lon is not None:
            alt = self._pos[2] if self._pos is not None else 0.0
            if self._speed_pos is None:
                self._speed_pos = (r.t, r.lat, r.lon, alt)
            elif r.t - self._speed_pos[0] >= self.settings.min_position_dt_s:
                t0, lat0, lon0, alt0 = self._speed_pos
                dt = r.t - t0
                ground, vertical = distance_m(lat0, lon0, r.lat, r.lon) / dt, abs(alt - alt0) / dt
                self._speed_pos = (r.t, r.lat, r.lon, alt)
        if ground is None or vertical is None:
            return
        if self._armed is False or self._pilot_t is not None:
            self._over = {"ground": None, "vertical": None}
            return
        self._judged[R.SPEED_LIMITS] += 1
        st = self.settings
        for axis, speed, limit in (("ground", ground, self.limits.max_speed_m_s),
                                   ("vertical", vertical, self.limits.max_vertical_speed_m_s)):
            allowed = limit * (1.0 + st.speed_tolerance_fraction) + st.speed_tolerance_m_s
            if speed <= allowed:
                self._over[axis] = None
                continue
            since = self._over[axis]
            if since is None:
                self._over[axis] = since = r.t
            if r.t - since >= st.speed_window_s:
                self._flag(R.SPEED_LIMITS, r.t, (axis, since),
                           f"{axis} speed {speed:.1f} m/s, over {allowed:.1f} m/s (limit {limit:g} m/s + "
                           f"{st.speed_tolerance_fraction:.0%} + {st.speed_tolerance_m_s:g} m/s) since "
                           f"t={since:.2f} s", found)

    # -- decisions and markers -----------------------------------------------------------------------
    def _decision(self, d: Decision) -> None:
        why = refusal(d, self.settings)
        if why:
            self._bad.append((d, why))
            self.events.append((d.t, f"decision {d.command} to be refused: {why}"))
            return
        self._bad.clear()
        self._in_force = d if d.command in (GOAL_COMMAND, VELOCITY_COMMAND) else None
        if self._in_force is not None:
            self._decision_t = d.t

    def _marker(self, m: Marker) -> None:
        if m.kind in (ESTOP_TRIP, LINK_LOST, SESSION_END):
            self._streaming_at[{ESTOP_TRIP: "estop", LINK_LOST: "lost", SESSION_END: "end"}[m.kind]] = self._streaming
        if m.kind == ESTOP_TRIP:
            self._estop_t = m.t
            self._stop_t = m.t
        elif m.kind == ESTOP_RESET:
            if self._estop_t is not None:
                self._stop_t = m.t  # a reset lets motion through only after a decision made after it
            self._estop_t = None
        elif m.kind == OPERATOR_TAKE_CONTROL:
            self._pilot_t = None  # the mode the vehicle is in is accepted; a mode the stack asked for still is
            self._expected |= self._closure([self._mode]) if self._mode else set()
        elif m.kind == LINK_LOST:
            if self._link_lost_t is None:
                self._link_lost_t = m.t
            self._end_due = None
        elif m.kind == LINK_BACK:
            self._link_lost_t = None
            self._link_back_t = m.t
        elif m.kind == SESSION_END:
            self._end_t = m.t
            holding = self._motion_t is None or (self._stop_t is not None and self._stop_t >= self._motion_t)
            exempt = holding or self._armed is False or self._pilot_t is not None or self._link_lost_t is not None
            self._judged[R.ENDS_IN_HOLD] += 1
            if not exempt and self._end_due is None:
                self._end_due = m.t + self.settings.end_within_s

    def _check_end_deadline(self, t: float, found: list[Violation]) -> None:
        if self._end_due is not None and t > self._end_due:
            end_t = self._end_due - self.settings.end_within_s
            self._flag(R.ENDS_IN_HOLD, self._end_due, ("no hold", end_t),
                       f"no hold{'' if self.limits.end_action == 'hold' else ' or ' + self.limits.end_action} "
                       f"sent within {self.settings.end_within_s:g} s of the session end at t={end_t:.2f} s", found)
            self._end_due = None

    # -- the verdict ---------------------------------------------------------------------------------
    def status(self) -> list[RuleStatus]:
        """Each rule: checked or not and why, how much it judged, how many violations."""
        counts = Counter(v.rule for v in self.violations)
        sent = sum(n for k, n in self.counts.items() if k.startswith("sent "))
        out = []
        for rule in R.RULES.values():
            checked, why = True, ""
            if self.passive and rule.needs:
                checked, why = False, f"needs {rule.needs}, which a passive wire tap cannot see"
            elif rule.name == R.SPEED_LIMITS and not self._judged[rule.name]:
                why = "nothing to judge: no armed vehicle's position or velocity was reported"
            elif rule.name != R.SPEED_LIMITS and not sent:
                why = "nothing to judge: no message from the stack was seen"
            elif rule.name == R.PILOT_WINS and self.passive:
                why = "an operator's take-control is not visible on the wire: every re-entry is reported"
            out.append(RuleStatus(rule.name, rule.statement, checked, why, self._judged[rule.name], counts[rule.name]))
        return out


def refusal(d: Decision, settings: MonitorSettings) -> str:
    """Why a decision must not be obeyed ("" if it may be): a velocity not in ENU, a stale or future stamp."""
    if d.command == VELOCITY_COMMAND and d.frame.strip().lower() not in VALID_VELOCITY_FRAMES:
        return f"velocity in frame {d.frame!r}, not ENU"
    if d.stamp is not None:
        age = d.t - d.stamp
        if not math.isfinite(age) or age > settings.max_stamp_age_s:
            return f"stamped {age:.2f} s before it was decided (more than {settings.max_stamp_age_s:g} s)"
        if age < -settings.max_stamp_future_s:
            return f"stamped {-age:.2f} s in the future (more than {settings.max_stamp_future_s:g} s)"
    return ""


def _along(sent: tuple[float, float, float], decided: tuple[float, float, float]) -> bool:
    """The sent velocity is the decided one, or a slowed copy of it (a gate may scale it down)."""
    ns, nd = math.sqrt(sum(v * v for v in sent)), math.sqrt(sum(v * v for v in decided))
    if ns < 1e-6 or nd < 1e-6:
        return False
    return sum(a * b for a, b in zip(sent, decided)) / (ns * nd) > 0.999 and ns <= nd + 1e-3


def _continues(s: Sent, streaming: Optional[Sent]) -> bool:
    """`s` is the next setpoint of the stream `streaming` was part of: the same target, or the next
    point of the same carrot (a goal flown at a speed: position targets advancing along a line, each
    with the carrot's velocity as feed-forward, no farther on than that velocity goes)."""
    if streaming is None or s.kind != streaming.kind:
        return False
    if _target(s) == _target(streaming):
        return True
    if s.kind != POSITION or s.velocity_enu is None or streaming.velocity_enu is None:
        return False
    if tuple(round(v, 3) for v in s.velocity_enu) != tuple(round(v, 3) for v in streaming.velocity_enu):
        return False
    if None in (s.lat, s.lon, streaming.lat, streaming.lon):
        return False
    flat = distance_m(streaming.lat, streaming.lon, s.lat, s.lon)
    rise = (s.alt_m or 0.0) - (streaming.alt_m or 0.0)
    speed = math.sqrt(sum(v * v for v in s.velocity_enu))
    return math.hypot(flat, rise) <= speed * max(0.0, s.t - streaming.t) + CARROT_SLACK_M


def _target(s: Sent) -> Any:
    """What a setpoint asks for, rounded to what survives the wire."""
    if s.kind == VELOCITY:
        return (VELOCITY, None if s.velocity_enu is None else tuple(round(v, 3) for v in s.velocity_enu))
    return (s.kind, *(None if v is None else round(v, 7) for v in (s.lat, s.lon)),
            None if s.alt_m is None else round(s.alt_m, 2))


def _describe(s: Sent) -> str:
    if s.kind == POSITION:
        return f"position setpoint ({_f(s.lat)}, {_f(s.lon)}, {_f(s.alt_m, 1)} m)"
    if s.kind == VELOCITY:
        v = s.velocity_enu
        return "velocity setpoint " + (f"E{v[0]:+.2f} N{v[1]:+.2f} U{v[2]:+.2f} m/s" if v else f"({s.frame})")
    if s.kind == TAKEOFF:
        return f"takeoff to {_f(s.alt_m, 1)} m"
    if s.kind == MODE:
        return f"mode change to {s.mode or '?'}"
    return s.kind


def _f(v: Optional[float], digits: int = 7) -> str:
    return "?" if v is None else f"{v:.{digits}f}"
