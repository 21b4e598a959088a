"""Who may move the vehicle: control authority as one explicit state machine.

Pure logic: no threads, no I/O, no clock. The vehicle bridge (core/vehicles/bridge.py) turns what
it sees into events, feeds them here, and carries out what comes back; before every message that
leaves the process it asks `may_send`, so a message the current state does not allow never goes out,
whatever thread decided it and whenever.

Why one table: control authority used to live in about ten flags spread over four threads, and each
fault a red team found was an interleaving nobody had imagined (a pilot's switch while holding, an
old goal resumed after a link loss). Here every (state, event) pair has one row in TRANSITIONS, the
messages each state may send are one row in MAY_SEND, and docs/vehicles.md prints both (a test
keeps it equal to this file).

Two rules the table alone cannot say, kept by `Authority`:

- **Only a decision made after the last stop moves the vehicle.** Every decision the bridge hears
  gets a number (`Decision.seq`); every stop (entering a state that does not move, or a stop sent
  again) records the newest number heard so far, and a DECISION event whose number is not newer is
  refused. So after a hold, an e-stop reset, a link return or a pilot's takeover, the goal that was
  flying before is never resumed by itself.
- **A stop is sent on every entry**, including a self-transition by SEEK_END or SHUTDOWN (a Seek
  ends in a commanded hold even when the vehicle already held).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional


class State(str, Enum):
    DISCONNECTED = "disconnected"  # no link (never connected, lost, or closed)
    HOLDING = "holding"  # connected, the stack holds the vehicle in the autopilot's hold
    STARTING = "starting"  # the flying start: arming and climbing to the takeoff height
    COMMANDING = "commanding"  # flying a decision (the autopilot's control mode: OFFBOARD, GUIDED)
    PILOT = "pilot"  # someone else changed the vehicle's mode: the stack sends nothing at all
    ESTOPPED = "estopped"  # the e-stop is latched: its action (hold or land) and nothing else
    RETURNING = "returning"  # return to launch on an operator's request (a newer decision may take over)
    LOW_BATTERY = "low_battery"  # return to launch on low battery (no decision takes over)
    LANDING = "landing"  # landing as the end action of a Seek or a shutdown
    TERMINATED = "terminated"  # motors cut on a confirmed request: final


class Event(str, Enum):
    CONNECT = "connect"  # the link is up (first connect or back after a loss)
    LINK_LOST = "link_lost"
    DECISION = "decision"  # a moving decision made after the last stop, flown from the air
    START = "start"  # the same on a vehicle that must arm and take off first
    STARTED = "started"  # the flying start reached its height
    START_FAILED = "start_failed"  # arming or the takeoff was refused
    HOLD = "hold"  # a hold decided, or the gate's verdict turned into a hold (watchdog, fence...)
    ESTOP = "estop"  # the e-stop latch is set
    ESTOP_RESET = "estop_reset"  # the latch was cleared
    FOREIGN_MODE = "foreign_mode"  # the vehicle's mode changed by anyone but the stack (pilot, failsafe)
    TAKE_CONTROL = "take_control"  # an operator gives the stack control back
    LOW_BATTERY = "low_battery"
    RTL = "rtl"  # an operator asked to return to launch
    SEEK_END = "seek_end"  # a Seek ended (any outcome) or was cancelled
    SHUTDOWN = "shutdown"  # the bridge closes
    TERMINATE = "terminate"  # a confirmed request to cut the motors


class Send(str, Enum):
    """Every kind of message the bridge may send to a link."""

    HOLD = "hold"
    LAND = "land"
    RTL = "rtl"
    TERMINATE = "terminate"
    ARM = "arm"
    TAKEOFF = "takeoff"
    TAKE_CONTROL = "take_control"  # enter the control mode (PX4 OFFBOARD, ArduPilot GUIDED)
    GO_TO = "go_to"
    VELOCITY = "velocity"
    KEEPALIVE = "keepalive"  # the owner's loop is alive (keeps a setpoint stream going)


S, E = State, Event
MOVING = frozenset({Send.ARM, Send.TAKEOFF, Send.TAKE_CONTROL, Send.GO_TO, Send.VELOCITY})

# The messages each state lets out. A moving state sends no stop (a stop is sent on entering the
# state that stops); a stop state's own action is in its row; HOLD in DISCONNECTED is the one try
# when the link is lost (the vehicle is likely still ours).
MAY_SEND: dict[State, frozenset[Send]] = {
    S.DISCONNECTED: frozenset({Send.HOLD}),
    S.HOLDING: frozenset({Send.HOLD, Send.KEEPALIVE}),
    S.STARTING: frozenset({Send.ARM, Send.TAKEOFF, Send.KEEPALIVE}),
    S.COMMANDING: frozenset({Send.TAKE_CONTROL, Send.GO_TO, Send.VELOCITY, Send.KEEPALIVE}),
    S.PILOT: frozenset(),
    S.ESTOPPED: frozenset({Send.HOLD, Send.LAND, Send.KEEPALIVE}),
    S.RETURNING: frozenset({Send.RTL, Send.HOLD, Send.KEEPALIVE}),  # HOLD: a link without RTL holds
    S.LOW_BATTERY: frozenset({Send.RTL, Send.HOLD, Send.KEEPALIVE}),
    S.LANDING: frozenset({Send.LAND, Send.HOLD, Send.KEEPALIVE}),  # HOLD: a link without land holds
    S.TERMINATED: frozenset({Send.TERMINATE}),
}

# What each state sends when entered (None: nothing). ESTOPPED sends the bridge's e-stop action
# (hold or land) and the end states of a Seek send the bridge's end action: see Authority.entry_send.
ON_ENTRY: dict[State, Optional[Send]] = {
    S.DISCONNECTED: Send.HOLD, S.HOLDING: Send.HOLD, S.STARTING: None, S.COMMANDING: None, S.PILOT: None,
    S.ESTOPPED: Send.HOLD, S.RETURNING: Send.RTL, S.LOW_BATTERY: Send.RTL, S.LANDING: Send.LAND,
    S.TERMINATED: Send.TERMINATE,
}

END = "end"  # placeholder target in the table: the bridge's end action (HOLDING, LANDING or RETURNING)

_AIR = (S.HOLDING, S.STARTING, S.COMMANDING, S.RETURNING, S.LANDING)  # connected, not stopped by anyone else
_CONNECTED = (*_AIR, S.PILOT, S.ESTOPPED, S.LOW_BATTERY)

# (state, event) -> next state. A pair that is not here leaves the state as it is and sends nothing.
TRANSITIONS: dict[tuple[State, Event], State | str] = {
    (S.DISCONNECTED, E.CONNECT): S.HOLDING,  # hold first, whatever it finds
    (S.DISCONNECTED, E.FOREIGN_MODE): S.PILOT,  # connected to a vehicle a pilot flies: send nothing
    (S.DISCONNECTED, E.ESTOP): S.ESTOPPED,  # connected under a latched e-stop: its action first
    **{(s, E.LINK_LOST): S.DISCONNECTED for s in _CONNECTED if s is not S.PILOT},
    (S.PILOT, E.LINK_LOST): S.PILOT,  # the pilot still has it; nothing to send either way
    **{(s, E.FOREIGN_MODE): S.PILOT for s in (*_AIR, S.ESTOPPED, S.LOW_BATTERY)},
    (S.PILOT, E.TAKE_CONTROL): S.HOLDING,  # the only way out of PILOT
    **{(s, E.ESTOP): S.ESTOPPED for s in (*_AIR, S.LOW_BATTERY)},  # not PILOT: the pilot keeps the sticks
    (S.ESTOPPED, E.ESTOP_RESET): S.HOLDING,
    **{(s, E.LOW_BATTERY): S.LOW_BATTERY for s in _AIR},
    **{(s, E.RTL): S.RETURNING for s in (S.HOLDING, S.STARTING, S.COMMANDING, S.LANDING)},
    **{(s, E.DECISION): S.COMMANDING for s in (S.HOLDING, S.COMMANDING, S.RETURNING, S.LANDING)},
    **{(s, E.START): S.STARTING for s in (S.HOLDING, S.RETURNING, S.LANDING)},
    (S.STARTING, E.DECISION): S.STARTING,  # a newer goal during the climb is flown after it
    (S.STARTING, E.STARTED): S.COMMANDING,
    (S.STARTING, E.START_FAILED): S.HOLDING,
    (S.COMMANDING, E.HOLD): S.HOLDING,
    (S.STARTING, E.HOLD): S.HOLDING,
    **{(s, E.SEEK_END): END for s in _AIR},
    **{(s, E.SHUTDOWN): END for s in _AIR},
    **{(s, E.TERMINATE): S.TERMINATED for s in (*_CONNECTED, S.DISCONNECTED)},
}

# Why an operator's RTL does nothing in a state whose row takes no RTL (RETURNING takes it as it is):
# the bridge answers the request with this instead of a yes. A test keeps the keys equal to the table.
RTL_REFUSALS: dict[State, str] = {
    S.DISCONNECTED: "the link is down: the stack cannot reach the vehicle",
    S.PILOT: "a pilot has the vehicle and the stack sends it nothing; take control back first",
    S.ESTOPPED: "the e-stop is latched and its action holds the vehicle; reset it first",
    S.LOW_BATTERY: "the vehicle is already returning to launch on low battery",
    S.TERMINATED: "the motors were cut",
}

END_STATES = {"hold": S.HOLDING, "land": S.LANDING, "rtl": S.RETURNING}
RESEND_EVENTS = frozenset({E.SEEK_END, E.SHUTDOWN})  # send the stop again even without a change of state


@dataclass(frozen=True)
class Step:
    """What one event did: the state before and after, and the stop to send now (None: none)."""

    event: Event
    before: State
    after: State
    send: Optional[Send]
    refused: Optional[str] = None  # why a DECISION or START did not move anything

    @property
    def changed(self) -> bool:
        return self.before is not self.after


class Authority:
    """The machine with its two counters. `estop_action` is "hold" or "land"; `end_action` what a
    Seek's end and a shutdown do: "hold", "land" or "rtl"."""

    def __init__(self, estop_action: str = "hold", end_action: str = "hold") -> None:
        if estop_action not in ("hold", "land"):
            raise ValueError(f"estop_action must be hold or land; got {estop_action!r}")
        if end_action not in END_STATES:
            raise ValueError(f"end_action must be one of {', '.join(END_STATES)}; got {end_action!r}")
        self.estop_action, self.end_action = estop_action, end_action
        self.state = S.DISCONNECTED
        self.heard = 0  # the newest decision number heard
        self.stop_seq = 0  # decisions numbered up to this one were made before the last stop
        self.history: list[Step] = []

    def hear(self) -> int:
        """A decision arrived: its number (for a later DECISION or START event)."""
        self.heard += 1
        return self.heard

    def is_fresh(self, seq: int) -> bool:
        """The decision numbered `seq` was made after the last stop."""
        return seq > self.stop_seq

    def stopped(self) -> None:
        """The stop reached the vehicle: every decision heard until now was made before it (one
        decided while the stop was on its way is older than the stop as the vehicle sees it)."""
        self.stop_seq = max(self.stop_seq, self.heard)

    def may_send(self, send: Send) -> bool:
        return send in MAY_SEND[self.state]

    def entry_send(self, state: State) -> Optional[Send]:
        send = ON_ENTRY[state]
        if state is S.ESTOPPED and self.estop_action == "land":
            return Send.LAND
        return send

    def handle(self, event: Event, seq: Optional[int] = None, asked_at: Optional[int] = None) -> Step:
        """Apply one event. DECISION and START carry the decision's number and are refused unless it
        was made after the last stop. An operator's request (take-control, e-stop reset, RTL, a
        Seek's end) carries `asked_at`, the newest decision number when it was asked: a decision sent
        right after the request counts as made after it, even if this event is applied later."""
        before = self.state
        if event in (E.DECISION, E.START) and (seq is None or not self.is_fresh(seq)):
            return self._record(Step(event, before, before, None, "the decision was made before the last stop"))
        target = TRANSITIONS.get((before, event), before)
        after = END_STATES[self.end_action] if target == END else target
        assert isinstance(after, State)
        send = None
        if after is not before or (event in RESEND_EVENTS and target == END):
            send = self.entry_send(after)
        if after not in (S.COMMANDING, S.STARTING) and (after is not before or send is not None):
            # a stop (the first connect's hold included): nothing decided before it moves the vehicle again
            self.stop_seq = max(self.stop_seq, self.heard if asked_at is None else asked_at)
        self.state = after
        return self._record(Step(event, before, after, send))

    def _record(self, step: Step) -> Step:
        if step.changed or step.send is not None:
            self.history.append(step)
            del self.history[:-200]
        return step


def table_markdown() -> str:
    """The transition table and what each state may send, as docs/vehicles.md prints them (a test
    keeps the two equal): one row per state, one column per event, a cell naming the next state
    ("·" where the event changes nothing)."""
    events = list(Event)
    lines = ["| state \\ event | " + " | ".join(e.value for e in events) + " |",
             "| --- | " + " | ".join("---" for _ in events) + " |"]
    for state in State:
        cells = []
        for event in events:
            target = TRANSITIONS.get((state, event))
            cells.append("·" if target is None else ("end action" if target == END else target.value))
        lines.append(f"| **{state.value}** | " + " | ".join(cells) + " |")
    lines += ["", "| state | may send | sends on entry |", "| --- | --- | --- |"]
    for state in State:
        sends = ", ".join(sorted(s.value for s in MAY_SEND[state])) or "nothing"
        entry = ON_ENTRY[state]
        said = "the e-stop action (hold or land)" if state is S.ESTOPPED else entry.value if entry else "—"
        lines.append(f"| {state.value} | {sends} | {said} |")
    return "\n".join(lines) + "\n"
