"""The sections of a comparison by the names the command line gives them (``--section NAME``).

Plain constants, so the command line can list them without importing the render layer.
"""

from __future__ import annotations

#: each section of a comparison: its name on the command line -> its title, in the order of the
#: document (:func:`profcompare.render.sections.comparison_document` builds them)
SECTION_NAMES: dict[str, str] = {
    "verdict": "Verdict",
    "moves": "Where the memory moved",
    "ledger": "Memory ledger",
    "peak": "What changed the not-always-live peak",
    "summary": "Summary",
    "ipus": "Memory per IPU",
    "categories": "Memory by category",
    "variables": "Variables",
    "liveness": "Liveness",
    "tiles": "Tiles",
    "code": "Code by program",
    "streaming": "Streaming Memory",
    "execution": "Execution",
    "trace": "Execution trace",
    "replicas": "Replicas and collectives",
}

__all__ = ["SECTION_NAMES"]
