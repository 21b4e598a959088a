"""Result writers never fail on text UTF-8 cannot encode, and what they write reads back clean."""
from __future__ import annotations

import json

from cityseeker_ros.core.infra.files import EpisodeLog, replace_folder, write_json_atomic, write_text_atomic

BAD = "reply \ud800 with \udfff lone surrogates"
CLEANED = "reply \ufffd with \ufffd lone surrogates"


def test_atomic_text_and_json_writers(tmp_path):
    write_text_atomic(tmp_path / "r.md", f"# {BAD}\n")
    assert (tmp_path / "r.md").read_text(encoding="utf-8") == f"# {CLEANED}\n"
    write_json_atomic(tmp_path / "s.json", {"config": {"command": BAD, BAD: [BAD]}})
    assert json.loads((tmp_path / "s.json").read_bytes()) == {"config": {"command": CLEANED, CLEANED: [CLEANED]}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md", "s.json"]  # no temporary left behind


def test_episode_log_appends_and_recovers_clean_records(tmp_path):
    path = tmp_path / "episodes.jsonl"
    with EpisodeLog(path) as log:
        log.append({"episode_id": "e\ud800", "decisions": [{"raw": [BAD]}]})
        assert log.records[0]["decisions"][0]["raw"] == [CLEANED]
    path.write_bytes(path.read_bytes() + b'{"episode_id": "old", "raw": "\\ud800"}\n')  # an older writer's line
    path.read_bytes().decode("utf-8")
    with EpisodeLog(path) as log:
        assert [r["episode_id"] for r in log.records] == ["e\ufffd", "old"]
        assert log.records[1]["raw"] == "\ufffd"


def test_replace_folder_writes_documents_with_bad_text(tmp_path):
    out = tmp_path / "world"
    replace_folder(out, {"world.json": {"name": BAD}}, lambda p: True, "a world")
    assert json.loads((out / "world.json").read_text(encoding="utf-8")) == {"name": CLEANED}
