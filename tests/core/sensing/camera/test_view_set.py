"""One view set per node visit: on arrival, never twice in a visit, again after a new run or
after leaving the graph; failures leave the visit unserved."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera import FrameError, FrameSource, RunTask, ViewSetBuilder
from cityseeker_ros.core.sensing.camera.source import make_views
from cityseeker_ros.core.sensing.localisation import GraphLocaliser
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.episode import World
from tests.core.sensing.camera.conftest import tiny_graph


class CountingSource(FrameSource):
    """Gives one tiny image per heading and counts calls; can be told to fail."""

    name = "counting"

    def __init__(self) -> None:
        self.calls, self.fail = 0, False

    def views(self, loc):
        self.calls += 1
        if self.fail:
            raise FrameError("no frame yet")
        return make_views(loc, [np.zeros((2, 2, 3), np.uint8)] * len(loc.walkable))


def track(graph, nodes, step_m=2.0):
    """Fixes every step_m metres along the straight hops between `nodes`, heading along the hop."""
    from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg

    out = []
    for a, b in zip(nodes, nodes[1:]):
        na, nb = graph.nodes[a], graph.nodes[b]
        bearing = initial_bearing_deg(na.lat, na.lon, nb.lat, nb.lon)
        length = geodesic_m(na.lat, na.lon, nb.lat, nb.lon)
        out += [destination(na.lat, na.lon, bearing, d) for d in np.arange(0.0, length, step_m)]
    out.append((graph.nodes[nodes[-1]].lat, graph.nodes[nodes[-1]].lon))
    return out


def run(builder, localiser, fixes):
    built = []
    for i, (lat, lon) in enumerate(fixes):
        obs = builder.offer(localiser.update(lat, lon, None, float(i)))
        if obs is not None:
            built.append(obs)
    return built


def test_one_view_set_per_arrival_along_a_drive():
    graph = tiny_graph()
    source = CountingSource()
    builder = ViewSetBuilder(source, World("tinyville", graph, [], {}), max_steps=10)
    localiser = GraphLocaliser(graph, snap_radius_m=5.0, hysteresis_m=3.0, confirm_fixes=2)
    assert run(builder, localiser, track(graph, ["n0", "n1", "n2"])) == []  # no task yet: nothing
    builder.start(RunTask(("ep", 1), "ep", "I'm thirsty."))
    localiser.reset()
    built = run(builder, localiser, track(graph, ["n0", "n1", "n2", "n1", "m1"]))
    assert [o.node for o in built] == ["n0", "n1", "n2", "n1", "m1"]
    assert [o.step for o in built] == [0, 1, 2, 3, 4] and [o.steps_left for o in built] == [10, 9, 8, 7, 6]
    assert source.calls == 5 and built[0].episode_id == "ep" and built[1].instruction == "I'm thirsty."
    n1 = graph.nodes["n1"]
    assert (built[1].lat, built[1].lon) == (n1.lat, n1.lon) and built[1].facing == pytest.approx(90.0)
    assert len(built[1].views) == 3
    unplaced = ViewSetBuilder(CountingSource())  # no world: the vehicle's own position
    unplaced.start(RunTask(1, "ep", ""))
    obs = unplaced.offer(GraphLocaliser(graph).update(n1.lat, n1.lon + 1e-5, 90.0))
    assert (obs.lat, obs.lon) == (n1.lat, n1.lon + 1e-5)


def test_standing_still_with_jitter_is_one_visit_and_a_new_run_is_another():
    graph = tiny_graph()
    builder = ViewSetBuilder(CountingSource(), max_steps=10)
    builder.start(RunTask(1, "ep", ""))
    localiser = GraphLocaliser(graph)
    n1 = graph.nodes["n1"]
    rng = np.random.default_rng(0)
    jitter = [destination(n1.lat, n1.lon, float(rng.uniform(0, 360)), float(rng.uniform(0, 4))) for _ in range(40)]
    assert len(run(builder, localiser, jitter)) == 1
    assert builder.start(RunTask(1, "ep", "")) is False  # the same run again: nothing changes
    assert run(builder, localiser, jitter[:3]) == []
    assert builder.start(RunTask(2, "ep", "")) is True
    assert [o.step for o in run(builder, localiser, jitter[:3])] == [0]


def test_failures_retry_off_graph_starts_a_visit_and_the_budget_ends_it():
    graph = tiny_graph()
    source = CountingSource()
    builder = ViewSetBuilder(source, max_steps=2)
    builder.start(RunTask(1, "ep", ""))
    localiser = GraphLocaliser(graph)
    n0 = graph.nodes["n0"]
    source.fail = True
    with pytest.raises(FrameError):
        builder.offer(localiser.update(n0.lat, n0.lon, 90.0))
    source.fail = False
    assert builder.offer(localiser.update(n0.lat, n0.lon, 90.0)) is not None  # retried
    assert builder.offer(localiser.update(n0.lat, n0.lon, 90.0)) is None
    far = destination(n0.lat, n0.lon, 180.0, 200.0)
    assert builder.offer(localiser.update(*far, 90.0)) is None  # off-graph
    assert builder.offer(localiser.update(n0.lat, n0.lon, 90.0)).step == 1  # back: a new visit
    assert builder.offer(localiser.update(*far, 90.0)) is None
    assert builder.offer(localiser.update(n0.lat, n0.lon, 90.0)).step == 2  # the budget's last node
    assert builder.offer(localiser.update(*far, 90.0)) is None
    assert builder.offer(localiser.update(n0.lat, n0.lon, 90.0)) is None and builder.exhausted
    with pytest.raises(ConfigError, match="parameter max_steps"):
        ViewSetBuilder(source, max_steps=0)
