"""How internal values read on every page: one display spelling per concept.

The ledger's locations (``always_live``, ``not_always_live``, ``streaming_memory``), a live flag
the empty parameter and the execution phases are stored as identifiers; people read them through these functions
only, so the terminal, markdown, HTML, the N-way index, the figures and notebooks spell each one
the same way: "always-live", "not-always-live", "Streaming Memory" (a proper name, as Graphcore
writes it), "(no parameter)" for memory that belongs to no model parameter and "(unattributed)"
for memory a reader could not attribute (role ``other``).
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
#: the parameter label of memory the reader could not attribute (role ``other``)
UNATTRIBUTED = "(unattributed)"


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
    """A ledger parameter for people: itself when named; empty, :data:`UNATTRIBUTED` when the
    role is ``other`` (the reader could not say what it belongs to), else :data:`NO_PARAMETER`
    (activations, op temporaries; also a parameter total summed over roles)."""
    text = "" if is_missing(parameter) else str(parameter)
    if text:
        return text
    role_text = "" if is_missing(role) else str(role)
    return UNATTRIBUTED if role is not None and role_text == "other" else NO_PARAMETER


__all__ = ["LOCATION_LABELS", "NO_PARAMETER", "PHASE_LABELS", "UNATTRIBUTED", "live_label", "location_label",
           "parameter_label", "phase_label"]
