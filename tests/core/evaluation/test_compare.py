"""Runs side by side: success with a paired bootstrap interval (checked against the exact
bootstrap computed here), cost per step, loop classes and end reasons per row, rows named by
agent and switches, one reading line per agent, runs of several families compared family by
family, and refusals of runs that cannot be compared."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.evaluation.benchmark import Benchmark, run_summary
from cityseeker_ros.core.evaluation.compare import (
    WIDTH,
    Run,
    compare,
    comparison,
    interval_text,
    load_run_groups,
    load_runs,
    loops_table,
    measures_table,
    reading,
    readings,
    row_names,
    success_table,
)
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.report.comparison import comparison_html, comparison_markdown
from cityseeker_ros.core.evaluation.report.tables import fmt_mean_sd
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.family import get_family
from tests.core.agents.seeds.test_seed_pipelines import server  # noqa: F401 (the canned server fixture)
from tests.core.agents.vlm.canned_server import MODEL
from tests.core.evaluation.test_bootstrap import AGENT, REFERENCE, exact_distribution, quantile

NEEDS = get_family("needs")


# ---------------------------------------------------------------- fixed records


def record(episode: str, seed: int, tcp50: float, path: Optional[list[str]] = None, end: str = "stopped",
           decisions: Optional[list[dict]] = None) -> dict[str, Any]:
    metrics = dict.fromkeys(NEEDS.metric_keys, 0.0) | {"tcp50": tcp50}
    out = {"episode_id": episode, "city": "town", "category": "Basic POI", "difficulty": "easy", "seed": seed,
           "path": path or ["A", "B"], "end_reason": end, "steps": 1, "metrics": metrics}
    if decisions is not None:
        out["decisions"] = decisions
    return out


def write_run(out: Path, policy: str, records: list[dict], **config: Any) -> Path:
    """A benchmark output folder holding exactly these records (summary.json made as the benchmark makes it)."""
    out.mkdir(parents=True, exist_ok=True)
    seeds = sorted({r["seed"] for r in records})
    manifest = {"policy": policy, "family": "needs", "seeds": seeds, "data_files": {"/w/graph.json": "ab"}, **config}
    (out / "summary.json").write_text(json.dumps(run_summary(records, manifest)))
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def grid_records(values: list[list[float]], **kw: Any) -> list[dict]:
    return [record(f"e{e}", s, v, **kw) for e, row in enumerate(values) for s, v in enumerate(row)]


def test_the_interval_is_the_bootstrap_computed_by_hand_on_fixed_records(tmp_path):
    first = write_run(tmp_path / "navgpt", "navgpt", grid_records(REFERENCE))
    second = write_run(tmp_path / "prep", "prep", list(reversed(grid_records(AGENT))))  # record order is no matter
    rows = compare(load_runs([first, second])).rows
    exact = exact_distribution([REFERENCE, AGENT])  # every resample, enumerated here
    reference_means, agent_means = [r for r, _ in exact], [a for _, a in exact]
    differences = [a - r for r, a in exact]
    assert rows[0].success.estimate == pytest.approx(100.0 / 3) and rows[1].success.estimate == pytest.approx(50.0)
    assert (rows[0].success.low, rows[0].success.high) == pytest.approx(
        (quantile(reference_means, 0.025), quantile(reference_means, 0.975)))
    assert (rows[1].success.low, rows[1].success.high) == pytest.approx(
        (quantile(agent_means, 0.025), quantile(agent_means, 0.975)))
    assert (rows[1].difference.low, rows[1].difference.high) == pytest.approx(
        (quantile(differences, 0.025), quantile(differences, 0.975)))
    assert rows[0].difference is None
    table = success_table(compare(load_runs([first, second])))
    assert table.rows[1][3] == interval_text(rows[1].success) == "50.0 [16.7, 83.3]"
    assert table.rows[1][4] == "+16.7 [-66.7, +83.3]" and table.rows[0][4] == ""
    assert table.header[3] == "TCP50 (%) [95% CI]"


def test_a_missing_record_or_measure_is_refused_naming_it(tmp_path):
    whole = write_run(tmp_path / "a", "navgpt", grid_records(REFERENCE))
    partial = grid_records(AGENT)[:-1]
    gap = write_run(tmp_path / "b", "prep", partial, seeds=[0, 1])
    with pytest.raises(ConfigError, match=r"b/episodes.jsonl has no record of episode e2 seed 1; finish the run"):
        compare(load_runs([whole, gap]))
    broken = grid_records(AGENT)
    write_run(tmp_path / "c", "prep", broken)
    lines = (tmp_path / "c" / "episodes.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["metrics"]["tcp50"] = "high"
    (tmp_path / "c" / "episodes.jsonl").write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    with pytest.raises(ConfigError, match=r"episode e0 seed 0: field 'metrics.tcp50' missing or not a number"):
        compare(load_runs([whole, tmp_path / "c"]))


# ---------------------------------------------------------------- cost, loops, names, readings


def seed_step(calls: int, tokens_in: int, seconds: float, failed: int = 0) -> dict:
    made = [{"role": "planning", "tokens_in": tokens_in // calls, "tokens_out": 5, "seconds": seconds / calls}
            for _ in range(calls)]
    for call in made[:failed]:
        call["parse_error"] = "no JSON object"
    return {"agent": "prep", "calls": made, "calls_n": calls, "tokens_in": tokens_in, "tokens_out": 5 * calls,
            "seconds": seconds}


def test_each_row_shows_cost_per_step_loop_classes_and_end_reasons(tmp_path):
    swing = ["A", "B", "A", "B", "A", "B"]
    steps = [seed_step(3, 300, 3.0, failed=1), seed_step(1, 100, 1.0)]
    agent = [record("e0", 0, 100.0, ["A", "B", "A"], decisions=steps),
             record("e1", 0, 0.0, swing, end="budget_exhausted", decisions=[seed_step(2, 200, 2.0)])]
    baseline = [record("e0", 0, 0.0, ["A", "B", "C"]), record("e1", 0, 0.0, ["A", "B", "A", "C", "A"])]
    c = compare(load_runs([write_run(tmp_path / "p", "prep", agent), write_run(tmp_path / "r", "random", baseline)]))
    cost = c.rows[0].cost
    assert (cost.steps, cost.calls, cost.unusable) == (3, 6, 1) and cost.calls_per_step == pytest.approx(2.0)
    table = success_table(c)
    assert table.rows[0][5:] == ("2.00", "200/10", "2.00") and table.rows[1][5:] == ("", "", "")
    loops = loops_table(c)
    assert loops.rows[0][2:] == ("0/50/0/50", "1 budget_exhausted, 1 stopped")  # one backtrack, one persistent
    assert loops.rows[1][2:] == ("50/0/50/0", "2 stopped")  # back to A twice: a repeated cycle
    assert "VLN-MME Section 4.3" in loops.note


def run_of(policy: str, values: list[float], **config: Any) -> Run:
    records = tuple(record(f"e{i}", 0, v) for i, v in enumerate(values))
    manifest = {"policy": policy, "family": "needs", "seeds": [0], **config}
    return Run(Path("runs") / config.pop("folder", policy), run_summary(list(records), manifest), records)


def test_rows_are_named_by_agent_and_the_switches_the_run_set():
    runs = [run_of("prep", [0.0], policy_params={"backend": "openai", "model": "m", "reflection": False},
                   switches={"reflection": False, "planning": True}),
            run_of("navgpt", [0.0], policy_params={"cot": True, "fallback": "stop"}),
            run_of("random", [0.0], strategies=[{"name": "B1"}, {"name": "B2", "oracle": True}], rounds=2,
                   privileged=True),
            run_of("navgpt", [0.0], policy_params={"cot": True, "fallback": "stop"}, folder="again")]
    assert row_names(runs) == ["prep reflection=false", "navgpt cot=true fallback=stop (navgpt)",
                               "random with B1+oracle:B2 rounds=2 [ORACLE]", "navgpt cot=true fallback=stop (again)"]
    labelled = Run(Path("x"), runs[0].summary, runs[0].records, label="small baseline")
    assert row_names([labelled]) == ["small baseline"]


def test_every_agent_gets_a_reading_between_chance_and_the_ceiling():
    episodes = 20
    agent_a = [100.0] * 12 + [0.0] * 8
    agent_b = [100.0] * 2 + [0.0] * 18
    chance = [100.0] * 2 + [0.0] * 18
    lines = readings(compare([run_of("prep", agent_a), run_of("navgpt", agent_b), run_of("random", chance),
                              run_of("oracle", [100.0] * episodes)]))
    assert len(lines) == 2
    assert lines[0].startswith("Reading: prep reaches TCP50 60.0 [") and ", above chance (random 10.0; " in lines[0]
    assert "56% of the way to the ceiling (oracle 100.0)" in lines[0]
    assert lines[1].startswith("Reading: navgpt reaches TCP50 10.0 [") and ", at chance (random 10.0; difference " \
        "+0.0 [+0.0, +0.0])" in lines[1]


def test_without_chance_and_ceiling_each_agent_reads_against_the_first_row():
    a, b = run_of("navgpt", [100.0] * 10 + [0.0] * 10), run_of("prep", [100.0] * 10 + [0.0] * 10)
    c = run_of("mapgpt", [100.0] * 20)
    lines = readings(compare([a, b, c]))
    assert lines[0] == "Reading: navgpt reaches TCP50 50.0 [" + lines[0].split("[", 1)[1]
    assert "against" not in lines[0]
    assert lines[1].endswith("against navgpt +0.0 [+0.0, +0.0], not told apart on these episodes.")
    assert "against navgpt +50.0 [" in lines[2] and lines[2].endswith(", told apart.")
    assert reading([run_of("random", [0.0]), run_of("oracle", [100.0])]) is None  # no agent row


def test_a_perfect_reading_row_says_whether_seeing_or_deciding_failed():
    base = {"random": [0.0] * 20, "oracle": [100.0] * 20}
    seeing = readings(compare([run_of("ocr-embed", [100.0] * 2 + [0.0] * 18), run_of("random", base["random"]),
                               run_of("sign-oracle", [100.0] * 12 + [0.0] * 8), run_of("oracle", base["oracle"])]))
    assert seeing[0].endswith("perfect reading lifts the same decisions to 60.0: seeing fails first.")
    deciding = readings(compare([run_of("ocr-embed", [100.0] * 2 + [0.0] * 18), run_of("random", base["random"]),
                                 run_of("sign-oracle", [100.0] * 2 + [0.0] * 18), run_of("oracle", base["oracle"])]))
    assert deciding[0].endswith("perfect reading (sign-oracle) reaches 10.0: deciding fails, not seeing.")


def test_the_printed_tables_fit_in_100_columns_and_the_html_draws_cost_against_success(tmp_path):
    runs = [run_of(name, [100.0] * 5 + [0.0] * 9) for name in ("ocr-embed", "random", "sign-oracle", "oracle")]
    c = compare(runs)
    text = comparison_markdown([c])
    assert all(len(line) <= WIDTH for line in text.splitlines()), max(text.splitlines(), key=len)
    assert measures_table(c).header == ("Measure", "ocr-embed", "random", "sign-oracle", "oracle")
    many = compare([run_of(f"a-very-long-agent-name-{i}", [0.0]) for i in range(6)])
    assert measures_table(many).header[1:] == tuple(f"#{i}" for i in range(1, 7))  # names would not fit
    page = comparison_html([c])
    assert "<svg class=\"plot\"" in page and page.count("<circle") == 4 and "http" not in page.lower().replace(
        "http-equiv", "")
    assert "Cost against success: needs" in page and "TCP50 (%)" in page


# ---------------------------------------------------------------- real runs


def _run(data, out, **settings):
    Benchmark(BenchmarkConfig(data=str(data), **settings)).run(out, progress=False)
    return json.loads((out / "summary.json").read_text())


def test_the_measures_table_has_one_row_per_run_with_the_summary_figures(tiny_city, tmp_path):
    oracle = _run(tiny_city, tmp_path / "oracle", policy="oracle")
    random = _run(tiny_city, tmp_path / "random", policy="random", seeds=[0, 1, 2])
    table = comparison([tmp_path / "oracle", tmp_path / "random"])
    columns = NEEDS.headline
    assert [row[0] for row in table.rows] == ["oracle [ORACLE]", "random"]
    assert [row[1] for row in table.rows] == ["2 x 1", "2 x 3"]
    assert table.rows[1][2:2 + len(columns)] == tuple(fmt_mean_sd(random["overall"][k], random["overall_sd"][k])
                                                      for k in columns)
    assert table.rows[0][2] == fmt_mean_sd(oracle["overall"][columns[0]], None)
    assert table.rows[1][-1] == "6 budget_exhausted"


def test_runs_over_other_episodes_or_too_few_runs_are_refused(tiny_city, tmp_path):
    _run(tiny_city, tmp_path / "all", policy="random")
    _run(tiny_city, tmp_path / "one", policy="random", limit=1)
    with pytest.raises(ConfigError, match=r"ran different episodes \(1 in one only, e.g. tinytown-1\)"):
        comparison([tmp_path / "all", tmp_path / "one"])
    with pytest.raises(ConfigError, match="at least two run folders"):
        comparison([tmp_path / "all"])
    with pytest.raises(ConfigError, match="at least two run folders"):
        load_run_groups([tmp_path / "all"])


def test_runs_of_two_families_are_compared_family_by_family(tiny_city, grid_dir, tmp_path):
    for name, data, family in (("n-random", tiny_city, "needs"), ("l-random", grid_dir, "landmarks"),
                               ("n-oracle", tiny_city, "needs"), ("l-oracle", grid_dir, "landmarks")):
        _run(data, tmp_path / name, policy=name.split("-")[1], family=family, per_category=1)
    groups = load_run_groups([tmp_path / n for n in ("n-random", "l-random", "n-oracle", "l-oracle")])
    assert [[r.out.name for r in g] for g in groups] == [["n-random", "n-oracle"], ["l-random", "l-oracle"]]
    tables = [success_table(compare(g)) for g in groups]
    assert tables[0].header[3] == "TCP50 (%) [95% CI]" and tables[1].header[3] == "SR (%) [95% CI]"
    with pytest.raises(ConfigError, match=r"l-random is the only landmarks run; give two runs or more"):
        load_run_groups([tmp_path / "n-random", tmp_path / "n-oracle", tmp_path / "l-random"])
    with pytest.raises(ConfigError, match="compare runs of one task family"):
        load_runs([tmp_path / "n-random", tmp_path / "l-random"])


def test_compare_of_two_agents_prints_intervals_cost_and_loop_classes(tiny_city, server, tmp_path, capsys):  # noqa: F811
    served = {"backend": "openai", "model": MODEL, "backend_params": {"base_url": server.url, "timeout_s": 20}}
    for name, switches in (("navgpt", {"cot": True}), ("prep", {"reflection": False})):
        _run(tiny_city, tmp_path / name, policy=name, policy_params={**served, **switches}, seeds=[0, 1], max_steps=4)
    capsys.readouterr()
    html = tmp_path / "cmp.html"
    assert main(["compare", str(tmp_path / "navgpt"), str(tmp_path / "prep"), "--out", str(tmp_path / "cmp.md"),
                 "--html", str(html)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    first = next(line for line in lines if line.startswith("| 1 | navgpt cot=true |"))
    second = next(line for line in lines if line.startswith("| 2 | prep reflection=false |"))
    records = [json.loads(x) for x in (tmp_path / "prep" / "episodes.jsonl").read_text().splitlines()]
    steps = [d for r in records for d in r["decisions"]]
    calls = sum(len(d["calls"]) for d in steps) / len(steps)
    assert re.search(r"\| 2 x 2 \| \d+\.\d \[\d+\.\d, \d+\.\d\] \|  \| \d\.\d\d \| \d+/\d+ \| \d\.\d\d \|$", first)
    assert re.search(r"\| [+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] \| ", second) and f"| {calls:.2f} |" in second
    loop_rows = [line for line in lines if re.match(r"\| [12] \| .* \| \d+/\d+/\d+/\d+ \| \d+ \w+", line)]
    assert len(loop_rows) == 2
    assert any(line.startswith("Reading: prep reflection=false reaches TCP50 ") for line in lines)
    assert any(line.startswith("Reading: navgpt cot=true reaches TCP50 ") for line in lines)
    assert all(len(line) <= WIDTH for line in lines)
    assert (tmp_path / "cmp.md").read_text() in text and f"wrote {html}" in text
    assert "<svg class=\"plot\"" in html.read_text()
