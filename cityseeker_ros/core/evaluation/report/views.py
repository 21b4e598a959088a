"""The report's "what the agent saw" section: the views offered at the start and at the end
of a few episodes, re-made by the run's view source (deterministic, so they are the same
pixels the policy was given) and embedded as small JPEGs to keep report.html self-contained."""
from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.core.sensing.views.source import ViewSource
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.tasks.episode import World

# config -> {city: (world, view source)}; raises CitySeekerError when the sources cannot be made
ViewLoader = Callable[[dict], Mapping[str, tuple[World, ViewSource]]]
THUMB_WIDTH = 320

CSS = """
.views{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0 12px}
.views figure{margin:0;font-size:12px;color:#444}.views img{display:block;width:240px;border-radius:3px}
"""


def _data_uri(image: np.ndarray, width: int = THUMB_WIDTH, quality: int = 82) -> str:
    from PIL import Image

    img = Image.fromarray(image)
    if img.width > width:
        img = img.resize((width, round(img.height * width / img.width)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _strip(world: World, views: ViewSource, node_id: str, facing: float) -> str:
    node = world.graph.nodes[node_id]
    moves = world.actions.moves(node_id)
    images = views.images(node, [m.heading for m in moves])
    figures = [f'<figure><img alt="view {m.index}" src="{_data_uri(img)}"><figcaption>view {m.index}: '
               f"{relative_direction(m.heading, facing).value} ({m.heading:.0f}°)</figcaption></figure>"
               for m, img in zip(moves, images)]
    return f'<div class="views">{"".join(figures)}</div>'


def _facing_at_end(world: World, record: dict) -> float:
    path = record["path"]
    if len(path) < 2:
        return world.graph.nodes[path[-1]].heading
    edge = next(e for e in world.graph.out_edges(path[-2]) if e.target == path[-1])
    return edge.azimuth


def views_html(selected: Sequence[dict], config: dict, loader: ViewLoader | None, limit: int = 3) -> str:
    e = html.escape
    head = "<h2>What the agent saw</h2>\n"
    if loader is None or not config.get("views"):
        return ""
    try:
        sources = loader(config)
    except CitySeekerError as exc:
        return head + f'<p class="note warn">Views could not be made: {e(str(exc))}</p>'
    blocks = []
    for rec in selected[:limit]:
        if rec.get("city") not in sources or not rec.get("path"):
            continue
        world, views = sources[rec["city"]]
        start = world.graph.nodes[rec["path"][0]]
        blocks.append(f'<h3>{e(rec["episode_id"])}: “{e(str(rec.get("instruction", "")))}”</h3>'
                      f"<p class=\"note\">At the start ({e(start.id)}):</p>"
                      + _strip(world, views, start.id, start.heading)
                      + f"<p class=\"note\">Where it ended ({e(rec['path'][-1])}, {e(str(rec.get('end_reason')))}):</p>"
                      + _strip(world, views, rec["path"][-1], _facing_at_end(world, rec)))
    label = ("synthetic imagery rendered from map data" if any(v.synthetic for _, v in sources.values())
             else "panoramas from the user's folder")
    intro = (f'<p class="note">View source: {e(str(config.get("views")))} ({e(label)}). One view per walkable '
             "heading, labelled with its direction relative to the direction of travel.</p>")
    return head + intro + "".join(blocks)
