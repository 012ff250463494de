"""The words every table of every medium uses for what it shows of a longer list."""

from __future__ import annotations

from typing import Any

from profcompare.analysis.views import TopN
from profcompare.render.format import format_bytes


def cut_note(view: TopN, noun: str, total_bytes: Any = None) -> str:
    """Say how much of a top-N ``view`` of ``noun`` a table shows: every row, or the top rows and
    how many more the 'other' row sums (with ``total_bytes``, what they hold)."""
    if not view.cut:
        return f"All {view.total:,} {noun} shown."
    note = f"Top {view.shown:,} of {view.total:,} {noun} shown; {view.cut:,} more in the 'other' row"
    if total_bytes is not None:
        note += f" ({format_bytes(total_bytes)})"
    return note + "."


__all__ = ["cut_note"]
