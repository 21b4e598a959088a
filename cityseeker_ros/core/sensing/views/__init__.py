"""View sources by name. Importing this package registers every built-in source."""
from __future__ import annotations

from cityseeker_ros.core.sensing.views import panorama, rendered, source
from cityseeker_ros.core.sensing.views.panorama import PanoramaCutter, PanoramaFolderSource, load_panorama
from cityseeker_ros.core.sensing.views.rendered import RenderedViewSource
from cityseeker_ros.core.sensing.views.source import VIEW_SOURCES, ViewSource, make_view_source

# The AirSim source imports views.source itself; its client library loads only when a source is made.
from cityseeker_ros.core.vehicles.airsim import views as airsim_views  # registers "airsim"

__all__ = ["VIEW_SOURCES", "PanoramaCutter", "PanoramaFolderSource", "RenderedViewSource", "ViewSource",
           "airsim_views", "load_panorama", "make_view_source", "panorama", "rendered", "source"]
