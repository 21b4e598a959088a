"""Static guard: only the gated link moves the vehicle.

A hold must reach every motion call (issue 12): a module with its own AirSim link that moves the
vehicle bypasses the bridge's motion door (the camera source once turned the vehicle in place
through its own link, after an e-stop). So the package's source is parsed and every reference to
something that moves the vehicle is checked against the one place allowed to make it:

1. AirSim RPCs that move, pose or arm the vehicle (as attributes or as method-name strings):
   only inside AirSimLink (core/vehicles/airsim/client.py) and BridgeLink (core/vehicles/airsim/link.py), and
   there only as the first argument of `self._move` (which asks the motion door right before it sends), the
   hold's own hover included. The bare wire names that are also plain words ("land", "takeoff", "hover",
   "goHome": states and modes elsewhere) count only inside the AirSim package;
2. the link's motion methods (set_pose, move_to...): only the motion modes and the bridge;
3. motion modes (go_to, turn_to, making one): only motion.py and the bridge's worker.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cityseeker_ros

PACKAGE = Path(cityseeker_ros.__file__).parent
RPC = re.compile(r"^(move[A-Z]\w*|rotate[A-Z]\w*|simSetVehiclePose|simSetKinematics|simSetObjectPose|armDisarm"
                 r"|enableApiControl|takeoff(Async)?|land(Async)?|hover(Async)?|goHome(Async)?|cancelLastTask)$")
HOLD_RPC = "hoverAsync"  # the hold itself: sent through self._move like every motion RPC
WORDS = re.compile(r"^(takeoff|land|hover|goHome)$")  # wire names that are also words: AirSim calls only in its package
AIRSIM = "core/vehicles/airsim/"
GATED = {("core/vehicles/airsim/client.py", "AirSimLink"), ("core/vehicles/airsim/link.py", "BridgeLink")}
LINK_MOTION = {"set_pose", "take_control", "move_to", "rotate_at_rate", "rotate_to", "move_by_velocity", "hover"}
MODE_MOTION = {"go_to", "turn_to"}
MODE_NAMES = {"make_motion_mode", "TeleportMotion", "FlyMotion"}
MOVERS = {"core/vehicles/airsim/motion.py", "core/vehicles/airsim/link.py"}
# The generic bridge calls VehicleLink methods (go_to, hold, land...), never AirSim; its own guard
# is tests/core/vehicles/test_motion_calls.py (every motion call through the bridge's door).
GENERIC_BRIDGE = "core/vehicles/bridge.py"
WRAPPERS = {"core/vehicles/monitor/taps.py"}  # a link wrapper: guarded by tests/core/vehicles/test_motion_calls.py


def calls_the_bridge(node: ast.Attribute) -> bool:
    """`self._bridge.take_control()`: the generic bridge's own method, which goes through its door."""
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
    return "bridge" in name.lower()


def violations(source: str, rel: str) -> list[str]:
    """Every reference in one module's source that moves the vehicle from where it may not."""
    if rel == GENERIC_BRIDGE or rel == "core/vehicles/link.py" or rel.startswith("core/vehicles/mavlink/"):
        return []  # not AirSim: "land"/"takeoff" there are MAVLink modes and link actions
    if rel in WRAPPERS:
        return []  # forwards the bridge's own calls, each from its method of the same name: test_motion_calls.py
    tree = ast.parse(source)
    found: list[str] = []
    owners: dict[ast.AST, str] = {}  # node -> enclosing class name
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            owners[node] = cls.name
    gated_args: set[int] = set()  # ids of string constants passed first to self._move
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
                and isinstance(node.args[0], ast.Constant) and node.func.attr == "_move"):
            gated_args.add(id(node.args[0]))
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and RPC.match(node.value) \
                and (rel.startswith(AIRSIM) or not WORDS.match(node.value)):
            if (rel, owners.get(node)) not in GATED:
                found.append(f"{where}: AirSim RPC {node.value!r} outside the gated link")
            elif id(node) not in gated_args:
                found.append(f"{where}: AirSim RPC {node.value!r} not sent through self._move")
        elif isinstance(node, ast.Attribute):
            if node.attr in LINK_MOTION:  # before RPC: BridgeLink.hover shares the wire name
                if rel not in MOVERS and not calls_the_bridge(node):
                    found.append(f"{where}: link motion .{node.attr} outside the motion modes and the bridge")
            elif RPC.match(node.attr):
                found.append(f"{where}: AirSim RPC .{node.attr} called directly, not through the gated link")
            elif rel not in MOVERS and (node.attr in MODE_MOTION or (
                    node.attr == "create" and isinstance(node.value, ast.Name) and node.value.id == "MOTION_MODES")):
                found.append(f"{where}: motion mode .{node.attr} outside the bridge")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in MODE_NAMES \
                and rel not in MOVERS:
            found.append(f"{where}: motion mode {node.id} made outside the bridge")
    return found


def package_modules() -> list[tuple[str, str]]:
    return [(p.relative_to(PACKAGE).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))]


def test_only_the_gated_link_moves_the_vehicle():
    modules = package_modules()
    assert len(modules) > 50 and "core/vehicles/airsim/views.py" in dict(modules)
    found = [v for rel, text in modules for v in violations(text, rel)]
    assert found == [], "\n".join(found)


def test_the_gated_link_does_send_the_motion_rpcs():
    """The guard looks where the motion calls really are: the allowed classes hold them."""
    text = dict(package_modules())
    sent = {n.value for rel in ("core/vehicles/airsim/client.py", "core/vehicles/airsim/link.py")
            for n in ast.walk(ast.parse(text[rel])) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and RPC.match(n.value)}
    assert {"simSetVehiclePose", "moveToPositionAsync", "rotateToYawAsync", "armDisarm", HOLD_RPC} <= sent


@pytest.mark.parametrize("code, rel, expected", [
    ("class Cam:\n    def look(self, c, p):\n        c.simSetVehiclePose(p, True)\n", "core/vehicles/airsim/views.py",
     "AirSim RPC .simSetVehiclePose called directly"),
    ("def turn(link):\n    link._call('rotateToYawAsync', 1.0)\n", "core/sensing/camera/world.py",
     "AirSim RPC 'rotateToYawAsync' outside the gated link"),
    ("class AirSimLink:\n    def go(self):\n        self._call('moveToPositionAsync', 1, 2, 3)\n",
     "core/vehicles/airsim/client.py", "not sent through self._move"),
    ("def f(link):\n    link.set_pose((0, 0, 0), 0.0)\n", "core/vehicles/airsim/views.py", "link motion .set_pose"),
    ("def f(mode, goal):\n    mode.go_to(goal)\n", "core/sensing/camera/world.py", "motion mode .go_to"),
    ("def f(link, anchor):\n    return make_motion_mode('teleport', link, anchor)\n", "core/vehicles/airsim/views.py",
     "motion mode make_motion_mode made"),
    ("def f(link):\n    hover = link.hover\n    hover()\n", "nodes/camera_ingest.py", "link motion .hover"),
    ("def f(link, a):\n    return MOTION_MODES.create('fly', link, a)\n", "core/sensing/camera/world.py",
     "motion mode .create"),
])
def test_the_guard_catches_each_kind_of_bypass(code, rel, expected):
    found = violations(code, rel)
    assert len(found) == 1 and expected in found[0], found


def test_the_guard_allows_the_gated_forms():
    link = "class AirSimLink:\n    def go(self):\n        self._move('moveToPositionAsync', 1, 2, 3)\n"
    hold = "class BridgeLink:\n    def hover(self):\n        self._move('hoverAsync')\n"
    assert violations(link, "core/vehicles/airsim/client.py") == []
    assert violations(hold, "core/vehicles/airsim/link.py") == []
    assert violations(hold, "core/vehicles/airsim/views.py") == [
        "core/vehicles/airsim/views.py:3: AirSim RPC 'hoverAsync' outside the gated link"]


def test_the_hover_is_gated_like_any_motion_rpc():
    """No exemption for the hold: a hover sent with _call would skip the lock and the door's check."""
    hold = "class BridgeLink:\n    def hover(self):\n        self._call('hoverAsync')\n"
    assert violations(hold, "core/vehicles/airsim/link.py") == [
        "core/vehicles/airsim/link.py:3: AirSim RPC 'hoverAsync' not sent through self._move"]


def test_words_that_are_wire_names_count_only_in_the_airsim_package():
    state = "LANDING = 'land'\nTAKEOFF = 'takeoff'\n"
    assert violations(state, "core/vehicles/authority.py") == []
    assert len(violations(state, "core/vehicles/airsim/motion.py")) == 2
    assert violations("X = 'landAsync'\n", "core/vehicles/authority.py") == [
        "core/vehicles/authority.py:1: AirSim RPC 'landAsync' outside the gated link"]
