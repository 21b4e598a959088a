"""report.html / report.md from a hand-made benchmark folder."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation.report.page import select_trajectories, write_report
from cityseeker_ros.core.evaluation.report.tables import fmt
from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.tasks.needs.paper_results import PAPER_CATEGORY_TCP50, PAPER_OVERALL, paper_row

PAPER_TEXT = Path(__file__).resolve().parents[4] / "shared" / "papers" / "cityseeker.txt"
LAT0, LON0, STEP = 22.28, 114.16, 0.00027  # about 30 m between grid nodes
SCRIPT = "<script>alert('x')</script> & find water"


def grid_graph(far_node: bool = True) -> StreetGraph:
    """A 3x3 street grid, plus (optionally) a far-away pair of nodes that plots must skip."""
    nodes = [Node(f"n{r}{c}", LAT0 + r * STEP, LON0 + c * STEP, 0.0, (0.0, 90.0, 180.0, 270.0))
             for r in range(3) for c in range(3)]
    pairs = [(f"n{r}{c}", f"n{r}{c + 1}") for r in range(3) for c in range(2)]
    pairs += [(f"n{r}{c}", f"n{r + 1}{c}") for r in range(2) for c in range(3)]
    if far_node:
        nodes += [Node("far1", LAT0 + 0.05, LON0, 0.0, (0.0,)), Node("far2", LAT0 + 0.0503, LON0, 0.0, (0.0,))]
        pairs.append(("far1", "far2"))
    edges = [Edge(a, b, 0.0, 30.0) for a, b in pairs] + [Edge(b, a, 180.0, 30.0) for a, b in pairs]
    return StreetGraph(nodes, edges, name="gridtown")


def metrics(success: bool, solvable: bool = True) -> dict:
    hit = 100.0 if success else 0.0
    return {"tce": hit, "tcp40": hit, "tcp50": hit, "tcp60": hit, "tcc": hit, "spl": hit * 0.8,
            "spd": 0.0 if success else 61.25, "dtw_per_ref_m": 12.5, "ndtw": 70.0, "osr": hit,
            "as": 4.0, "solvable": solvable}


EPISODES = [
    # id, category, difficulty, instruction, path, reference, end reason, success
    ("gridtown-0", "Basic POI", "easy", "I am thirsty", ["n00", "n01", "n02", "n12"],
     ["n00", "n01", "n11", "n12"], "stopped", True),
    ("gridtown-1", "Two-Stage", "medium", SCRIPT, ["n00", "n10", "n20"],
     ["n00", "n01", "n02", "n12", "n22"], "stopped", False),
    ("gridtown-2", "Brand-Specific", "hard", "a Starbucks", ["n22", "n21", "n20", "n10"],
     ["n22", "n12", "n02"], "budget_exhausted", False),
]


def episode_records() -> list[dict]:
    records = []
    for seed in (0, 1):
        for eid, cat, diff, text, path, ref, reason, ok in EPISODES:
            records.append({
                "episode_id": eid, "city": "gridtown", "category": cat, "difficulty": diff,
                "seed": seed, "instruction": text, "start": path[0], "target": ref[-1],
                "reference_path": ref, "path": path, "final_node": path[-1],
                "end_reason": reason, "steps": len(path) - 1, "solvable": True,
                "metrics": metrics(ok)})
    return records


def group(tcp50: float, n: int) -> dict:
    return {"tce": 10.0, "tcp40": tcp50, "tcp50": tcp50, "tcp60": tcp50, "tcc": 5.0, "spl": 4.25,
            "spd": 40.84, "dtw_per_ref_m": 12.5, "ndtw": 70.0, "osr": 50.0, "as": 3.5,
            "solvable": 77.26, "episodes": n}


def summary(synthetic: bool) -> dict:
    return {
        "overall": group(33.33, 3),
        "overall_sd": {"tce": 0.0, "tcp50": 1.5, "spd": 2.26, "solvable": 1.2},
        "by_category": {"Basic POI": group(100.0, 1), "Two-Stage": group(0.0, 1),
                        "Brand-Specific": group(0.0, 1)},
        "by_city": {"gridtown": group(33.33, 3)},
        "by_difficulty": {"hard": group(0.0, 1), "easy": group(100.0, 1), "medium": group(0.0, 1)},
        "config": {"data": "/data/<gridtown>", "dataset": "cityseeker", "policy": "random",
                   "seeds": [0, 1], "max_steps": 35, "limit": None, "package_version": "0.1.0",
                   "data_files": {"/data/gridtown/connections.json": "ab" * 32},
                   "synthetic": synthetic, "created": "2025-01-01T00:00:00+00:00",
                   "command": "cityseeker benchmark --policy random"},
    }


def make_out(tmp_path: Path, synthetic: bool = False, records: list[dict] | None = None) -> Path:
    out = tmp_path / "out"
    out.mkdir(parents=True)
    (out / "summary.json").write_text(json.dumps(summary(synthetic)))
    lines = [json.dumps(r) for r in (episode_records() if records is None else records)]
    (out / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return out


def loader(config: dict) -> dict[str, StreetGraph]:
    return {"gridtown": grid_graph()}


def html_rows(text: str) -> dict[str, list[str]]:
    """First cell -> all cells, for every table row in the HTML."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", text, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        if cells:
            rows.setdefault(cells[0], cells)
    return rows


def test_writes_both_files_self_contained(tmp_path):
    out = make_out(tmp_path)
    html_path, md_path = write_report(out, graph_loader=loader)
    assert (html_path, md_path) == (out / "report.html", out / "report.md")
    text = html_path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<style>" in text
    assert "http://" not in text and "https://" not in text
    assert not re.search(r"<(link|img|iframe)\b", text)
    # the only scripts are the step viewer's own: its data and its code, nothing fetched
    assert re.findall(r"<script\b[^>]*>", text) == ['<script type="application/json" id="sv-data">', "<script>"]
    assert "report.html" in md_path.read_text(encoding="utf-8")


def test_solvable_ceiling_is_prominent(tmp_path):
    out = make_out(tmp_path)
    html_path, md_path = write_report(out, graph_loader=loader)
    text = html_path.read_text(encoding="utf-8")
    assert re.search(r'class="ceiling".*?77\.3 ± 1\.2 %', text, flags=re.S)
    assert "No policy can exceed it on TCE" in text
    assert "**Solvable ceiling: 77.3 ± 1.2 %**" in md_path.read_text(encoding="utf-8")


def test_overall_shows_mean_and_sd(tmp_path):
    text = write_report(make_out(tmp_path), graph_loader=loader)[0].read_text(encoding="utf-8")
    rows = html_rows(text)
    assert rows["TCP50"][2] == "33.3 ± 1.5"
    assert rows["SPD"][2] == "40.8 ± 2.3"
    assert rows["TCC"][2] == "5.0"  # no sd given for TCC
    assert '<td class="txt">final node is the target</td>' in text  # text columns stay left
    assert '<td class="num">33.3 ± 1.5</td>' in text


def test_comparison_has_paper_rows_beside_ours(tmp_path):
    text = write_report(make_out(tmp_path), graph_loader=loader)[0].read_text(encoding="utf-8")
    rows = html_rows(text)
    header = re.search(r"<h2>Comparison with the paper</h2>\s*<table><thead><tr>(.*?)</tr>",
                       text, flags=re.S).group(1)
    columns = re.findall(r"<th[^>]*>(.*?)</th>", header)
    tcp50, tcp40, as_ = columns.index("TCP50 (%)"), columns.index("TCP40 (%)"), columns.index("AS (steps)")
    assert rows["Random Choice"][tcp50] == "13.9"
    assert rows["This run (random)"][tcp50] == "33.3"
    assert rows["Human"][tcp50] == "30.1" and rows["Human"][tcp40] == "" and rows["Human"][as_] == ""
    assert "dtw_per_ref_m (m)" in columns and "the paper&#x27;s column named" in text.lower()


def test_by_category_has_paper_tcp(tmp_path):
    html_path, md_path = write_report(make_out(tmp_path), graph_loader=loader)
    md = md_path.read_text(encoding="utf-8")
    assert "## By category" in md
    basic = next(line for line in md.splitlines() if line.startswith("| Basic POI |"))
    assert basic.rstrip(" |").endswith("16.6 | 13.3 | 31.8")
    two_stage = next(line for line in md.splitlines() if line.startswith("| Two-Stage |"))
    assert two_stage.endswith("|  |  |  |")
    # paper order first, Two-Stage last; difficulties easy, medium, hard
    cat_block = md.split("## By category")[1].split("##")[0]
    assert cat_block.index("Basic POI") < cat_block.index("Brand-Specific") < cat_block.index("Two-Stage")
    diff_block = md.split("## By difficulty")[1].split("##")[0]
    assert diff_block.index("| easy") < diff_block.index("| medium") < diff_block.index("| hard")
    assert "| stopped | 4 | 66.7 |" in md and "| budget_exhausted | 2 | 33.3 |" in md


def test_one_svg_per_selected_trajectory(tmp_path):
    out = make_out(tmp_path)
    text = write_report(out, graph_loader=loader)[0].read_text(encoding="utf-8")
    assert text.count('<svg class="traj"') == 3  # the 3 episodes of seed 0, not seed 1's
    assert " m</text>" in text and "agent path" in text  # scale bar and legend
    text = write_report(out, graph_loader=loader, max_trajectories=2)[0].read_text(encoding="utf-8")
    assert text.count('<svg class="traj"') == 2
    assert "gridtown-0" in text and "success" in text and "failure" in text


def test_selection_mixes_successes_and_failures():
    records = [r for r in episode_records() if r["seed"] == 0]
    picked = select_trajectories(records, 0, 2)
    assert [r["episode_id"] for r in picked] == ["gridtown-0", "gridtown-1"]
    assert select_trajectories(records, 1, 6) == []  # no seed-1 records in this list
    assert [r["episode_id"] for r in select_trajectories(records[::-1], 0, 6)] == \
        ["gridtown-0", "gridtown-1", "gridtown-2"]
    many = [{"episode_id": f"e{i:02d}", "seed": 0, "metrics": metrics(i % 2 == 0)} for i in range(20)]
    picked = select_trajectories(many, 0, 4)
    assert [_ok(r) for r in picked] == [True, False, True, False]  # two of each, by id
    assert [r["episode_id"] for r in picked] == ["e00", "e01", "e18", "e19"]  # spread, not the first four
    only_wins = [r for r in many if _ok(r)]
    assert len(select_trajectories(only_wins, 0, 4)) == 4  # fill up when one kind is missing


def _ok(record: dict) -> bool:
    return record["metrics"]["tcp50"] > 0


def test_plot_draws_only_streets_near_the_episode(tmp_path):
    text = write_report(make_out(tmp_path), graph_loader=loader)[0].read_text(encoding="utf-8")
    streets = re.findall(r'<path d="([^"]*)" stroke="#c9ccd1"', text)
    assert len(streets) == 3
    assert all(d.count("M") == 12 for d in streets)  # the grid's 12 streets, not the far one


def test_synthetic_banner_only_when_flagged(tmp_path):
    html_path, md_path = write_report(make_out(tmp_path / "a", synthetic=True), graph_loader=loader)
    assert 'class="banner"' in html_path.read_text(encoding="utf-8")
    assert "not the CitySeeker release" in md_path.read_text(encoding="utf-8")
    html_path, md_path = write_report(make_out(tmp_path / "b", synthetic=False), graph_loader=loader)
    assert 'class="banner"' not in html_path.read_text(encoding="utf-8")
    assert "not the CitySeeker release" not in md_path.read_text(encoding="utf-8")


def test_text_is_escaped(tmp_path):
    text = write_report(make_out(tmp_path), graph_loader=loader)[0].read_text(encoding="utf-8")
    assert "<script>alert" not in text and text.count("</script>") == 2
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; find water" in text
    assert SCRIPT in {e["instruction"] for e in viewer_json(text)["episodes"]}  # intact inside the JSON
    assert "/data/&lt;gridtown&gt;" in text


def test_without_graph_loader_still_writes_with_note(tmp_path):
    html_path, md_path = write_report(make_out(tmp_path), graph_loader=None)
    text = html_path.read_text(encoding="utf-8")
    assert md_path.exists()
    assert "Trajectory plots omitted" in text and "no street graph loader was given" in text
    assert '<svg class="traj"' not in text


def test_failing_graph_loader_is_reported_not_raised(tmp_path):
    def broken(config: dict) -> dict[str, StreetGraph]:
        raise DataError("/data/connections.json", "truncated file")

    text = write_report(make_out(tmp_path), graph_loader=broken)[0].read_text(encoding="utf-8")
    assert "Trajectory plots omitted" in text and "truncated file" in text


def test_record_coordinates_are_used_without_a_graph(tmp_path):
    graph = grid_graph()
    records = episode_records()
    for r in records:
        r["path_latlon"] = graph.latlon(r["path"]).tolist()
        r["reference_latlon"] = graph.latlon(r["reference_path"]).tolist()
    text = write_report(make_out(tmp_path, records=records))[0].read_text(encoding="utf-8")
    assert text.count('<svg class="traj"') == 3 and "Trajectory plots omitted" not in text


def test_atomic_write_leaves_no_temp_files(tmp_path, monkeypatch):
    out = make_out(tmp_path)
    write_report(out, graph_loader=loader)
    assert sorted(p.name for p in out.iterdir()) == \
        ["episodes.jsonl", "report.html", "report.md", "summary.json"]
    before = (out / "report.html").read_text(encoding="utf-8")

    def failing_replace(src, dst):
        raise OSError("disk full")

    (out / "summary.json").write_text(json.dumps(summary(synthetic=True)))
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_report(out, graph_loader=loader)
    assert (out / "report.html").read_text(encoding="utf-8") == before  # old report intact
    assert sorted(p.name for p in out.iterdir()) == \
        ["episodes.jsonl", "report.html", "report.md", "summary.json"]


def test_missing_or_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(DataError, match="summary.json"):
        write_report(tmp_path, graph_loader=loader)
    out = make_out(tmp_path)
    (out / "episodes.jsonl").write_text('{"episode_id": "a"}\nnot json\n')
    with pytest.raises(DataError, match=r"episodes.jsonl: record 2"):
        write_report(out, graph_loader=loader)


def test_numbers_are_formatted_consistently():
    assert [fmt(13.92), fmt(35), fmt(None), fmt(float("nan")), fmt(0.04), fmt(-0.01)] == \
        ["13.9", "35", "", "", "0.0", "0.0"]
    # half-up like the paper's own rounding: Table 9's 2.55 / 146.95 are Table 2's 2.6 / 147.0
    assert [fmt(2.55), fmt(146.95), fmt(2.25)] == ["2.6", "147.0", "2.3"]


def _paper_rows(table_fields: int) -> dict[str, list[float]]:
    """Rows of the paper text whose tab-separated fields are all numbers after the name."""
    rows = {}
    for line in PAPER_TEXT.read_text(encoding="utf-8").splitlines():
        fields = re.sub(r"</?[bu]>", "", line).replace("%", "").split("\t")
        if len(fields) != table_fields:
            continue
        try:
            rows.setdefault(fields[0], [float(f) for f in fields[1:]])
        except ValueError:
            continue
    return rows


@pytest.mark.skipif(not PAPER_TEXT.exists(), reason="paper text not in this checkout")
def test_paper_numbers_match_the_paper_text():
    table9 = _paper_rows(9)   # name, TCE, TCP40, TCP50, TCP60, TCC, SPD, nDTW, AS
    table2 = _paper_rows(14)  # name, TCE, TCP, TCC, SPL, SPD, nDTW, 7 subcategory TCPs
    for row in PAPER_OVERALL:
        t2 = table2[row.name]
        assert row.metrics["spl"] == t2[3]
        if row.name == "Human":
            assert [row.metrics[k] for k in ("tce", "tcp50", "tcc", "spd", "dtw_per_ref_m")] == \
                [t2[0], t2[1], t2[2], t2[4], t2[5]]
            continue
        keys = ("tce", "tcp40", "tcp50", "tcp60", "tcc", "spd", "dtw_per_ref_m", "as")
        assert [row.metrics[k] for k in keys] == table9[row.name]
    for name, per_category in PAPER_CATEGORY_TCP50.items():
        assert list(per_category.values()) == table2[name][6:]
    assert paper_row("Random Choice").metrics["tcp50"] == 13.92


# ---------------------------------------------------------------- failure analysis and step viewer

def viewer_json(text: str) -> dict:
    match = re.search(r'<script type="application/json" id="sv-data">(.*?)</script>', text, flags=re.S)
    assert match, "no step viewer data in the report"
    assert "<" not in match.group(1)  # nothing in the data can close the script element
    return json.loads(match.group(1))


def test_failure_tree_and_tag_table(tmp_path):
    html_path, md_path = write_report(make_out(tmp_path), graph_loader=loader)
    text, md = html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")
    assert '<section id="failures"><h2>Why episodes failed</h2>' in text and 'class="ftree"' in text
    assert "- All episodes: **6** (100.0% of all)" in md
    assert "  - Success (TCP50): **2** (33.3% of all)" in md
    assert "    - Stopped: **2** (33.3% of all, 50.0% of parent)" in md
    assert "      - premature stop: never within 50 m of the target: **2**" in md  # distances from the graph
    assert "    - Never stopped (step budget ran out): **2**" in md
    assert "| premature-stop | stopped, and no node of the path ever came within 50 m of the target | 2 | 33.3 |" in md
    failed = md.split("### Failed episodes")[1].split("## Drawn trajectories")[0]
    assert "| gridtown-1 | 0 | Two-Stage | stopped | premature-stop | 1 | 2 |" in failed
    assert "| gridtown-2 | 1 | Brand-Specific | budget_exhausted | never-stopped | 1 | 3 |" in failed
    assert "gridtown-0" not in failed  # successes are not listed
    hist = md.split("### Where failed episodes first left the reference")[1].split("###")[0]
    assert "| 1 | 4 | 100.0 |" in hist


def test_step_viewer_data_from_records_and_graph(tmp_path):
    text = write_report(make_out(tmp_path), graph_loader=loader)[0].read_text(encoding="utf-8")
    assert '<section id="step-viewer">' in text and "No thumbnails: the run had no view source." in text
    data = viewer_json(text)
    eps = data["episodes"]
    assert len(eps) == 6 and sorted(data["order"]) == list(range(6)) and data["images"] == []
    assert not eps[data["default"]]["success"]  # opens on a failure
    by_key = {(e["id"], e["seed"]): e for e in eps}
    two = by_key[("gridtown-1", 0)]
    assert [s["node"] for s in two["steps"]] == ["n00", "n10", "n20"]
    assert two["tags"] == ["premature-stop"] and two["departure"] == 1 and two["dist"][0] == 82
    # views from the graph: four walkable headings; moving north from n00 faces 0 degrees at n10
    assert two["steps"][1]["facing"] == 0 and [v[2] for v in two["steps"][1]["views"]] == \
        ["FRONT", "RIGHT", "BACK", "LEFT"]
    assert "idle" not in two["steps"][2]  # the stop is a decision too
    budget = by_key[("gridtown-2", 0)]
    assert budget["steps"][-1]["idle"] and "a" not in budget["steps"][-1]
    assert len(budget["map"]["path"]) == 4 and budget["map"]["city"] == "gridtown"
    assert data["streets"]["gridtown"].count("M") == 12  # once per city, only streets near the episodes


def test_step_viewer_without_graph_or_new_fields(tmp_path):
    records = episode_records()
    for r in records:
        del r["reference_path"], r["target"]
    records[1]["path"] = []  # nothing to show for this one
    records[2]["metrics"]["spd"] = float("nan")  # Python's json writes and reads NaN; JSON.parse would not
    html_path, md_path = write_report(make_out(tmp_path, records=records), graph_loader=None)
    data = viewer_json(html_path.read_text(encoding="utf-8"))
    assert len(data["episodes"]) == 5 and all(e["map"] is None and e["dist"] is None for e in data["episodes"])
    assert data["episodes"][1]["spd"] is None
    assert all(s["views"] == [] for e in data["episodes"] for s in e["steps"])
    md = md_path.read_text(encoding="utf-8")
    assert "- All episodes: **6**" in md and "| never left / no reference |" in md


def _vlm_record(base: dict) -> dict:
    """A record as the VLM policy under a BCR supervisor writes it, with every newer field."""
    graph = grid_graph()
    rec = dict(base, path=["n00", "n01", "n00", "n01", "n02"], actions=[1, "back", 1, 1, None],
               end_reason="stopped", reference_path=["n00", "n01", "n02"], target="n02", metrics=metrics(True))
    rec["path_latlon"] = graph.latlon(rec["path"]).tolist()
    rec["reference_latlon"] = graph.latlon(rec["reference_path"]).tolist()
    rec["target_latlon"] = graph.latlon(["n02"]).tolist()[0]
    views = [{"index": i, "heading": h, "relative": r} for i, (h, r) in enumerate([(0.0, "LEFT"), (90.0, "FRONT")])]
    rec["observed"] = [{"step": s, "node": rec["path"][s], "facing": 90.0, "views": views} for s in (0, 2, 3, 4)]
    reply = '{"thoughts": "</script><b>go</b>", "action": "B"}'
    rec["decisions"] = [{"step": s, "prompt_hash": f"h{s}", "raw": [reply * (400 if s == 3 else 1)],
                         "decision": {"action": a, "confidence": 0.7, "thoughts": "east", "observations": []},
                         "retries": 0, "fallback": s == 2, "parse_error": "bad JSON" if s == 2 else None,
                         "latency_s": {"total": 1.25}, "tokens": {"prompt": 10}}
                        for s, a in ((0, 1), (2, 1), (3, 1), (4, None))]
    rec["supervisor"] = {"strategies": [{"name": "B1", "oracle": False, "params": {"patience": 2}}],
                         "events": [{"step": 2, "round": 1, "strategy": "B1", "kind": "backtrack",
                                     "detail": {"to": "n00"}}],
                         "context": [{"step": 2, "backtrack": "You walked back to n00.", "surroundings": None,
                                      "history": None}],
                         "backtracks": 1}
    rec["rounds"] = [{"round": 0, "path": ["n00", "n10"], "actions": [2, None], "end_reason": "stopped",
                      "metrics": metrics(False)}]
    return rec


def test_step_viewer_shows_decisions_strategies_and_rounds(tmp_path):
    records = episode_records()
    records[0] = _vlm_record(records[0])
    text = write_report(make_out(tmp_path, records=records))[0].read_text(encoding="utf-8")
    assert text.count("</script>") == 2
    ep = next(e for e in viewer_json(text)["episodes"] if e["id"] == "gridtown-0" and e["seed"] == 0)
    assert ep["tags"] == ["success", "success-with-loop", "parse-error"]
    assert ep["departure"] == 2 and ep["map"]["city"] is None and len(ep["map"]["path"]) == 5  # from path_latlon
    assert [s.get("a") for s in ep["steps"]] == [1, "back", 1, 1, None]
    assert [bool(s.get("idle")) for s in ep["steps"]] == [False, True, False, False, False]  # from `observed`
    assert ep["steps"][0]["views"] == [[0, 0, "LEFT"], [1, 90, "FRONT"]]
    step2 = ep["steps"][2]
    assert step2["ev"] == [{"round": 1, "strategy": "B1", "kind": "backtrack", "detail": {"to": "n00"}}]
    assert step2["ctx"] == [{"backtrack": "You walked back to n00."}]
    d = step2["d"][0]
    assert d["fallback"] and d["parse_error"] == "bad JSON" and d["prompt_hash"] == "h2" and "tokens" not in d
    assert d["decision"]["thoughts"] == "east" and d["raw"][0].startswith('{"thoughts": "</script>')
    assert "more characters]" in ep["steps"][3]["d"][0]["raw"][0]  # long replies are clipped
    assert ep["strategies"][0]["name"] == "B1" and ep["backtracks"] == 1
    assert ep["rounds"] == [{"round": 0, "end_reason": "stopped", "steps": 1, "success": 0.0}]
    assert ep["success_label"] == "TCP50"


def _views_loader(config: dict) -> dict:
    """Every grid node's views are plain images whose colour encodes the heading."""
    import numpy as np

    from cityseeker_ros.core.sensing.views.source import ViewSource
    from cityseeker_ros.core.tasks.episode import World

    class Flat(ViewSource):
        name, synthetic = "flat", True

        def images(self, node, headings):
            return [np.full((48, 64, 3), int(h) % 256, dtype=np.uint8) for h in headings]

    return {"gridtown": (World("gridtown", grid_graph(), [], {}), Flat())}


def test_step_viewer_thumbnails_for_a_mix_of_episodes(tmp_path):
    out = make_out(tmp_path)
    cfg = summary(False)
    cfg["config"]["views"] = "flat"
    (out / "summary.json").write_text(json.dumps(cfg))
    data = viewer_json(write_report(out, graph_loader=loader, view_loader=_views_loader,
                                    max_step_thumbnails=3)[0].read_text(encoding="utf-8"))
    with_thumbs = [e for e in data["episodes"] if e["thumbs"]]
    assert len(with_thumbs) == 3
    assert {t for e in with_thumbs for t in e["tags"]} >= {"success", "premature-stop", "never-stopped"}
    assert [data["episodes"][k]["thumbs"] for k in data["order"]][:3] == [True] * 3  # listed first
    assert all(img.startswith("data:image/jpeg;base64,") for img in data["images"])
    for e in data["episodes"]:
        for s in e["steps"]:
            has = all(len(v) == 4 for v in s["views"])
            assert has == (e["thumbs"] and not s.get("idle")), (e["id"], s)
    # one image per (node, heading): a revisited node shares them
    assert len(data["images"]) == len({(s["node"], v[1]) for e in with_thumbs for s in e["steps"]
                                       if not s.get("idle") for v in s["views"]})


def test_report_of_a_real_benchmark_run(tiny_city, tmp_path):
    from cityseeker_ros.cli import main

    out = tmp_path / "run"
    assert main(["benchmark", "--data", str(tiny_city), "--policy", "random", "--seeds", "2", "--max-steps", "4",
                 "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    text = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Why episodes failed" in text and f"- All episodes: **{len(records)}**" in md
    data = viewer_json(text)
    assert len(data["episodes"]) == len(records) == 4
    for rec in records:
        ep = next(e for e in data["episodes"] if (e["id"], e["seed"]) == (rec["episode_id"], rec["seed"]))
        assert [s["node"] for s in ep["steps"]] == rec["path"]
        assert ep["map"] is not None and len(ep["map"]["path"]) == len(rec["path"])
        assert [s.get("a") for s in ep["steps"][:len(rec["actions"])]] == rec["actions"]


def test_report_of_a_real_run_with_rendered_views(monaco_dir, tmp_path):
    from cityseeker_ros.cli import main

    out = tmp_path / "run"
    assert main(["benchmark", "--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "3",
                 "--views", "rendered", "--view-param", "width=96", "--view-param", "height=72",
                 "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    data = viewer_json((out / "report.html").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(data["episodes"]) == len(records) == 2 and all(e["thumbs"] for e in data["episodes"])
    assert data["images"] and all(i.startswith("data:image/jpeg;base64,") for i in data["images"])
    for e in data["episodes"]:
        acted = [s for s in e["steps"] if not s.get("idle")]
        assert acted and all(len(v) == 4 for s in acted for v in s["views"])


def test_the_fallback_rate_of_seed_agents_counts_unusable_replies_not_steps():
    """prep once read 100% "fell back" while every action was readable: a step with one unreadable
    perception call counted as a fallen-back decision, under a footnote about a retry the seed
    agents never make."""
    from cityseeker_ros.core.evaluation.decisions import summarize_decisions
    from cityseeker_ros.core.evaluation.report.page import decisions_table

    def step(failed: bool) -> dict:
        calls = [{"role": "perception", "tokens_in": 10, "tokens_out": 2, "seconds": 0.1}
                 | ({"parse_error": "no JSON object"} if failed else {}),
                 {"role": "planning", "tokens_in": 30, "tokens_out": 4, "seconds": 0.2}]
        return {"agent": "prep", "calls": calls, "calls_n": 2, "tokens_in": 40, "tokens_out": 6, "seconds": 0.3,
                "fallbacks": int(failed), "fallback": failed, "decision": {"action": 0}}

    records = [{"episode_id": "e0", "end_reason": "stopped", "decisions": [step(True), step(True), step(False),
                                                                           step(True)]}]
    table = decisions_table({"decisions": summarize_decisions(records)})
    rows = dict(table.rows)
    assert rows["Unusable replies: calls whose reply could not be read (%)"] == "37.50 (3 of 8)"
    assert "Parse errors: fell back (%)" not in rows and "Retried once (%)" not in rows
    assert "retry" not in table.note.replace("do not retry", "") and "do not retry" in table.note


def test_the_vlm_policy_keeps_its_fallback_and_retry_rows():
    from cityseeker_ros.core.evaluation.decisions import summarize_decisions
    from cityseeker_ros.core.evaluation.report.page import decisions_table

    records = [{"episode_id": "e0", "end_reason": "stopped",
                "decisions": [{"raw": ["x", "y"], "retries": 1, "fallback": True, "problems": []},
                              {"raw": ["{}"], "retries": 0, "fallback": False, "problems": []}]}]
    table = decisions_table({"decisions": summarize_decisions(records)})
    rows = dict(table.rows)
    assert rows["Parse errors: fell back (%)"] == "50.00" and rows["Retried once (%)"] == "50.00"
    assert not any(k.startswith("Unusable replies") for k in rows)
    assert "even after one retry" in table.note
