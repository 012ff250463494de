"""The memory ledger in words, shared by every renderer: location names, parameter labels and
the plain-words sentence of a ledger move ("fc1.weight optimizer_state: 3.0 MiB always-live ->
768.0 KiB Streaming Memory")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profcompare.model import LOCATIONS
from profcompare.render.format import format_bytes, is_missing
from profcompare.render.labels import LOCATION_LABELS, location_label, parameter_label

if TYPE_CHECKING:
    from profcompare.analysis.views import LivenessPeak

#: how many ledger moves a comparison leads with (text, markdown and HTML)
MOVES_SHOWN = 8

#: how the ledger's locations read in prose and table headers (:mod:`profcompare.render.labels`)
LOCATION_WORDS = LOCATION_LABELS


#: How every comparison colours a change (terminal, HTML page, index): by what it costs.
TONE_LEGEND = (
    "Colour: red = costs tile memory or time, green = frees tile memory or saves time; a change of Streaming "
    "Memory is not coloured (off chip, it costs no tile memory: its price is the transfer time, shown under time)."
)

#: :data:`TONE_LEGEND` where changes cannot be coloured (markdown): what costs is in bold.
BOLD_TONE_LEGEND = (
    "Bold = costs tile memory or time (frees or saves: not marked); a change of Streaming Memory is never bold "
    "(off chip, it costs no tile memory: its price is the transfer time, shown under time)."
)

#: Where the not-always-live rule of popxl variables is documented.
LIVENESS_RULE_SOURCE = "docs/ipu-model.md section 5"


def liveness_rule(conventions: tuple[str, ...]) -> str | None:
    """The one line that says why model state is (not) always-live in these reports, from each
    report's :func:`profcompare.model.variables_convention`; None when no report lists model state."""
    written = "written_from_host" in conventions
    always = "always_live" in conventions
    if written and not always:
        return ("popxl writes every variable from the host, so weights, on-chip optimizer state and accumulators "
                "are not-always-live from the step that writes them, and always-live memory is code, vertex state, "
                f"constants and stack ({LIVENESS_RULE_SOURCE}).")
    if always and not written:
        return ("Model state is always-live in these reports (variables created with initial values, as a Poplar "
                f"C++ program); a popxl program shows it not-always-live ({LIVENESS_RULE_SOURCE}).")
    if written and always:
        return ("The reports place model state differently: not-always-live where popxl writes it from the host, "
                f"always-live where variables have initial values ({LIVENESS_RULE_SOURCE}); compare with care.")
    return None


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


def code_words(row: Any, *, op_name: bool = True) -> str:
    """What a (parameter, role)'s ops did between two reports, from one row of
    :meth:`Comparison.ledger_code`: "its ops' code +995.2 KiB, cycles +636,761 per run (most:
    remote_load:second_order +235.3 KiB)" (without the parenthesis unless ``op_name``); "" when
    neither changed."""
    from profcompare.render.format import format_count

    code, cycles = int(row["delta_code_bytes"]), row["delta_cycles"]
    cycles_known = not is_missing(cycles)
    if not code and (not cycles_known or not int(cycles)):
        return ""
    text = f"its ops' code {format_bytes(code, signed=True) if code else 'unchanged'}"
    if cycles_known:
        text += f", cycles {format_count(cycles, signed=True)} per run"
    largest = str(row["largest_op"])
    if largest and code and op_name:
        text += f" (most: {largest} {format_bytes(int(row['largest_op_delta_code_bytes']), signed=True)})"
    return text


def peak_text(peak: LivenessPeak) -> str:
    """Where a report's not-always-live peak is (:func:`profcompare.analysis.views.liveness_peak`):
    "step 297 (matmul/ExchangePre)", or "n/a" without program steps."""
    if peak["step"] is None:
        return "n/a"
    return f"step {peak['step']} ({peak['program']})"


def peak_change_notes(base_peak: LivenessPeak, new_peak: LivenessPeak, listed_delta: int) -> tuple[str, str]:
    """The two sentences under "What changed the not-always-live peak": where each peak is, and
    how much of the peak's change the listed rows (``listed_delta``, the sum of their deltas)
    explain."""
    def nbytes(peak: LivenessPeak) -> int:
        value = peak["not_always_live_bytes"]
        return 0 if is_missing(value) else int(value)

    peak_delta = nbytes(new_peak) - nbytes(base_peak)
    where = f"Tile memory live at each report's own peak: base at {peak_text(base_peak)}, new at {peak_text(new_peak)}."
    explained = (f"These rows change the peak by {format_bytes(listed_delta, signed=True)}; the not-always-live peak "
                 f"changed by {format_bytes(peak_delta, signed=True)}"
                 + ("." if listed_delta == peak_delta else f", {format_bytes(peak_delta - listed_delta, signed=True)} "
                    "of it in memory the variables tables do not list."))
    return where, explained


__all__ = ["BOLD_TONE_LEGEND", "code_words", "LIVENESS_RULE_SOURCE", "LOCATION_WORDS", "TONE_LEGEND", "liveness_rule", "MOVES_SHOWN", "peak_change_notes", "peak_text", "location_text", "location_title", "move_sentence", "parameter_text", "steps_text"]
