"""The memory ledger in words, shared by every renderer: location names, parameter labels and
the plain-words sentence of a ledger move ("fc1.weight optimizer_state: 3.0 MiB always-live ->
768.0 KiB Streaming Memory")."""

from __future__ import annotations

from typing import Any

from profcompare.model import LOCATIONS
from profcompare.render.format import format_bytes, is_missing
from profcompare.render.labels import LOCATION_LABELS, location_label, parameter_label

#: how many ledger moves a comparison leads with (text, markdown and HTML)
MOVES_SHOWN = 8

#: how the ledger's locations read in prose and table headers (:mod:`profcompare.render.labels`)
LOCATION_WORDS = LOCATION_LABELS


def location_title(location: str) -> str:
    """A location as a table header: "Always-live", "Not-always-live", "Streaming Memory"."""
    return location_label(location, title=True)


#: a ledger parameter for people (:func:`profcompare.render.labels.parameter_label`)
parameter_text = parameter_label


def location_text(location: str, nbytes: Any, steps: str = "") -> str:
    """Bytes at a location: "3.0 MiB not-always-live (steps 61-1953)"."""
    text = f"{format_bytes(nbytes)} {LOCATION_WORDS.get(location, location)}"
    return f"{text} (steps {steps})" if steps else text


def steps_text(first: Any, last: Any) -> str:
    """A not-always-live step range "first-last"; "" for rows without steps."""
    if is_missing(first) or is_missing(last):
        return ""
    return f"{int(first)}-{int(last)}"


def move_sentence(move: Any) -> str:
    """One row of :meth:`Comparison.ledger_moves` (an itertuples row) in plain words."""

    def side(prefix: str) -> str:
        parts = [
            location_text(loc, getattr(move, f"{prefix}_{loc}"),
                          getattr(move, f"{prefix}_steps") if loc == "not_always_live" else "")
            for loc in LOCATIONS
            if int(getattr(move, f"{prefix}_{loc}"))
        ]
        return " + ".join(parts) if parts else "nothing"

    role = "" if is_missing(move.role) else str(move.role)
    return f"{parameter_text(move.parameter, move.role)} {role}: {side('base')} -> {side('new')}"


def peak_text(peak: dict[str, Any]) -> str:
    """Where a report's not-always-live peak is (:func:`profcompare.analysis.liveness_peak`):
    "step 297 (matmul/ExchangePre)", or "n/a" without program steps."""
    if peak["step"] is None:
        return "n/a"
    return f"step {peak['step']} ({peak['program']})"


def peak_change_notes(base_peak: dict[str, Any], new_peak: dict[str, Any], listed_delta: int) -> tuple[str, str]:
    """The two sentences under "What changed the not-always-live peak": where each peak is, and
    how much of the peak's change the listed rows (``listed_delta``, the sum of their deltas)
    explain."""
    def nbytes(peak: dict[str, Any]) -> int:
        value = peak["not_always_live_bytes"]
        return 0 if is_missing(value) else int(value)

    peak_delta = nbytes(new_peak) - nbytes(base_peak)
    where = f"Tile memory live at each report's own peak: base at {peak_text(base_peak)}, new at {peak_text(new_peak)}."
    explained = (f"These rows change the peak by {format_bytes(listed_delta, signed=True)}; the not-always-live peak "
                 f"changed by {format_bytes(peak_delta, signed=True)}"
                 + ("." if listed_delta == peak_delta else f", {format_bytes(peak_delta - listed_delta, signed=True)} "
                    "of it in memory the variables tables do not list."))
    return where, explained


__all__ = ["LOCATION_WORDS", "MOVES_SHOWN", "peak_change_notes", "peak_text", "location_text", "location_title", "move_sentence", "parameter_text", "steps_text"]
