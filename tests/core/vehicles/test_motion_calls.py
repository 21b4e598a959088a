"""Static guard: every call that moves a vehicle is reached only from the generic bridge, through
its motion door (which re-asks the safety gate right before the call).

For every link in the LINKS registry (read at test time, so a link that registers later is
covered): its motion methods (go_to, velocity, takeoff, land, return_to_launch, hold, arm,
terminate, take_control) may be called only (1) in core/vehicles/bridge.py, inside a lambda handed
to the door (`self.door.send(..., lambda: self.link.go_to(...))` or `self.door.hold(...)` with the
bound method), or (2) inside a link's own package, from within a method of the same motion name
(a link delegating to its lower layer). The links' private motion senders may only be called on
`self` inside their own package.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import cityseeker_ros
import cityseeker_ros.core.vehicles.airsim  # noqa: F401 - registers its link
import cityseeker_ros.core.vehicles.mavlink  # noqa: F401
import cityseeker_ros.core.vehicles.sim  # noqa: F401
from cityseeker_ros.core.vehicles.link import LINKS

PACKAGE = Path(cityseeker_ros.__file__).parent
MOTION = {"go_to", "velocity", "takeoff", "land", "return_to_launch", "hold", "arm", "terminate", "take_control"}
PRIVATE_SENDERS = {"_send_motion", "_send_setpoint", "_give_back", "_set_mode", "_move", "_walk_to", "_stand"}
BRIDGE = "core/vehicles/bridge.py"
# Not links: the door with its own hold.
NOT_LINKS = {"core/vehicles/motion_door.py"}
# Link wrappers (the flight monitor's tap): a motion call there forwards the bridge's own door call
# to the link it wraps, so it may stand only inside the wrapper's method of the same name.
WRAPPERS = {"core/vehicles/monitor/taps.py"}


def link_packages() -> dict[str, str]:
    """Registered link name -> its package folder (relative to the package), from the registry."""
    folders = {}
    for name in LINKS.names():
        module = importlib.import_module(LINKS.get(name).__module__)
        folders[name] = Path(inspect.getfile(module)).parent.relative_to(PACKAGE).as_posix()
    return folders


DELEGATES = {"turn_to", "_arm"}  # AirSim motion modes: the link's go_to reaches them


def _enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """Names of the functions around `node`."""
    names, up = set(), parents.get(node)
    while up is not None:
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(up.name)
        up = parents.get(up)
    return names


def violations(source: str, rel: str, packages: set[str]) -> list[str]:
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    in_link_package = any(rel.startswith(p + "/") for p in packages)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr, where = node.func.attr, f"{rel}:{node.lineno}"
        receiver = ast.unparse(node.func.value)
        enclosing = _enclosing(node, parents)
        if attr in PRIVATE_SENDERS:
            if not (in_link_package and (receiver == "self" or enclosing & MOTION)):
                found.append(f"{where}: private motion sender .{attr} called from outside its link")
            continue
        if attr not in MOTION or rel in NOT_LINKS or "bridge" in receiver or "door" in receiver \
                or (attr == "terminate" and rel == "ros/launcher.py"):  # the bridge's own API; a subprocess
            continue
        if rel == BRIDGE:
            up = parents.get(node)
            lam = up if isinstance(up, ast.Lambda) else None
            door = parents.get(lam) if lam is not None else None
            if not (isinstance(door, ast.Call) and isinstance(door.func, ast.Attribute) and door.func.attr == "send"):
                found.append(f"{where}: .{attr} in the bridge outside a door.send lambda")
            continue
        if in_link_package and enclosing & (MOTION | DELEGATES):
            continue
        if rel in WRAPPERS and attr in enclosing:
            continue
        found.append(f"{where}: vehicle motion .{attr} called outside the generic bridge")
    return found


def test_every_registered_link_is_covered():
    assert {"airsim", "walker"} <= set(LINKS.names())
    for name, folder in link_packages().items():
        assert (PACKAGE / folder).is_dir(), name


def test_motion_reaches_links_only_through_the_bridge_door():
    packages = set(link_packages().values())
    found = [v for path in sorted(PACKAGE.rglob("*.py"))
             for v in violations(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix(), packages)]
    assert found == [], "\n".join(found)


def test_the_bridge_stops_go_through_the_door_hold():
    """The stop actions are handed to door.hold as bound methods, never called bare."""
    tree = ast.parse((PACKAGE / BRIDGE).read_text(encoding="utf-8"))
    bare = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in {"hold", "land", "return_to_launch", "terminate"}
            and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "link"]
    assert bare == []
    holds = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "hold" and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "door"]
    assert len(holds) == 1


def test_the_guard_catches_a_bypass():
    packages = {"core/vehicles/sim"}
    wrapper = next(iter(WRAPPERS))
    assert not violations("class W:\n    def hold(self):\n        self.inner.hold()\n", wrapper, packages)
    assert violations("class W:\n    def hold(self):\n        self.inner.go_to(1, 2, 3)\n", wrapper, packages)
    assert violations("def f(link):\n    link.go_to(1, 2, 3)\n", "core/loop/x.py", packages)
    assert violations("def f(w):\n    w._walk_to(1, 2)\n", "core/vehicles/sim/field.py", packages)
    assert violations("class B:\n    def f(self):\n        self.link.hold()\n", BRIDGE, packages)
    gated = "class B:\n    def f(self):\n        self.door.send(1, a, lambda: self.link.go_to(1, 2, 3))\n"
    assert not violations(gated, BRIDGE, packages)
