"""The CitySeeker paper's published numbers, as data, so reports can put them beside ours.

Sources (checked against the paper text, `shared/papers/cityseeker.txt`):

- Table 9 ("The overall performance of CitySeeker Framework", all 8 cities, 1,257 test
  episodes): TCE, TCP-40m, TCP-50m, TCP-60m, TCC, SPD, "nDTW" and AS, two decimals.
- Table 2 ("The performance of CitySeeker Framework"): SPL, which Table 9 lacks, the Human
  row (TCE, TCP, TCC, SPL, SPD, nDTW; no TCP-40/60 and no AS), and the per-subcategory
  TCP-50 columns (one decimal; Tables 10/11 repeat the same per-category values).

Keys follow our metric names. The paper's column named "nDTW" (values 50-340, lower is
better) is DTW(agent path, reference path, metres) / |reference path|: we store it as
`dtw_per_ref_m`. Percentages are 0-100, SPD and dtw_per_ref_m in metres, AS in steps.
The paper reports nothing for our "Two-Stage" category.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from cityseeker_ros.core.tasks.family import PaperRow

PAPER_EPISODES = 1257
PAPER_SCOPE = "all 8 cities, 1,257 test episodes, 35-step budget"


def _row(name: str, source: str, **metrics: float) -> PaperRow:
    return PaperRow(name, source, MappingProxyType(metrics))


# Table 9 for everything but SPL, which is from Table 2; Human is Table 2 only.
PAPER_OVERALL: tuple[PaperRow, ...] = (
    _row("Random Choice", "Table 9; SPL Table 2",
         tce=0.72, tcp40=8.83, tcp50=13.92, tcp60=19.17, tcc=3.18,
         spl=3.8, spd=112.41, dtw_per_ref_m=128.28, **{"as": 35.0}),
    _row("Forward Direction", "Table 9; SPL Table 2",
         tce=0.24, tcp40=5.01, tcp50=7.24, tcp60=13.21, tcc=0.40,
         spl=1.8, spd=100.83, dtw_per_ref_m=99.29, **{"as": 35.0}),
    _row("Qwen2.5-VL-32B", "Table 9; SPL Table 2",
         tce=2.55, tcp40=17.66, tcp50=21.08, tcp60=24.90, tcc=6.21,
         spl=12.7, spd=122.6, dtw_per_ref_m=146.95, **{"as": 24.55}),
    _row("GPT-4o", "Table 9; SPL Table 2",
         tce=2.39, tcp40=14.96, tcp50=18.30, tcp60=23.07, tcc=6.84,
         spl=13.3, spd=125.4, dtw_per_ref_m=136.97, **{"as": 21.17}),
    _row("Human", "Table 2",
         tce=5.7, tcp50=30.1, tcc=13.5, spl=21.2, spd=143.5, dtw_per_ref_m=178.6),
)

# Table 2 subcategory columns (TCP-50, %), renamed to our category names
# ("Transit Hub" -> "Transportation Hub", "Inclusive Infra." -> "Inclusive Infrastructure",
# "Semantic Pref." -> "Semantic Preference").
_CATEGORIES = ("Basic POI", "Brand-Specific", "Transportation Hub", "Latent POI",
               "Abstract Demand", "Inclusive Infrastructure", "Semantic Preference")


def _by_category(*values: float) -> Mapping[str, float]:
    return MappingProxyType(dict(zip(_CATEGORIES, values, strict=True)))


PAPER_CATEGORY_TCP50: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "Random Choice": _by_category(16.6, 10.6, 5.4, 10.8, 14.9, 16.4, 13.5),
    "Forward Direction": _by_category(13.3, 3.1, 3.6, 2.3, 6.6, 1.5, 1.9),
    "Human": _by_category(31.8, 36.5, 34.9, 19.7, 31.5, 16.7, 29.8),
})


def paper_row(name: str) -> PaperRow:
    """The published overall row called `name` (KeyError if the paper has none)."""
    for row in PAPER_OVERALL:
        if row.name == name:
            return row
    raise KeyError(name)
