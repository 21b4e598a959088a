"""The report's step viewer: pick an episode and a step, and see what the agent saw there,
what the policy replied and decided, what the BCR supervisor did, and the path so far on a
map against the reference route.

Everything comes from episodes.jsonl, embedded as JSON in a <script type="application/json">
tag and drawn by a little vanilla JavaScript (no network). Thumbnails are re-made by the
run's view source (the loader report_views.py uses), so they are the pixels the policy was
given; to keep report.html small and quick to write, only a few episodes get them (a mix
across failure tags), each for the steps at which the agent was asked to act. The others
show their views as headings and directions in text. Records without the newer fields
(observed, path_latlon, supervisor, rounds, decisions) still show what can be derived.
"""
from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.evaluation.failures import pick_mixed, stable_order, target_distances
from cityseeker_ros.core.evaluation.report.maps import (
    MAP_H,
    PAD,
    SVG_W,
    CityIndex,
    frame_metres,
    geometry_from_graph,
    geometry_from_record,
    nice_length,
    project,
)
from cityseeker_ros.core.evaluation.report.views import ViewLoader, _data_uri
from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.family import family_of_record

MAX_THUMB_EPISODES = 12
MAX_VIEWER_EPISODES = 300
THUMB_WIDTH, THUMB_QUALITY = 160, 65
RAW_CHARS = 4000  # per raw reply; longer ones are cut with a note

CSS = """
#step-viewer .svc{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0;position:sticky;top:0;
background:#fff;padding:6px 0;z-index:1;border-bottom:1px solid #eee}
#step-viewer select{max-width:460px}#sv-step{flex:1;min-width:160px}
#step-viewer button{font-size:14px;padding:2px 10px}
.svh{font-size:13px;margin:6px 0}.svh .instr{font-size:14px}
.svb{display:grid;grid-template-columns:530px 1fr;gap:16px;align-items:start}
.svb svg{display:block;max-width:100%;height:auto}
.svs{font-size:13px}.svs h4{margin:10px 0 4px;font-size:13px}
.svs pre{white-space:pre-wrap;word-break:break-word;background:#f6f7f9;padding:6px 8px;border-radius:4px;
margin:2px 0;font-size:12px;max-height:260px;overflow:auto}
.svv{display:flex;flex-wrap:wrap;gap:6px}.svv figure{margin:0;font-size:12px;color:#444;width:170px;
border:2px solid transparent;border-radius:4px;padding:2px}.svv figure.chosen{border-color:#ff8c00}
.svv img{display:block;width:100%;border-radius:3px}.svv .noimg{color:#555;padding:4px 0}
.svd{border-left:3px solid #1f5fbf;padding:2px 8px;margin:6px 0}.svd.fallback{border-color:#c0392b}
.svd dl{display:grid;grid-template-columns:max-content 1fr;gap:1px 10px;margin:2px 0}
.svd dt{color:#666}.svd dd{margin:0}
.flag{color:#c0392b;font-weight:600}.muted{color:#777}
"""


# ---------------------------------------------------------------- per-step facts

def _observed(record: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    out: dict[int, Mapping[str, Any]] = {}
    for o in record.get("observed") or ():
        if isinstance(o, Mapping) and isinstance(o.get("step"), int):
            out.setdefault(o["step"], o)
    return out


def _by_step(items: object) -> dict[int, list[Mapping[str, Any]]]:
    out: dict[int, list[Mapping[str, Any]]] = {}
    for item in items or ():  # type: ignore[attr-defined]
        if isinstance(item, Mapping) and isinstance(item.get("step"), int):
            out.setdefault(item["step"], []).append(item)
    return out


def asked_steps(record: Mapping[str, Any]) -> list[int]:
    """Steps at which the agent was asked to act: those of `observed` when recorded, else every
    step with an action that was not a walked-back hop, a decision, or the failing last one."""
    observed = _observed(record)
    if observed:
        return sorted(observed)
    path = list(record.get("path") or [])
    if not path:
        return []
    actions = record.get("actions")
    if actions is None:  # a record without actions: every node but the last where the budget ran out
        actions = [0] * (len(path) - 1) + ([None] if record.get("end_reason") == "stopped" else [])
    steps = {s for s, a in enumerate(actions) if a != "back" and s < len(path)}
    steps |= {s for s in _by_step(record.get("decisions")) if s < len(path)}
    if record.get("end_reason") in ("error", "invalid_action"):
        steps.add(len(path) - 1)
    return sorted(steps)


def _facing(graph: StreetGraph, model: ActionModel, record: Mapping[str, Any], s: int) -> Optional[float]:
    path, actions = record["path"], list(record.get("actions") or [])
    if s == 0:
        return graph.nodes[path[0]].heading
    prev, here = path[s - 1], path[s]
    a = actions[s - 1] if s - 1 < len(actions) else None
    moves = model.moves(prev)
    if isinstance(a, int) and 0 <= a < len(moves) and moves[a].edge.target == here:
        return moves[a].edge.azimuth
    edge = next((e for e in graph.out_edges(prev) if e.target == here), None)
    return edge.azimuth if edge is not None else None


def _views_at(record: Mapping[str, Any], s: int, observed: Mapping[int, Mapping[str, Any]],
              decisions: Sequence[Mapping[str, Any]], graph: Optional[StreetGraph],
              model: Optional[ActionModel]) -> tuple[Optional[float], list[dict[str, Any]]]:
    """(facing, [{i, h, rel}]) at step s: recorded, else derived from the graph, else from an
    ocr-embed decision's view list, else nothing."""
    o = observed.get(s)
    if o is not None:
        views = [{"i": v.get("index"), "h": v.get("heading"), "rel": v.get("relative")}
                 for v in o.get("views") or () if isinstance(v, Mapping)]
        return o.get("facing"), views
    node = record["path"][s]
    if graph is not None and model is not None and all(n in graph for n in record["path"][:s + 1]):
        facing = _facing(graph, model, record, s)
        return facing, [{"i": m.index, "h": m.heading,
                         "rel": relative_direction(m.heading, facing).value if facing is not None else None}
                        for m in model.moves(node)]
    for d in decisions:
        if isinstance(d.get("views"), list):
            return None, [{"i": v.get("index"), "h": v.get("heading"), "rel": v.get("relative")}
                          for v in d["views"] if isinstance(v, Mapping)]
    return None, []


def _degrees(value: object) -> Optional[int]:
    return round(float(value)) % 360 if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _clip(text: object, limit: int = RAW_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more characters]"


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, Mapping):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


SKIP_KEYS = {"step", "node", "visits", "tokens", "prompt_version", "mode"}


def compact_decision(d: Mapping[str, Any]) -> dict[str, Any]:
    """A decision record as the viewer needs it: replies clipped, ocr texts trimmed."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        if key in SKIP_KEYS or value in (None, "", [], {}):
            continue
        if key == "raw":
            out["raw"] = [_clip(x) for x in (value if isinstance(value, list) else [value])]
        elif key == "views" and isinstance(value, list):  # ocr-embed: only views that read something
            out["views"] = [{"index": v.get("index"), "relative": v.get("relative"), "score": _rounded(v.get("score")),
                             "texts": [{"text": _clip(t.get("text", ""), 200), "score": _rounded(t.get("score")),
                                        "match": t.get("match")}
                                       for t in (v.get("texts") or [])[:8] if isinstance(t, Mapping)]}
                            for v in value if isinstance(v, Mapping) and (v.get("texts") or v.get("score"))]
        elif isinstance(value, str):
            out[key] = _clip(value)
        else:
            out[key] = _rounded(value)
    return out


# ---------------------------------------------------------------- maps and thumbnails

class Maps:
    """Map data in one east/north metre frame per city: each episode carries its points and the
    transform that frames it (pixels = a * metres + offset, north up); the street segments
    near any shown episode are stored once per city, not once per episode."""

    def __init__(self, graphs: Mapping[str, StreetGraph]) -> None:
        self.graphs = graphs
        self.index: dict[str, CityIndex] = {}
        self.origin: dict[str, tuple[float, float]] = {}
        self.windows: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    def _city(self, name: str) -> Optional[CityIndex]:
        if name not in self.graphs:
            return None
        if name not in self.index:
            city = self.index[name] = CityIndex.build(self.graphs[name])
            centre = city.latlon.mean(axis=0) if len(city.latlon) else np.zeros(2)
            self.origin[name] = (float(centre[0]), float(centre[1]))
        return self.index[name]

    def episode(self, record: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        name = str(record.get("city", ""))
        city = self._city(name)
        geo = geometry_from_graph(dict(record), city, 0.0) if city is not None else None
        if geo is None:
            name, geo = "", geometry_from_record(dict(record))
        if geo is None:
            return None
        parts = [geo.path, geo.reference, geo.start[None, :]]
        parts += [geo.target[None, :]] if geo.target is not None else []
        origin = self.origin[name] if name else tuple(np.vstack(parts).mean(axis=0))
        xy = project(np.vstack(parts), *origin)
        scale, centre = frame_metres(xy)
        if name:
            half = np.array([SVG_W, MAP_H]) / (2 * scale)
            self.windows.setdefault(name, []).append((centre - half, centre + half))

        def pts(ll: np.ndarray) -> list[list[float]]:
            return [[round(float(x), 1), round(float(y), 1)] for x, y in project(ll, *origin)] if len(ll) else []

        bar_m = nice_length(0.3 * (SVG_W - 2 * PAD) / scale)
        return {"city": name or None, "w": SVG_W, "h": MAP_H,
                "t": [round(scale, 5), round(SVG_W / 2 - centre[0] * scale, 2),
                      round(MAP_H / 2 + centre[1] * scale, 2)],
                "path": pts(geo.path), "ref": pts(geo.reference),
                "target": pts(geo.target[None, :])[0] if geo.target is not None else None,
                "bar": [round(bar_m * scale, 1), f"{bar_m:g} m" if bar_m < 1000 else f"{bar_m / 1000:g} km"]}

    def streets(self) -> dict[str, str]:
        """Per city, an SVG path (metres, y north) of the segments seen in some episode's map."""
        out = {}
        for name, windows in self.windows.items():
            city = self.index[name]
            if not len(city.edges):
                continue
            xy = project(city.latlon, *self.origin[name])
            seen = np.zeros(len(xy), dtype=bool)
            for lo, hi in windows:
                seen |= np.all((xy >= lo) & (xy <= hi), axis=1)
            keep = city.edges[seen[city.edges[:, 0]] | seen[city.edges[:, 1]]]
            out[name] = "".join(f"M{xy[a, 0]:.1f} {xy[a, 1]:.1f}L{xy[b, 0]:.1f} {xy[b, 1]:.1f}" for a, b in keep)
        return out


class Thumbnails:
    """JPEG data URIs, each made once per (city, node, heading) and shared by every step."""

    def __init__(self, sources: Mapping[str, tuple[Any, Any]]) -> None:
        self.sources = sources
        self.images: list[str] = []
        self._index: dict[tuple[str, str, float], int] = {}

    def at(self, city: str, node_id: str, headings: Sequence[float]) -> list[Optional[int]]:
        world, views = self.sources[city]
        node = world.graph.nodes[node_id]
        keys = [(city, node_id, round(float(h), 3)) for h in headings]
        missing = [k for k in dict.fromkeys(keys) if k not in self._index]
        if missing:
            for k, image in zip(missing, views.images(node, [k[2] for k in missing])):
                self._index[k] = len(self.images)
                self.images.append(_data_uri(image, THUMB_WIDTH, THUMB_QUALITY))
        return [self._index[k] for k in keys]


# ---------------------------------------------------------------- the data

def _success(tags: Sequence[str]) -> bool:
    return "success" in tags


def choose_episodes(records: Sequence[Mapping[str, Any]], tags: Sequence[Sequence[str]],
                    thumb_ok: Sequence[bool], n_thumbs: int, limit: int) -> tuple[list[int], set[int]]:
    """(indices shown in the viewer, the subset that gets thumbnails). Thumbnails go to a mix
    across tags (`failures.pick_mixed`) among the records whose views can be re-made; when
    there are more records than `limit`, the viewer keeps those, then a deterministic
    spread of the other failures, then of the successes."""
    pool = [i for i, ok in enumerate(thumb_ok) if ok]
    picked = pick_mixed([records[i] for i in pool], [tags[i] for i in pool], n_thumbs)
    thumbs = [pool[j] for j in picked]
    if len(records) <= limit:
        return list(range(len(records))), set(thumbs)
    order = [i for i in stable_order(records) if i not in thumbs]
    rest = [i for i in order if not _success(tags[i])] + [i for i in order if _success(tags[i])]
    keep = thumbs + rest[:max(0, limit - len(thumbs))]
    return sorted(keep), set(thumbs)


def episode_entry(record: Mapping[str, Any], tags: Sequence[str], departure: Optional[int], *,
                  graph: Optional[StreetGraph], model: Optional[ActionModel], map_: Optional[dict],
                  coords: Any, thumbs: Optional[Thumbnails]) -> dict[str, Any]:
    path = list(record["path"])
    actions = list(record.get("actions") or [])
    observed = _observed(record)
    decisions = _by_step(record.get("decisions"))
    sup = record.get("supervisor") if isinstance(record.get("supervisor"), Mapping) else {}
    events, context = _by_step(sup.get("events")), _by_step(sup.get("context"))
    asked = set(asked_steps(record))
    dist = target_distances(record, coords)
    steps = []
    for s, node in enumerate(path):
        facing, views = _views_at(record, s, observed, decisions.get(s, []), graph, model)
        images: list[Optional[int]] = [None] * len(views)
        if thumbs is not None and s in asked and views and all(isinstance(v["h"], (int, float)) for v in views):
            images = thumbs.at(str(record.get("city")), node, [v["h"] for v in views])
        step: dict[str, Any] = {"node": node, "facing": _degrees(facing),
                                "views": [[v["i"], _degrees(v["h"]), v["rel"]] + ([img] if img is not None else [])
                                          for v, img in zip(views, images)]}
        if s not in asked:
            step["idle"] = True
        if s < len(actions):
            step["a"] = actions[s]
        if decisions.get(s):
            step["d"] = [compact_decision(d) for d in decisions[s]]
        if events.get(s):
            step["ev"] = [_rounded({k: v for k, v in e.items() if k != "step"}) for e in events[s]]
        if context.get(s):
            step["ctx"] = [{k: _clip(v) for k, v in c.items() if k != "step" and v} for c in context[s]]
        steps.append(step)
    metrics = record.get("metrics") or {}
    entry: dict[str, Any] = {
        "id": str(record.get("episode_id")), "seed": record.get("seed"), "city": record.get("city"),
        "category": record.get("category"), "difficulty": record.get("difficulty"),
        "instruction": _clip(record.get("instruction", ""), 1000), "request": record.get("request"),
        "end_reason": record.get("end_reason"), "error": _clip(record["error"], 1000) if record.get("error") else None,
        "tags": list(tags), "success": _success(tags), "departure": departure,
        "spd": _rounded(metrics.get("spd")), "steps": steps, "map": map_, "thumbs": thumbs is not None,
        "dist": [round(float(x)) for x in dist] if dist is not None and len(dist) == len(path) else None,
    }
    if sup:
        entry["strategies"] = _rounded(list(sup.get("strategies") or []))
        entry["backtracks"] = sup.get("backtracks")
    if record.get("rounds"):
        family = family_of_record(record)
        entry["success_label"] = family.spec(family.success_metric).label
        entry["rounds"] = [{"round": r.get("round"), "end_reason": r.get("end_reason"),
                            "steps": max(len(r.get("path") or []) - 1, 0),
                            "success": (r.get("metrics") or {}).get(family.success_metric)}
                           for r in record["rounds"] if isinstance(r, Mapping)]
    return entry


def viewer_data(records: Sequence[Mapping[str, Any]], tags: Sequence[Sequence[str]],
                departures: Sequence[Optional[int]], *, graphs: Mapping[str, StreetGraph],
                sources: Optional[Mapping[str, tuple[Any, Any]]], coords_for: Any = None,
                max_thumb_episodes: int = MAX_THUMB_EPISODES,
                max_episodes: int = MAX_VIEWER_EPISODES) -> dict[str, Any]:
    sources = sources or {}
    usable = [i for i, r in enumerate(records) if r.get("path")]
    recs = [records[i] for i in usable]
    rtags = [tags[i] for i in usable]
    thumb_ok = [str(r.get("city")) in sources and all(n in sources[str(r.get("city"))][0].graph for n in r["path"])
                for r in recs]
    shown, with_thumbs = choose_episodes(recs, rtags, thumb_ok, max_thumb_episodes, max_episodes)
    thumbs = Thumbnails(sources) if with_thumbs else None
    maps = Maps(graphs)
    models: dict[str, ActionModel] = {}
    episodes = []
    for i in shown:
        r = recs[i]
        city = str(r.get("city"))
        graph = graphs.get(city)
        if graph is None and city in sources:
            graph = sources[city][0].graph
        if graph is not None and city not in models:
            models[city] = ActionModel(graph)
        episodes.append(episode_entry(r, rtags[i], departures[usable[i]], graph=graph, model=models.get(city),
                                      map_=maps.episode(r), coords=coords_for(r) if coords_for else None,
                                      thumbs=thumbs if i in with_thumbs else None))
    order = [shown.index(i) for i in choose_order(recs, rtags, shown, with_thumbs)]
    default = next((k for k in order if episodes[k]["thumbs"] and not episodes[k]["success"]),
                   next((k for k in order if not episodes[k]["success"]), 0))
    return {"episodes": episodes, "order": order, "default": default if episodes else None,
            "streets": maps.streets(), "images": thumbs.images if thumbs else [], "total": len(records)}


def choose_order(records: Sequence[Mapping[str, Any]], tags: Sequence[Sequence[str]], shown: Sequence[int],
                 with_thumbs: set[int]) -> list[int]:
    """Select-box order: episodes with thumbnails, then failures, then successes (file order)."""
    return ([i for i in shown if i in with_thumbs]
            + [i for i in shown if i not in with_thumbs and not _success(tags[i])]
            + [i for i in shown if i not in with_thumbs and _success(tags[i])])


def load_sources(config: dict, loader: Optional[ViewLoader]) -> tuple[dict, str]:
    """The run's view sources by city, or none and why not."""
    if not config.get("views"):
        return {}, "the run had no view source"
    if loader is None:
        return {}, "no view loader was given"
    try:
        return dict(loader(config)), ""
    except CitySeekerError as exc:
        return {}, f"views could not be made: {exc}"


# ---------------------------------------------------------------- HTML

def _finite(value: object) -> object:
    """NaN and infinities (which JSON.parse rejects) as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def embed_json(data: object) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' survives literally."""
    def dump(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)

    try:
        text = dump(data)
    except ValueError:  # a NaN somewhere in the records
        text = dump(_finite(data))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def viewer_html(data: Mapping[str, Any], note: str = "") -> str:
    e = html.escape
    if not data.get("episodes"):
        return ""
    n, total = len(data["episodes"]), data.get("total", len(data["episodes"]))
    n_thumbs = sum(ep["thumbs"] for ep in data["episodes"])
    shown = f"all {n} episode records" if n == total else f"{n} of {total} episode records"
    intro = (f"Pick an episode and step through it ({shown}; ← → keys step). {n_thumbs} episodes, a mix "
             "across failure tags, carry the views re-made by the run's view source; the others list their "
             "views as headings. Map: grey streets, green reference route, faint blue the whole path, "
             "solid blue the path so far, orange ring the agent now." + (f" {note}" if note else ""))
    return ('<section id="step-viewer"><h2>Step viewer</h2>\n'
            f'<p class="note">{e(intro)}</p>\n'
            '<div class="svc"><label>Episode <select id="sv-ep"></select></label>'
            '<button id="sv-prev" type="button" title="previous step (←)">◀</button>'
            '<input id="sv-step" type="range" min="0" max="0" value="0">'
            '<button id="sv-next" type="button" title="next step (→)">▶</button>'
            '<span id="sv-pos" class="muted"></span></div>\n'
            '<div id="sv-head" class="svh"></div><div class="svb"><div id="sv-map"></div>'
            '<div id="sv-info" class="svs"></div></div>\n'
            '<noscript><p class="note warn">The step viewer needs JavaScript.</p></noscript>\n'
            f'<script type="application/json" id="sv-data">{embed_json(data)}</script>\n'
            f"<script>{JS}</script></section>\n")


JS = r"""
(() => {
"use strict";
const D = JSON.parse(document.getElementById("sv-data").textContent);
const E = D.episodes, $ = (id) => document.getElementById(id);
for (const e of E) for (const st of e.steps) st.views = st.views.map(([i, h, rel, img]) => ({i, h, rel, img}));
const sel = $("sv-ep"), range = $("sv-step");
let ep = null, step = 0;

function el(tag, cls, ...kids) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  for (const k of kids) if (k != null && k !== false) n.append(k instanceof Node ? k : String(k));
  return n;
}
const num = (x, d = 0) => (x == null || x === "" ? "" : Number(x).toFixed(d));
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const join = (...xs) => xs.filter((x) => x != null && x !== "").join(" · ");
const viewLabel = (v) => `view ${v.i}` + (v.rel ? `: ${v.rel}` : "") + (v.h != null ? ` (${num(v.h)}°)` : "");
const actionName = (a) => (a === null ? "stop" : a === "back" ? "walk back" : `view ${a}`);
const ENDED = {budget_exhausted: "no action: the step budget ran out",
               error: "no action: the episode ended with an error",
               invalid_action: "no action: too many invalid actions in a row",
               stalled: "no arrival: the vehicle made no progress (live stall timeout)"};

function actionText(e, s) {
  const st = e.steps[s];
  if (!("a" in st)) return s === e.steps.length - 1 ? ENDED[e.end_reason] || "the episode ended" : "no action recorded";
  if (st.a === null) return "Action: stop here";
  if (st.a === "back") return "Action: walked back one hop (a backtrack)";
  const v = st.views.find((v) => v.i === st.a);
  const next = s + 1 < e.steps.length ? ` → ${e.steps[s + 1].node}` : "";
  return `Action: ${v ? viewLabel(v) : "view " + st.a}${next}`;
}

function star(x, y, r) {
  const p = [];
  for (let i = 0; i < 10; i++) {
    const a = (i * 36 - 90) * Math.PI / 180, q = i % 2 ? r * 0.45 : r;
    p.push(`${(x + q * Math.cos(a)).toFixed(1)},${(y + q * Math.sin(a)).toFixed(1)}`);
  }
  return `<polygon points="${p.join(" ")}" fill="#d62728" stroke="#fff"/>`;
}

// Points are metres (x east, y north) in the city's frame; m.t maps them to pixels.
function mapSvg(e, s) {
  const m = e.map;
  if (!m) return '<p class="note">No coordinates for this episode: no street graph and no path_latlon.</p>';
  const [a, ox, oy] = m.t, px = (p) => [a * p[0] + ox, oy - a * p[1]];
  const pts = (ps) => ps.map((p) => `${+p[0]},${+p[1]}`).join(" ");
  const line = (d, color, width, opacity = 1) => `<${d} stroke="${color}" stroke-width="${width}" ` +
    `stroke-opacity="${opacity}" fill="none" vector-effect="non-scaling-stroke" stroke-linejoin="round" ` +
    'stroke-linecap="round"/>';
  const k = Math.min(s, m.path.length - 1), streets = m.city ? D.streets[m.city] : "";
  let g = `<svg width="${m.w}" height="${m.h}" viewBox="0 0 ${m.w} ${m.h}" font-family="system-ui,sans-serif" ` +
    `font-size="12" role="img"><rect width="${m.w}" height="${m.h}" fill="#fbfbf8" stroke="#ddd"/>` +
    `<g transform="matrix(${a} 0 0 ${-a} ${ox} ${oy})">`;
  if (streets) g += line(`path d="${esc(streets)}"`, "#c9ccd1", 1.2);
  if (m.ref.length > 1) g += line(`polyline points="${pts(m.ref)}"`, "#2e9d4f", 7, 0.55);
  if (m.path.length > 1) g += line(`polyline points="${pts(m.path)}"`, "#1f5fbf", 2, 0.2);
  if (k > 0) g += line(`polyline points="${pts(m.path.slice(0, k + 1))}"`, "#1f5fbf", 2.5);
  g += "</g>";
  if (m.target) g += star(...px(m.target), 9);
  const [sx, sy] = px(m.path[0]), [hx, hy] = px(m.path[k]);
  g += `<circle cx="${sx}" cy="${sy}" r="5.5" fill="#222" stroke="#fff"/>` +
    `<circle cx="${hx}" cy="${hy}" r="8" fill="none" stroke="#ff8c00" stroke-width="3"/>`;
  if (e.departure > 0 && e.departure <= m.path.length) {
    const [x, y] = px(m.path[e.departure - 1]);
    g += `<path d="M${x - 5},${y - 5}l10,10m-10,0l10,-10" stroke="#c0392b" stroke-width="2.5"/>`;
  }
  const [bar, label] = m.bar, y0 = m.h - 16;
  g += `<rect x="12" y="${y0 - 20}" width="${bar + 8}" height="26" fill="#fff" fill-opacity="0.85"/>` +
    `<path d="M16,${y0 - 5} v5 h${bar} v-5" fill="none" stroke="#222" stroke-width="1.5"/>` +
    `<text x="${16 + bar / 2}" y="${y0 - 8}" text-anchor="middle">${esc(label)}</text>` +
    `<text x="${m.w - 16}" y="24" text-anchor="end" font-weight="600">N ↑</text>`;
  return g + "</svg>" + '<div class="note">● start · <span style="color:#d62728">★</span> target · ' +
    '<span style="color:#ff8c00">◯</span> now · <span style="color:#c0392b">✕</span> where it left the ' +
    'reference · <span style="color:#2e9d4f">▬</span> reference</div>';
}

function head(e) {
  const where = join(e.seed != null ? `seed ${e.seed}` : null, e.city, e.category, e.difficulty);
  const left = e.departure != null
    ? `left the reference at move ${e.departure} (decision at step ${e.departure - 1})` : "followed the reference";
  const h = $("sv-head");
  h.replaceChildren(
    el("div", null, el("b", null, e.id), " ", where, " ",
       el("span", "badge " + (e.success ? "ok" : "bad"), e.success ? "success" : "failure"), " ",
       ...e.tags.map((t) => el("span", "chip", t))),
    el("div", "instr", `“${e.instruction}”`),
    el("div", "muted", join(`ended: ${e.end_reason} after ${e.steps.length - 1} steps`,
       e.spd != null ? `${num(e.spd)} m from the target at the end` : null, left)));
  if (e.error) h.append(el("div", "flag", `error: ${e.error}`));
  if (e.strategies) {
    const params = (s) => (s.params && Object.keys(s.params).length ? " " + JSON.stringify(s.params) : "");
    h.append(el("div", null, "Strategies: " + e.strategies.map((s) =>
      `${s.name}${s.oracle ? " (oracle)" : ""}${params(s)}`).join(", ") +
      (e.backtracks != null ? ` · ${e.backtracks} backtrack(s)` : "")));
  }
  if (e.rounds) {
    h.append(el("div", null, "Earlier rounds: " + e.rounds.map((r) =>
      `round ${r.round}: ${r.end_reason} after ${r.steps} steps, ${e.success_label} ${num(r.success)}`).join("; ") +
      ". Shown: the final round."));
  }
}

function ocrTable(views) {
  const tr = (cells, tag = "td") => el("tr", null, ...cells.map(([text, cls]) => el(tag, cls, text)));
  const body = el("tbody", null, ...views.map((v) => tr([[`${v.index} ${v.relative || ""}`], [num(v.score, 3), "num"],
    [v.texts.map((x) => `${x.text} (${num(x.score, 2)}${x.match ? ", match" : ""})`).join(" · ") || "—"]])));
  return el("table", null, el("thead", null, tr([["view"], ["score"], ["texts read"]], "th")), body);
}

const KNOWN = new Set(["prompt_hash", "decision", "action", "confidence", "reason", "retries", "fallback",
                       "parse_error", "problems", "stop_check", "latency_s", "views", "raw"]);

function decision(d) {
  // A seed agent's step lists its calls; one unusable call is not a fallback of the step's action.
  const calls = Array.isArray(d.calls) ? d.calls : null;
  const unusable = (calls || []).filter((c) => c.parse_error != null || c.parsed === false);
  const box = el("div", "svd" + ((calls ? unusable.length : d.fallback) ? " fallback" : "")), dl = el("dl");
  const row = (k, v) => { if (v != null && v !== "") dl.append(el("dt", null, k), el("dd", null, v)); };
  const dec = d.decision || {}, check = d.stop_check, lat = d.latency_s;
  row("prompt hash", Array.isArray(d.prompt_hash) ? d.prompt_hash.join(", ") : d.prompt_hash);
  row("action", actionName("action" in dec ? dec.action : d.action));
  row("confidence", num(dec.confidence ?? d.confidence, 2));
  row("reason", d.reason);
  row("thoughts", dec.thoughts);
  for (const o of dec.observations || []) row(`saw ${o.view}`, o.description);
  if (d.retries) row("retries", d.retries);
  if (calls) {
    row("calls", calls.map((c) => c.role + (unusable.includes(c) ? " (unusable)" : "")).join(", "));
    const why = (c) => `${c.role}: ${c.parse_error || "not read"}`;
    if (unusable.length) row("unusable replies", unusable.map(why).join("; "));
  } else if (d.fallback) row("fell back", d.parse_error || "reply not parsed");
  else if (d.parse_error) row("parse error", d.parse_error);
  if (d.problems) row("repaired", d.problems.join("; "));
  if (check) row("stop check", join(check.stop ? "stop" : "go on", num(check.confidence, 2), check.thoughts));
  if (lat != null) {
    row("latency", typeof lat === "object"
      ? Object.entries(lat).map(([k, v]) => `${k} ${num(v, 3)} s`).join(", ") : `${num(lat, 3)} s`);
  }
  if (d.views && !d.views.length) row("texts read", "none on any view");
  box.append(dl);
  if (d.views && d.views.length) box.append(ocrTable(d.views));
  (d.raw || []).forEach((r, i) => {
    const det = el("details", null, el("summary", null, `raw reply ${i + 1} of ${d.raw.length}`), el("pre", null, r));
    det.open = i === d.raw.length - 1;
    box.append(det);
  });
  const rest = Object.keys(d).filter((k) => !KNOWN.has(k));
  if (rest.length) box.append(el("pre", null, JSON.stringify(Object.fromEntries(rest.map((k) => [k, d[k]])))));
  return box;
}

function info(e, s) {
  const st = e.steps[s], box = $("sv-info");
  box.replaceChildren(
    el("div", null, el("b", null, join(`Step ${s} of ${e.steps.length - 1}`, `at ${st.node}`,
       st.facing != null ? `facing ${num(st.facing)}°` : null, e.dist ? `${e.dist[s]} m to the target` : null))),
    el("div", null, actionText(e, s)));
  if (e.departure != null && s === e.departure - 1) {
    box.append(el("div", "flag", "⚑ this decision left the reference route"));
  }
  if (!st.idle && st.views.length) {
    box.append(el("h4", null, "Views offered"));
    const vs = el("div", "svv");
    for (const v of st.views) {
      const f = el("figure", v.i === st.a ? "chosen" : null);
      if (v.img != null) {
        const img = el("img");
        img.src = D.images[v.img];
        img.alt = viewLabel(v);
        f.append(img);
      }
      f.append(el("figcaption", v.img == null ? "noimg" : null, viewLabel(v)));
      vs.append(f);
    }
    box.append(vs);
  } else if (st.idle) box.append(el("p", "muted", "The agent was not asked to act here."));
  if (st.ev) {
    const detail = (v) => (v.detail && Object.keys(v.detail).length ? ": " + JSON.stringify(v.detail) : "");
    const round = (v) => (v.round != null ? ` (round ${v.round})` : "");
    box.append(el("h4", null, "Strategy events"), el("ul", null, ...st.ev.map((v) => el("li", null,
      el("b", null, `${v.strategy || "?"} ${v.kind || ""}`), round(v), detail(v)))));
  }
  for (const c of st.ctx || []) {
    for (const [k, v] of Object.entries(c)) box.append(el("h4", null, `Context: ${k}`), el("pre", null, v));
  }
  if (st.d) {
    box.append(el("h4", null, "Decision"));
    st.d.forEach((d) => box.append(decision(d)));
  } else if (!st.idle) box.append(el("p", "muted", "No decision record for this step (this policy logs none)."));
}

function go(s, keepHash) {
  step = Math.max(0, Math.min(ep.steps.length - 1, s));
  range.value = step;
  if (!keepHash && history.replaceState) {
    history.replaceState(null, "", `#sv=${encodeURIComponent(ep.id)}&seed=${ep.seed ?? ""}&step=${step}`);
  }
  $("sv-pos").textContent = `step ${step} / ${ep.steps.length - 1}`;
  $("sv-map").innerHTML = mapSvg(ep, step);
  info(ep, step);
}

function show(k, s = 0, keepHash = false) {
  ep = E[k];
  sel.value = String(k);
  range.max = ep.steps.length - 1;
  head(ep);
  go(s, keepHash);
}

const GROUPS = [["With views", (e) => e.thumbs], ["Failures", (e) => !e.thumbs && !e.success],
                ["Successes", (e) => !e.thumbs && e.success]];
for (const [label, wanted] of GROUPS) {
  const og = el("optgroup");
  og.label = label;
  for (const k of D.order.filter((k) => wanted(E[k]))) {
    const e = E[k], seed = e.seed != null ? " s" + e.seed : "";
    const o = el("option", null, `${e.id}${seed} — ${e.tags.join(", ") || e.end_reason}`);
    o.value = String(k);
    og.append(o);
  }
  if (og.children.length) sel.append(og);
}
sel.addEventListener("change", () => show(+sel.value));
range.addEventListener("input", () => go(+range.value));
$("sv-prev").addEventListener("click", () => go(step - 1));
$("sv-next").addEventListener("click", () => go(step + 1));
document.addEventListener("keydown", (ev) => {
  if (!ep || ev.altKey || ev.ctrlKey || ev.metaKey || /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName)) return;
  const r = $("step-viewer").getBoundingClientRect();
  if (r.bottom < 0 || r.top > window.innerHeight) return;
  if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
    go(step + (ev.key === "ArrowLeft" ? -1 : 1));
    ev.preventDefault();
  }
});
const find = (id, seed) => E.findIndex((e) => e.id === id && (!seed || String(e.seed) === seed));
// Episode ids in the failed-episodes table open them here.
const table = document.querySelector("#failed-episodes table");
if (table) {
  const seedCol = [...table.querySelectorAll("thead th")].findIndex((t) => t.textContent === "Seed");
  for (const tr of table.querySelectorAll("tbody tr")) {
    const k = find(tr.cells[0].textContent, seedCol >= 0 ? tr.cells[seedCol].textContent : null);
    if (k < 0) continue;
    const a = el("a", null, tr.cells[0].textContent);
    a.href = "#step-viewer";
    a.addEventListener("click", () => show(k));
    tr.cells[0].replaceChildren(a);
  }
}
// A link such as report.html#sv=<episode id>&seed=0&step=7 opens that step.
const q = new URLSearchParams(location.hash.slice(1)), linked = q.has("sv") ? find(q.get("sv"), q.get("seed")) : -1;
if (linked >= 0) {
  show(linked, +q.get("step") || 0, true);
  $("step-viewer").scrollIntoView();
} else if (D.default != null) show(D.default, 0, true);
})();
"""
