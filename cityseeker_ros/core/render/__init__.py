"""Rendered street views for worlds without photographs: a NumPy/Pillow reference renderer.

    renderer = Renderer(scene, graph, RenderSettings(clutter=0.3))
    view = renderer.perspective("n235", 343.0)  # view.image, view.signs (ground truth), view.meta
    save_png("view.png", view.image)

Views are deterministic (same inputs, same bytes) and labelled synthetic in their meta. The
names below load on first use, so code that needs only the palette or the textures' constants
(a question's colour words) does not import Pillow and the renderer.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"Renderer": "renderer", "RENDERER_VERSION": "renderer", "RenderSettings": "settings",
          "RenderedView": "view", "VisibleSign": "view", "save_png": "view"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
