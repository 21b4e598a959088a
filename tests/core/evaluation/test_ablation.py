"""`cityseeker ablate`: every policy x cell run for real on the tiny city, tabulated, resumable."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.evaluation.ablation import (
    AblationConfig,
    cells_from,
    parse_policy,
    policies_from,
    run_ablation,
)
from cityseeker_ros.core.infra.errors import ConfigError

CELLS = "baseline,B1,oracle:B2,oracle:B2+oracle:B3:confidence_trigger=false;k=2"


def _episode_files(out: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(out.glob("*/*/episodes.jsonl"))}


def test_parsing_of_cells_and_policies():
    cells = cells_from(CELLS)
    assert [c["label"] for c in cells] == ["baseline", "B1", "oracle:B2",
                                           "oracle:B2+oracle:B3:confidence_trigger=false;k=2"]
    assert cells[0]["strategies"] == [] and cells[1]["strategies"] == [{"name": "B1"}]
    assert cells[3]["strategies"] == [{"name": "B2", "oracle": True},
                                      {"name": "B3", "oracle": True, "confidence_trigger": False, "k": 2}]
    assert parse_policy("random") == {"label": "random", "policy": "random", "params": {}}
    assert parse_policy('small=vlm:backend=transformers,model=/m/x,backend_params={"a":1,"b":2}') == {
        "label": "small", "policy": "vlm",
        "params": {"backend": "transformers", "model": "/m/x", "backend_params": {"a": 1, "b": 2}}}
    assert policies_from([{"policy": "forward"}]) == [{"label": "forward", "policy": "forward", "params": {}}]
    assert cells_from([{"label": "no trigger", "strategies": ["oracle:B3:confidence_trigger=false,k=2"]}])[0][
        "strategies"] == [{"name": "B3", "oracle": True, "confidence_trigger": False, "k": 2}]


def test_ablation_tabulates_every_cell_and_resumes(tiny_city, tmp_path):
    config = AblationConfig(data=str(tiny_city), policies=policies_from(["random", "forward"]),
                            cells=cells_from(CELLS), seeds=[0, 1], limit=2, max_steps=6)
    out = tmp_path / "abl"
    doc = run_ablation(config, out, progress=False)

    saved = json.loads((out / "ablation.json").read_text())
    assert set(saved["results"]) == {"random", "forward"}
    for policy, cells in saved["results"].items():
        assert list(cells) == [c["label"] for c in config.cells]
        for label, entry in cells.items():
            summary = json.loads(Path(entry["summary"]).read_text())
            assert Path(entry["path"]).parent.name == policy
            assert entry["overall"] == summary["overall"] and entry["overall_sd"] == summary["overall_sd"]
            assert entry["overall"]["seeds"] == 2 and entry["overall"]["episodes"] == 2
            assert entry["oracle"] == ("oracle:" in label)
            assert entry["delta"]["tcp50"] == pytest.approx(entry["overall"]["tcp50"]
                                                            - cells["baseline"]["overall"]["tcp50"])
    assert saved["results"]["forward"]["baseline"]["delta"]["tcp50"] == 0.0
    assert doc["results"] == saved["results"]

    md, page = (out / "ablation.md").read_text(), (out / "ablation.html").read_text()
    for text in (md, page):
        assert "B2†" in text and "B2+B3:confidence_trigger=false;k=2†" in text and "B1†" not in text
        assert "† privileged information: reads the route to the goal" in text
    assert "| random | TCP50 (%) |" in md and "<style>" in page and "http" not in page

    # A second run reuses every finished cell; a lost cell (an interrupted ablation) is the only one run.
    before = _episode_files(out)
    assert len(before) == 8
    run_ablation(config, out, progress=False)
    assert _episode_files(out) == before
    lost = out / "forward" / "oracle_B2" / "episodes.jsonl"
    lost.unlink()
    run_ablation(config, out, progress=False)
    after = _episode_files(out)
    assert {p for p in before if before[p] != after[p]} == {lost}
    assert after[lost][0] == before[lost][0]  # deterministic: the same records again


def test_unmarked_oracle_strategy_fails_before_any_run(tiny_city, tmp_path):
    config = AblationConfig(data=str(tiny_city), policies=policies_from(["random"]),
                            cells=cells_from("baseline,B1+B2"), limit=1)
    with pytest.raises(ConfigError, match=r"cell 'B1\+B2': strategy B2 reads privileged information"):
        run_ablation(config, tmp_path / "abl", progress=False)
    assert not (tmp_path / "abl").exists()


def test_ablate_command(tiny_city, tmp_path, capsys):
    out = tmp_path / "abl"
    argv = ["ablate", "--data", str(tiny_city), "--policy", "random", "--policy", "fwd=forward",
            "--cells", "baseline,oracle:B2,R1", "--seeds", "2", "--limit", "2", "--max-steps", "5",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "| Policy | Metric | baseline | B2† | R1 | Seeds | Episodes |" in text
    assert "| fwd | TCP50 (%) |" in text and "R1, R2, C1 and C2 had no earlier rounds to recall (cells: R1)" in text
    assert f"wrote {out / 'ablation.json'}" in text
    assert (out / "fwd" / "oracle_B2" / "summary.json").is_file()

    grid = tmp_path / "grid.yaml"
    grid.write_text(f"data: {tiny_city}\nseeds: 1\nlimit: 1\nrounds: 2\nout: {tmp_path / 'g'}\n"
                    "policies: [{label: rnd, policy: random}]\n"
                    "cells: [baseline, {label: 'no trigger', strategies: ['oracle:B3:confidence_trigger=false']}]\n")
    assert main(["ablate", "--config", str(grid), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "no trigger†" in text and "no earlier rounds" not in text
    assert (tmp_path / "g" / "rnd" / "no_trigger" / "summary.json").is_file()

    assert main(["ablate", "--data", str(tiny_city), "--policy", "random", "--cells", "baseline,B2",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "cell 'B2': strategy B2 reads privileged information" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_the_ablation_sets_every_run_side_by_side_with_intervals_cost_and_loops(tiny_city, tmp_path, capsys):
    """ablate over agents x switches: every (policy, cell) is a row of the comparison, named by its
    policy label and cell, against the first policy's first cell, in the .md, the .html (with the
    cost-against-success plot) and on the terminal."""
    out = tmp_path / "abl"
    argv = ["ablate", "--data", str(tiny_city), "--policy", "random", "--policy", "fwd=forward",
            "--cells", "baseline,oracle:B2", "--seeds", "2", "--limit", "2", "--max-steps", "5",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    md, page = (out / "ablation.md").read_text(), (out / "ablation.html").read_text()
    names = ["random baseline", "random B2† [ORACLE]", "fwd baseline", "fwd B2† [ORACLE]"]
    for number, name in enumerate(names, start=1):
        for where in (text, md):
            assert re.search(rf"^\| {number} \| {re.escape(name)} \| 2 x 2 \| \d+\.\d \[\d+\.\d, \d+\.\d\] \|", where,
                             re.M), (name, where)
        assert f"#{number} {name}"[:28] in page
    assert "Loops % none/backtrack/cycle/persistent" in md and "<svg class=\"plot\"" in page
    assert page.count("<circle") == 4 and "http" not in page
