"""Words for where things are, shared by the map and retrieval strategies: a model reads
"120 m ahead-left" more reliably than a bearing."""
from __future__ import annotations

from typing import Optional

from cityseeker_ros.core.streets.directions import RelativeDirection, relative_direction
from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg

WORDS = {
    RelativeDirection.FRONT: "ahead", RelativeDirection.FRONT_RIGHT: "ahead-right",
    RelativeDirection.RIGHT: "right", RelativeDirection.BACK_RIGHT: "behind-right",
    RelativeDirection.BACK: "behind", RelativeDirection.BACK_LEFT: "behind-left",
    RelativeDirection.LEFT: "left", RelativeDirection.FRONT_LEFT: "ahead-left",
}
BANDS_M = (20, 50, 100, 200, 500)  # the paper's C2 speaks in bands ("30-50 meters")


def distance_band(metres: float) -> str:
    lower = 0
    for upper in BANDS_M:
        if metres < upper:
            return f"{lower}-{upper} m"
        lower = upper
    return f"over {BANDS_M[-1]} m"


def offset(lat: float, lon: float, facing: float, lat2: float, lon2: float) -> str:
    """Where (lat2, lon2) lies for someone at (lat, lon) facing `facing`: "50-100 m ahead-left"."""
    metres = geodesic_m(lat, lon, lat2, lon2)
    if metres < 1.0:
        return "here"
    word = WORDS[relative_direction(initial_bearing_deg(lat, lon, lat2, lon2), facing)]
    return f"{distance_band(metres)} {word}"


def trim(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def confidence_text(value: Optional[float]) -> str:
    return "no confidence given" if value is None else f"confidence {value:.2f}"
