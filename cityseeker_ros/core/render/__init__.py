"""Rendered street views for worlds without photographs: a NumPy/Pillow reference renderer.

    renderer = Renderer(scene, graph, RenderSettings(clutter=0.3))
    view = renderer.perspective("n235", 343.0)  # view.image, view.signs (ground truth), view.meta
    save_png("view.png", view.image)

Views are deterministic (same inputs, same bytes) and labelled synthetic in their meta.
"""
from cityseeker_ros.core.render.renderer import RENDERER_VERSION, Renderer
from cityseeker_ros.core.render.settings import RenderSettings
from cityseeker_ros.core.render.view import RenderedView, VisibleSign, save_png

__all__ = ["Renderer", "RenderSettings", "RenderedView", "VisibleSign", "RENDERER_VERSION", "save_png"]
