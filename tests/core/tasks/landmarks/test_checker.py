"""The independent checker: every stated relation, recomputed from the world's own data (graph
node coordinates and the scene's landmarks, with a Geod of its own), is within its stated
tolerance. It reads the words from the instruction text, not from the generator's numbers."""
from __future__ import annotations

import re

from pyproj import Geod

from cityseeker_ros.core.tasks.landmarks.relations import COMPASS

GEOD = Geod(ellps="WGS84")
CENTRE = {w: 45.0 * k for k, w in enumerate(COMPASS)}


def step_for(metres: float) -> float:
    return 10.0 if metres < 100 else 50.0 if metres < 1000 else 100.0


def stated(text: str, names: list[str]) -> list[tuple[int, str, str]]:
    """(distance, word, landmark name) of every "about D m WORD of NAME" in `text`."""
    words = "|".join(sorted(map(re.escape, COMPASS), key=len, reverse=True))
    pattern = rf"about (\d+) m ({words}) of ({'|'.join(map(re.escape, names))})"
    return [(int(d), w, n) for d, w, n in re.findall(pattern, text)]


def check(truth_from: tuple[float, float], truth_to: tuple[float, float], metres: int, word: str,
          tolerances: tuple[float, float]) -> list[str]:
    az, _, dist = GEOD.inv(truth_from[1], truth_from[0], truth_to[1], truth_to[0])
    off = (az - CENTRE[word] + 180.0) % 360.0 - 180.0
    problems = []
    if abs(off) > tolerances[0]:
        problems.append(f"{word}: the true bearing is {az % 360:.1f}")
    if abs(dist - metres) > tolerances[1]:
        problems.append(f"{metres} m: the true distance is {dist:.1f}")
    return problems


def test_every_stated_relation_is_true_within_its_stated_tolerance(grid_world, generated):
    graph, scene = grid_world
    by_name = {m.name: m for m in scene.landmarks}
    world = generated.document["world"]
    checked, problems = 0, []
    for task in generated.document["tasks"]:
        goal_text, _, landmark_text = task["instruction"].partition(" Landmarks: ")
        goal = graph.nodes[task["target"]]
        goal_rels = stated(goal_text, list(by_name))
        # The text and the structured details say the same thing (an agent reads either).
        details = task["details"]
        assert goal_rels == [(r["distance_m"], r["direction"], r["landmark_name"]) for r in details["goal_relations"]]
        for metres, word, name in goal_rels:
            m = by_name[name]
            assert task["target"] in m.visible_nodes, f"{task['id']}: {name} is not visible from the goal"
            tol = (world["direction_tolerance_deg"], step_for(metres) / 2.0)
            problems += [f"{task['id']} goal vs {name}: {p}" for p in check((m.lat, m.lon), (goal.lat, goal.lon),
                                                                            metres, word, tol)]
            checked += 1
        for clause in landmark_text.rstrip(".").split("; "):
            subject, _, rest = clause.partition(" is ")
            ((metres, word, name),) = stated(rest, list(by_name))
            a, b = by_name[name], by_name[subject]
            tol = (world["direction_tolerance_deg"], step_for(metres) / 2.0)
            problems += [f"{task['id']} {subject} vs {name}: {p}" for p in check((a.lat, a.lon), (b.lat, b.lon),
                                                                                 metres, word, tol)]
            checked += 1
        # The tolerances the details state are the ones checked here.
        for r in details["goal_relations"] + details["landmark_relations"]:
            assert (r["direction_tolerance_deg"], r["distance_tolerance_m"]) == (22.5, step_for(r["distance_m"]) / 2.0)
    assert checked > 100 and problems == []


def test_the_checker_catches_a_wrong_word(grid_world, generated):
    graph, scene = grid_world
    task = generated.document["tasks"][0]
    metres, word, name = stated(task["instruction"], [m.name for m in scene.landmarks])[0]
    m = next(m for m in scene.landmarks if m.name == name)
    goal = graph.nodes[task["target"]]
    opposite = COMPASS[(COMPASS.index(word) + 4) % 8]
    assert check((m.lat, m.lon), (goal.lat, goal.lon), metres, opposite, (22.5, 25.0))
    assert check((m.lat, m.lon), (goal.lat, goal.lon), metres + 200, word, (22.5, 25.0))
