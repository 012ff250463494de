"""How internal values read on every page: one display spelling per concept.

The ledger's locations (``always_live``, ``not_always_live``, ``streaming_memory``), a live flag
the empty parameter and the execution phases are stored as identifiers; people read them through these functions
only, so the terminal, markdown, HTML, the N-way index, the figures and notebooks spell each one
the same way: "always-live", "not-always-live", "Streaming Memory" (a proper name, as Graphcore
writes it) and "(no parameter)" for memory that belongs to no model parameter, whether a row
of a role (activations, temporaries; role ``other`` for memory a reader could not attribute)
or a parameter total summed over roles: the same row reads the same on every page.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from profcompare.render.format import is_missing

#: the one spelling of each ledger location in prose, legends and table cells
LOCATION_LABELS: Mapping[str, str] = MappingProxyType({
    "always_live": "always-live",
    "not_always_live": "not-always-live",
    "streaming_memory": "Streaming Memory",
})

#: the parameter label of memory that belongs to no model parameter (activations, temporaries)
NO_PARAMETER = "(no parameter)"

#: how the two nearly equal memory totals differ, wherever both are shown
TOTAL_VS_PEAK_NOTE = (
    "Total memory (excl. gaps) adds each tile's own peak (always-live + that tile's not-always-live peak, "
    "whenever it falls); peak liveness is always-live + the not-always-live memory of the one step when all "
    "tiles together hold the most, so it is at most the total."
)

#: what an "other" row of variables sums, and why it can exceed the memory totals
VARIABLES_SUM_NOTE = (
    "Variables' bytes are their own sizes: not-always-live variables live at different steps share tile memory, "
    "so a sum of variables (the 'other' row) can exceed the memory totals."
)

#: execution phases whose identifier is not a word: Streaming Memory as the ledger spells it
PHASE_LABELS: Mapping[str, str] = MappingProxyType({
    "host_io": "host I/O",
    "streaming_memory": "Streaming Memory",
})


def phase_label(phase: Any) -> str:
    """An execution phase for people: ``"Streaming Memory"``, ``"host I/O"``; the others
    (compute, exchange, sync, collective, runtime) read as themselves."""
    return PHASE_LABELS.get(str(phase), str(phase))


def location_label(location: str, *, title: bool = False) -> str:
    """A ledger location for people: ``"not-always-live"`` (``title``: ``"Not-always-live"``, for
    a header); ``"Streaming Memory"`` either way. An unknown value reads as itself."""
    words = LOCATION_LABELS.get(location, location)
    return words[:1].upper() + words[1:] if title else words


def live_label(always_live: bool, *, title: bool = False) -> str:
    """Whether memory is always live, in the locations' words: ``"always-live"`` or
    ``"not-always-live"`` (``title``: capitalised)."""
    return location_label("always_live" if always_live else "not_always_live", title=title)


def parameter_label(parameter: Any, role: Any = None) -> str:
    """A ledger parameter for people: itself when named, else :data:`NO_PARAMETER` whatever
    ``role`` is (activations, op temporaries, memory of role ``other`` a reader could not
    attribute; also a parameter total summed over roles): the role column says which."""
    del role  # one label for the empty parameter, so a ledger row and its roles' total read alike
    text = "" if is_missing(parameter) else str(parameter)
    return text or NO_PARAMETER


__all__ = ["LOCATION_LABELS", "NO_PARAMETER", "PHASE_LABELS", "TOTAL_VS_PEAK_NOTE",
           "VARIABLES_SUM_NOTE", "live_label", "location_label",
           "parameter_label", "phase_label"]
