"""The SQLite memory never fails on text UTF-8 cannot encode (a model's rationale, an id from
the data): it stores U+FFFD in place of each lone surrogate, and reads by the same key find it."""
from __future__ import annotations

from cityseeker_ros.core.agents.memory.sqlite_store import SqliteMemoryStore
from cityseeker_ros.core.agents.memory.store import DecisionMemory, EdgeMemory, MemoryKey, RoundMemory, Visit


def test_every_write_and_read_takes_lone_surrogates(tmp_path):
    store = SqliteMemoryStore(tmp_path / "memory.sqlite")
    key = MemoryKey("run", "episode-\ud800", 0)
    try:
        store.begin_round(key, 0)
        store.add_visit(key, Visit(round=0, step=0, node="n\udfff", lat=1.0, lon=2.0, facing=90.0))
        store.add_decision(key, DecisionMemory(round=0, step=0, node="n\udfff", action=1, heading=90.0,
                                               relative="left\ud800", confidence=0.5,
                                               rationale="the sign says \ud83d\ude00 and \udc80"))
        store.add_edge(key, EdgeMemory(round=0, step=0, source="n\udfff", target="m", heading=90.0))
        store.mark_edges(key, 0, [0], "dead\udfffend")
        store.end_round(key, RoundMemory(round=0, path=("n\udfff", "m"), actions=(1,), end_reason="stop\ud800",
                                         extra={"record": {"raw": ["x\ud800"]}}))
        (visit,) = store.visits(key)
        (decision,) = store.decisions(key)
        (edge,) = store.edges(key)
        (finished,) = store.finished_rounds(key)
    finally:
        store.close()
    assert visit.node == "n\ufffd" and decision.relative == "left\ufffd"
    assert decision.rationale == "the sign says 😀 and \ufffd"
    assert edge.source == "n\ufffd" and edge.outcome == "dead\ufffdend"
    assert finished.end_reason == "stop\ufffd" and finished.path == ("n\ufffd", "m")
    assert finished.extra == {"record": {"raw": ["x\ufffd"]}}
