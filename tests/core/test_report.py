"""report.html / report.md from a hand-made benchmark folder."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cityseeker_ros.core.errors import DataError
from cityseeker_ros.core.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.paper_results import PAPER_CATEGORY_TCP50, PAPER_OVERALL, paper_row
from cityseeker_ros.core.report import fmt, select_trajectories, write_report

PAPER_TEXT = Path(__file__).resolve().parents[3] / "shared" / "papers" / "cityseeker.txt"
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
    assert not re.search(r"<(script|link|img|iframe)\b", text)
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
    assert "<script>" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; find water" in text
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
