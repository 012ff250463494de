"""The sections of a comparison by the names the command line gives them (``--section NAME``).

Plain constants, so the command line can list them without importing the render layer.
"""

from __future__ import annotations

#: each section of a comparison: its name on the command line -> its title, in the order every
#: medium shows them (:func:`profcompare.render.sections.order.comparison_sections` builds them)
SECTION_NAMES: dict[str, str] = {
    "verdict": "Verdict",
    "config": "What differs",
    "moves": "Where the memory moved",
    "ledger": "Memory ledger",
    "trace": "Execution trace",
    "time": "Time diff",
    "liveness": "Liveness",
    "peak": "What changed the not-always-live peak",
    "summary": "Summary",
    "categories": "Memory by category",
    "ipus": "Memory per IPU",
    "tiles": "Tiles",
    "tile-detail": "Tile detail",
    "variables": "Variables",
    "code": "Code by program",
    "operations": "Operations",
    "programs": "Program tree",
    "vertices": "Vertices, compute sets and exchanges",
    "streaming": "Streaming Memory",
    "execution": "Execution",
    "replicas": "Replicas and collectives",
}

__all__ = ["SECTION_NAMES"]
