"""ocr-embed with perfect reading: the ceiling that perception leaves.

It decides exactly as `ocr-embed` does (same scoring, same stopping, same exploration), but
instead of running OCR on pixels it reads the renderer's visible-sign list for each view: every
legible board's full text, at its true text height. The gap between the two policies is what
imperfect reading costs; the gap between this one and `oracle` is what the decision rules cost.
It is privileged (it is handed the world to render the sign lists) and labelled oracle in results.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies.base import POLICIES
from cityseeker_ros.core.agents.policies.ocr_embed import OcrEmbedPolicy, SignText
from cityseeker_ros.core.tasks.environment import Observation
from cityseeker_ros.core.tasks.episode import Episode, World


@POLICIES.register("sign-oracle")
class SignOraclePolicy(OcrEmbedPolicy):
    """`ocr-embed`'s decisions on the renderer's visible-sign lists (privileged).

    Parameters: those of `ocr-embed` (the OCR ones are unused), plus `view` (a mapping of the
    rendered view source's parameters: fov_deg, width, height and difficulty knobs such as
    `unsigned_fraction`; give the same as the run's `--view-param`s) and `min_visible` (a board
    with less than this fraction of its area in sight is not read).
    """

    privileged = True
    uses_images = False  # it renders its own sign lists; the benchmark need not make images for it

    def __init__(self, view: Optional[dict[str, Any]] = None, min_visible: float = 0.5,
                 cache_views: int = 4096, **params: Any) -> None:
        super().__init__(**params)
        self.view_params = dict(view or {})
        self.min_visible = float(min_visible)
        self.cache_views = int(cache_views)
        self._sources: dict[str, Any] = {}
        self._signs: OrderedDict[tuple[str, str, float], tuple[SignText, ...]] = OrderedDict()

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        if world is None:
            raise ValueError("the sign-oracle policy needs the world (it is privileged)")
        super().reset(episode, rng, world)
        key = str(world.root)
        if key not in self._sources:
            from cityseeker_ros.core.sensing.views.rendered import RenderedViewSource

            self._sources[key] = RenderedViewSource(world, **self.view_params)
        self._world_key = key

    def read_views(self, observation: Observation) -> list[tuple[SignText, ...]]:
        return [self._read(observation.node, v.heading) for v in observation.views]

    def _read(self, node: str, heading: float) -> tuple[SignText, ...]:
        key = (self._world_key, node, round(float(heading), 3))
        cached = self._signs.get(key)
        if cached is not None:
            self._signs.move_to_end(key)
            return cached
        view = self._sources[self._world_key].render(node, heading)
        signs = tuple(SignText(s.text, 1.0, float(s.text_height_px), tuple(float(v) for v in s.bbox))
                      for s in view.signs if s.legible and s.visible_fraction >= self.min_visible)
        self._signs[key] = signs
        if len(self._signs) > self.cache_views:
            self._signs.popitem(last=False)
        return signs
