"""Issue 30: every AirSim RPC that can move the vehicle leaves through one function, AirSimLink._move,
which asks the motion door's `motion_allowed()` and writes the request under the lock the hover
takes. test_motion_callers.py holds every motion RPC name to `self._move(...)`; this file holds
`_move` to its promise and closes the ways around it (a request written by another function, a
dynamic method name), then checks the lock and the check at run time on the protocol fake.
"""
from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

import cityseeker_ros
from cityseeker_ros.core.vehicles.motion_door import MotionDoor, MotionDropped
from tests.core.vehicles.airsim.vehicle_on_fake import ANCHOR, fake_vehicle

PACKAGE = Path(cityseeker_ros.__file__).parent
AIRSIM = PACKAGE / "core/vehicles/airsim"
SENDER, WRITER, READER = "_move", "_request", "_call"
WIRE = {"call", "call_async"}  # the msgpack-rpc client's senders


def _function(tree: ast.AST, name: str) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]


def _calls(node: ast.AST, attr: str) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == attr]


def _is_check(stmt: ast.stmt) -> bool:
    """`if not motion_allowed(): raise ...`"""
    return (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
            and isinstance(stmt.test.operand, ast.Call) and isinstance(stmt.test.operand.func, ast.Name)
            and stmt.test.operand.func.id == "motion_allowed" and isinstance(stmt.body[-1], ast.Raise))


def sender_violations(sources: dict[str, str]) -> list[str]:
    """What breaks the one-sender rule in the AirSim package's sources (file name -> text)."""
    found: list[str] = []
    movers = []
    for rel, text in sorted(sources.items()):
        tree = ast.parse(text)
        movers += [(rel, f) for f in _function(tree, SENDER)]
        enclosing = {id(node): func.name for func in ast.walk(tree)  # node -> the sender, writer or reader it is in
                     if isinstance(func, ast.FunctionDef) and func.name in (SENDER, WRITER, READER)
                     for node in ast.walk(func)}
        for call in _calls(tree, WRITER):
            if enclosing.get(id(call)) != SENDER:
                found.append(f"{rel}:{call.lineno}: {WRITER} called outside {SENDER}: it writes with no door check")
        for attr in WIRE:
            for call in _calls(tree, attr):
                if enclosing.get(id(call)) not in (WRITER, READER):
                    found.append(f"{rel}:{call.lineno}: .{attr} outside {WRITER}/{READER}: a request around {SENDER}")
        for call in _calls(tree, READER):
            if enclosing.get(id(call)) != READER and not (call.args and isinstance(call.args[0], ast.Constant)):
                found.append(f"{rel}:{call.lineno}: {READER} with a computed method name (it could be a motion RPC)")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and node.args and "_client" in ast.unparse(node.args[0]) \
                    and enclosing.get(id(node)) not in (WRITER, READER):
                found.append(f"{rel}:{node.lineno}: getattr on the client outside {WRITER}/{READER}")
    if len(movers) != 1:
        return found + [f"{SENDER} must be defined exactly once; found {len(movers)}"]
    rel, move = movers[0]
    locked = [w for w in ast.walk(move) if isinstance(w, ast.With)
              and any(ast.unparse(item.context_expr) == "self.motion_lock" for item in w.items)]
    if len(locked) != 1:
        return found + [f"{rel}:{move.lineno}: {SENDER} must write under `with self.motion_lock:`"]
    body = locked[0].body
    checks = [i for i, stmt in enumerate(body) if _is_check(stmt)]
    writes = [i for i, stmt in enumerate(body) if _calls(stmt, WRITER)]
    if not checks or len(writes) != 1 or writes[0] < checks[0]:
        found.append(f"{rel}:{move.lineno}: {SENDER} must ask `if not motion_allowed(): raise` before its one "
                     f"{WRITER}, both under the lock")
    if len(_calls(move, WRITER)) != 1:
        found.append(f"{rel}:{move.lineno}: {SENDER} writes outside its lock")
    return found


def airsim_sources() -> dict[str, str]:
    return {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in sorted(AIRSIM.rglob("*.py"))}


def test_every_motion_rpc_leaves_through_one_checked_locked_sender():
    sources = airsim_sources()
    assert "core/vehicles/airsim/client.py" in sources
    assert sender_violations(sources) == []


GOOD = '''
class AirSimLink:
    def _call(self, method, *args):
        return getattr(self._client, method)(*args).get()

    def _move(self, method, *args):
        with self.motion_lock:
            if not motion_allowed():
                raise MotionDropped(method)
            pending = self._request(method, *args)
        return pending.get()

    def _request(self, method, *args):
        return self._client.client.call_async(method, *args)
'''


@pytest.mark.parametrize("bad, expected", [
    (GOOD.replace("            if not motion_allowed():\n                raise MotionDropped(method)\n", ""),
     "must ask `if not motion_allowed(): raise` before"),
    (GOOD.replace("        with self.motion_lock:\n            if", "        if True:\n            if"),
     "must write under `with self.motion_lock:`"),
    (GOOD.replace("pending = self._request(method, *args)\n        return pending.get()",
                  "pass\n        return self._request(method, *args).get()"),
     "must ask `if not motion_allowed(): raise` before"),
    (GOOD + "\n    def hover(self):\n        self._request('hoverAsync')\n", "_request called outside _move"),
    (GOOD + "\n    def hover(self):\n        self._client.client.call_async('hover', '')\n", ".call_async outside"),
    (GOOD + "\n    def turn(self, name):\n        self._call(name, 1.0)\n", "computed method name"),
    (GOOD + "\n    def turn(self, name):\n        getattr(self._client, name)(1.0)\n", "getattr on the client"),
    (GOOD + GOOD.replace("class AirSimLink", "class Other"), "defined exactly once"),
])
def test_the_guard_catches_each_way_around_the_sender(bad, expected):
    assert sender_violations({"core/vehicles/airsim/client.py": GOOD}) == []
    found = sender_violations({"core/vehicles/airsim/client.py": bad})
    assert any(expected in line for line in found), found


# -- at run time, on the protocol fake -------------------------------------------------------------

def _on_thread(call) -> threading.Thread:
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


def test_a_superseded_call_sends_nothing_and_a_current_one_does():
    with fake_vehicle(task_s=0.0) as vehicle:
        door = MotionDoor()
        epoch = door.open()
        door.send(epoch, lambda: True, lambda: vehicle.link.velocity(1.0, 0.0))
        assert [c.name for c in vehicle.motion_seen()] == ["moveByVelocity"]

        def superseded() -> None:
            door.open()  # a hold (or a newer job) while this call runs: its next RPC is refused
            vehicle.link.velocity(1.0, 0.0)

        with pytest.raises(MotionDropped, match="moveByVelocityAsync not sent"):
            door.send(door.open(), lambda: True, superseded)
        time.sleep(0.05)
        assert [c.name for c in vehicle.motion_seen()] == ["moveByVelocity"]


def test_a_hold_outside_any_door_call_is_never_refused():
    with fake_vehicle(task_s=0.0) as vehicle:
        vehicle.link.hold()
        assert [c.name for c in vehicle.seen() if c.name == "hover"] == ["hover"]


def test_every_connection_shares_one_lock_and_the_hover_takes_it():
    """The motion thread's, this thread's and the hold thread's connections are different objects
    on different threads; the lock that orders a motion write before a hover is one."""
    with fake_vehicle(task_s=0.0) as vehicle:
        link = vehicle.link
        _on_thread(lambda: link.velocity(0.5, 0.0)).join(5.0)  # the "motion" connection of another thread
        link.state()  # this thread's "control" connection (made by the connect, as the hold thread's)
        locks = {id(conn.motion_lock) for conn in link._all}
        assert len(link._all) == 3 and len(locks) == 1
        lock = link._all[0].motion_lock
        with lock:  # a motion write under way: the hover waits for it
            hold = _on_thread(link.hold)
            time.sleep(0.1)
            assert "hover" not in [c.name for c in vehicle.seen()]
        hold.join(5.0)
        assert "hover" in [c.name for c in vehicle.seen()]


def test_a_goal_stopped_between_its_calls_sends_none_of_the_rest():
    """The door's check is asked before each RPC of one go_to: a hold after the move stops the turn."""
    with fake_vehicle(task_s=0.05) as vehicle:
        door = MotionDoor()
        epoch = door.open()
        lat, lon = ANCHOR.lat + 0.0002, ANCHOR.lon
        going = _on_thread(lambda: _quietly(lambda: door.send(epoch, lambda: True,
                                                               lambda: vehicle.link.go_to(lat, lon, 5.0, 90.0))))
        assert _wait(lambda: vehicle.fake.timed("moveToPosition"))
        held = time.monotonic()
        door.hold(vehicle.link.hold)  # cancels the move; the turn after it is never sent
        going.join(5.0)
        assert [c.name for c in vehicle.seen(after=held) if c.name != "hover" and c.name.startswith(("move", "rot"))] \
            == []
        assert door.interrupted == 1


def _quietly(call) -> None:
    try:
        call()
    except MotionDropped:
        pass


def _wait(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not condition():
        time.sleep(0.002)
    return bool(condition())
