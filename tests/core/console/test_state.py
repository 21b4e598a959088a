"""The console's one state record, built from events alone, on a stepped clock: stale after a
second without news, the path and the target placed in the map plane, a decision's views kept
for the page to fetch by the decision's number."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.console.events import (
    BatteryReport,
    CommandDone,
    DecisionMade,
    GoingTo,
    LinkReport,
    SafetyReport,
    SeekEnded,
    SeekProgress,
    SeekStarted,
    VehicleFix,
    ViewSeen,
    Violation,
)
from cityseeker_ros.core.console.state import KEPT, STALE_AFTER_S, Console
from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.streets.geodesy import destination

ORIGIN = (43.7372, 7.4231)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _console() -> tuple[Console, Clock]:
    clock = Clock()
    nodes = {"a": (0.0, 0.0), "b": (20.0, 0.0)}
    return Console(MapFrame(GeoOrigin(*ORIGIN)), nodes.get, clock), clock


def _decision(step: int, chosen: int = 1) -> DecisionMade:
    views = (ViewSeen(0, 0.0, "front", b"\xff\xd8jpeg0"), ViewSeen(1, 90.0, "right", b"\xff\xd8jpeg1"),
             ViewSeen(2, 180.0, "back"))
    return DecisionMade(f"vs{step}", "a", views, chosen, "move", "a cafe sign to the east", 1.25, step, 35)


def test_stale_before_any_news_fresh_after_one_and_stale_again_a_second_later():
    console, clock = _console()
    assert console.snapshot()["stale"]
    console.apply(SafetyReport(False, "ok", "holding", False))
    assert not console.snapshot()["stale"]
    clock.now += STALE_AFTER_S
    assert not console.snapshot()["stale"]  # exactly a second: not yet
    clock.now += 0.01
    assert console.snapshot()["stale"]
    console.apply(VehicleFix(*ORIGIN, 90.0))
    assert not console.snapshot()["stale"]


def test_the_vehicle_its_path_and_the_node_it_goes_to_in_the_map_plane():
    console, _ = _console()
    for east in (0.0, 5.0, 5.4, 10.0):  # 5.4: closer than the path's spacing to 5, it replaces that point
        console.apply(VehicleFix(*destination(*ORIGIN, 90.0, east), 90.0))
    console.apply(GoingTo("b"))
    snap = console.snapshot()
    assert snap["vehicle"]["x"] == pytest.approx(10.0, abs=0.05) and snap["vehicle"]["y"] == pytest.approx(0, abs=0.05)
    assert snap["vehicle"]["heading_deg"] == 90.0
    assert [round(x) for x, _ in snap["path"]] == [0, 5, 10]
    assert snap["going_to"] == {"node": "b", "x": 20.0, "y": 0.0}
    console.apply(GoingTo("not-a-node"))
    assert console.snapshot()["going_to"] is None
    console.apply(SeekStarted("I am thirsty"))  # a new Seek's path starts where the vehicle stands
    assert [round(x) for x, _ in console.snapshot()["path"]] == [10]


def test_a_fix_without_a_position_changes_nothing():
    console, _ = _console()
    with pytest.raises(ValueError):
        console.apply(VehicleFix(float("nan"), 7.0))
    assert console.snapshot()["vehicle"] is None and console.snapshot()["seq"] == 0


def test_a_decision_with_its_views_reason_latency_step_and_budget():
    console, _ = _console()
    console.apply(_decision(3))
    d = console.snapshot()["decision"]
    assert (d["seq"], d["chosen_index"], d["reason"], d["latency_s"], d["step"], d["max_steps"]) == \
        (1, 1, "a cafe sign to the east", 1.25, 3, 35)
    assert [(v["index"], v["heading_deg"], v["image"]) for v in d["views"]] == [(0, 0.0, True), (1, 90.0, True),
                                                                                 (2, 180.0, False)]
    assert console.view_image(1, 1) == (b"\xff\xd8jpeg1", "image/jpeg")
    assert console.view_image(1, 2) is None  # no image travelled with it
    console.apply(_decision(4))
    assert console.view_image(1, 1) is None and console.view_image(2, 0) == (b"\xff\xd8jpeg0", "image/jpeg")


def test_safety_link_battery_violations_commands_and_the_seek():
    console, _ = _console()
    console.apply(SafetyReport(False, "estop", "e-stop latched", True, True))
    console.apply(LinkReport("mavlink", "POSCTL"))
    console.apply(BatteryReport(0.42, float("nan")))
    for i in range(KEPT + 2):
        console.apply(Violation("max_speed", f"{5 + i} m/s"))
    console.apply(CommandDone("reset_estop", False, "the latch holds: press reset after the cause is gone"))
    console.apply(SeekStarted("the casino", "landmarks"))
    console.apply(SeekProgress("b", 1, 34, "the tower is north", 20.0))
    console.apply(SeekEnded("found", "stopped", "a cafe is here", "b", 1, 20.0))
    snap = console.snapshot()
    assert snap["safety"] == {"moving": False, "code": "estop", "reason": "e-stop latched", "estop": True,
                              "connected": True}
    assert snap["link"] == {"link": "mavlink", "mode": "POSCTL"}
    assert snap["battery"] == {"fraction": 0.42, "voltage_v": None}
    assert snap["violation_count"] == KEPT + 2 and len(snap["violations"]) == KEPT
    assert snap["violations"][-1] == {"rule": "max_speed", "detail": f"{5 + KEPT + 1} m/s"}
    assert snap["answers"] == [{"command": "reset_estop", "ok": False,
                                "message": "the latch holds: press reset after the cause is gone"}]
    assert snap["answer_count"] == 1
    assert snap["seek"]["state"] == "ended" and snap["seek"]["text"] == "the casino"
    assert snap["seek"]["step"] == 1 and snap["seek"]["result"]["outcome"] == "found"


def test_a_goal_refused_under_a_latched_estop_never_shows_as_running():
    """The Seek server accepts every goal and aborts the one it refuses: taken is not running."""
    console, _ = _console()
    console.apply(SafetyReport(False, "estop", "e-stop latched", True, True))
    console.apply(SeekStarted("I am thirsty"))
    assert console.snapshot()["seek"]["state"] == "starting"
    console.apply(SeekEnded("rejected", "estop", "the e-stop is latched: reset it first"))
    console.apply(SeekProgress("a", 3, 9, "a step of the goal before", 60.0))  # late: overtaken by the end
    seek = console.snapshot()["seek"]
    assert seek["state"] == "ended" and seek["result"]["outcome"] == "rejected" and seek["step"] == 0
    console.apply(SeekStarted("I am thirsty"))
    console.apply(SeekProgress("a", 1, 11, "the street north has shops", 20.0))
    assert console.snapshot()["seek"]["state"] == "running"  # a goal that took a step runs


def test_anything_else_is_refused():
    console, _ = _console()
    with pytest.raises(TypeError):
        console.apply("hold")  # type: ignore[arg-type]
