"""The seed papers' agents as policies: PReP (perceive, reflect, plan), NavGPT- and MapGPT-style
agents (VLN-MME), CityEQA's PMA. Every model call goes through `calls.py`, which records calls,
tokens and seconds per step. Importing this package registers them."""
from cityseeker_ros.core.agents.seeds import (
    calls,  # noqa: F401
    pma,  # noqa: F401  (registers pma)
    prep,  # noqa: F401  (registers prep)
    vln_mme,  # noqa: F401  (registers navgpt and mapgpt)
)
