"""The Streaming Memory section of a report and of a comparison, drawn alike by the terminal, the
Markdown and the HTML page: the remote buffers (off chip), the largest (or largest changes)
first, an "other" row summing the rest, their total per replica and over all replicas."""

from __future__ import annotations

from dataclasses import replace

from profcompare.analysis import replicas
from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count
from profcompare.render.html_model import bytes_cell, diff_cells, pct_cell, sort_key, text_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import _missing_sides, limit
from profcompare.render.sections.listing import (
    DIFF_COLUMNS,
    empty_word,
    other_diff_row,
    other_label,
    side_by_side,
    yes_no,
)

#: the title of the section in every medium, and its anchor on a page
STREAMING_TITLE = "Streaming Memory"
STREAMING_ID = "streaming"
_TABLE_ID = "remote-table"

#: what Streaming Memory is, said before the table of a report and of a comparison
STREAMING_TEXT = (
    "Remote buffers live in Streaming Memory (off chip), not in tile memory: moving state there frees tile memory "
    "at the cost of remote transfers. Bytes are per replica; sharded buffers (replicated tensor sharding) hold "
    "1/replicas of the tensor on each replica."
)


def streaming_totals_note(report: Report) -> str | None:
    """Streaming Memory over all replicas, in one sentence (None for one replica or no buffer)."""
    totals = replicas.streaming_totals(report)
    if totals.replicas <= 1 or not totals.per_replica:
        return None
    text = (f"All {totals.replicas} replicas: {format_bytes(totals.all_replicas)} = "
            f"{format_bytes(totals.per_replica)} per replica x {totals.replicas} (exact: each replica holds its "
            "own remote buffers")
    if totals.sharded_per_replica:
        text += (f"; the replica-sharded ones, {format_bytes(totals.sharded_per_replica)} per replica, "
                 f"are a different shard on each replica, {format_bytes(totals.sharded_all_replicas)} in all")
    return text + ")."


def comparison_streaming_totals_note(base: Report, new: Report) -> str | None:
    """Streaming Memory over all replicas of both reports, in one sentence (None when neither
    has more than one replica and a buffer)."""
    b, n = replicas.streaming_totals(base), replicas.streaming_totals(new)
    if max(b.replicas, n.replicas) <= 1 or not (b.per_replica or n.per_replica):
        return None
    return (f"Over all replicas (per replica x replicas, exact): base {format_bytes(b.all_replicas)} "
            f"({b.replicas} x {format_bytes(b.per_replica)}), new {format_bytes(n.all_replicas)} "
            f"({n.replicas} x {format_bytes(n.per_replica)}).")


_REPORT_COLUMNS = (
    Column("Remote buffer", key="name"),
    Column("Entries", True, key="entries"),
    Column("Entry shape", key="shape"),
    Column("Dtype", key="dtype"),
    Column("Sharded", key="sharded"),
    Column("Bytes", True, key="bytes"),
)


def report_streaming_section(report: Report, top: int | None = None) -> Section:
    """Return the Streaming Memory section of one report: its ``top`` largest remote buffers
    (None: all), footer rows summing the rest ("other") and all of them ("total"), and notes
    saying what was cut, how many buffers are replica-sharded and the bytes over all replicas."""
    remote = report.remote_buffers
    view = analysis.top_n(remote, limit(top), "bytes", label_column="name", sum_columns=("bytes", "entries"))
    rows = tuple(
        Row(
            (
                text_cell(r.name),
                Cell(format_count(r.entries), sort_key(r.entries)),
                text_cell(r.shape),
                text_cell(r.dtype),
                Cell("yes" if bool(r.sharded) else "no"),
                bytes_cell(r.bytes),
            )
        )
        for r in view.shown_rows.itertuples(index=False)
    )
    footer: tuple[Row, ...] = ()
    if view.has_other:
        other = view.other
        assert other is not None
        footer += (Row((Cell(other_label(view, "remote buffers")), Cell(format_count(other["entries"]),
                        sort_key(other["entries"])), Cell(""), Cell(""), Cell(""), bytes_cell(other["bytes"]))),)
    notes: tuple[str, ...] = ()
    if len(remote):
        footer += (Row((Cell("total"), Cell(""), Cell(""), Cell(""), Cell(""), bytes_cell(int(remote["bytes"].sum())))),)
        notes = (cut_note(view, "remote buffers"),
                 f"Total per replica: {format_bytes(remote['bytes'].sum())} in {len(remote):,} buffers "
                 f"({int(remote['sharded'].sum()):,} replica-sharded).")
        totals = streaming_totals_note(report)
        notes += (totals,) if totals else ()
    table = Table(_REPORT_COLUMNS, rows, id=_TABLE_ID, footer=footer,
                  empty=empty_word(report.meta, "remote_buffers", "No remote buffers: nothing is kept in Streaming "
                                                                  "Memory."))
    return Section(STREAMING_TITLE, (table,), notes, id=STREAMING_ID, text=STREAMING_TEXT if len(remote) else "",
                   notes_on_table=True)


def comparison_streaming_section(cmp: Comparison, top: int | None = None) -> Section:
    """Return the Streaming Memory section of a comparison: the ``top`` remote buffers whose bytes
    changed most (None: all) with base, new, delta, status, and whether each is sharded and its
    entries on each side (``base → new`` where they differ); footer rows summing the rest
    ("other") and all of them ("total"); notes saying what was cut, which report records no
    remote buffers and the bytes over all replicas. A change here costs no tile memory, so no
    figure is coloured."""
    remote = cmp.remote_buffers
    view = cmp.top("remote_buffers", limit(top))
    rows = tuple(
        Row(
            (
                text_cell(r["name"]),
                *(replace(c, tone=None) for c in diff_cells(r)),
                Cell(side_by_side(yes_no(r["base_sharded"]), yes_no(r["new_sharded"]), str(r["status"]))),
                Cell(side_by_side(format_count(r["base_entries"]), format_count(r["new_entries"]), str(r["status"]))),
            ),
            {"status": str(r["status"])},
        )
        for r in view.shown_rows.to_dict("records")
    )
    columns = (Column("Remote buffer", key="name"), *DIFF_COLUMNS, Column("Sharded", key="sharded"),
               Column("Entries", key="entries"))
    footer = other_diff_row(view, "remote buffers", leading=0, trailing=2)
    notes: tuple[str, ...] = ()
    if len(remote):
        base, new = int(remote["base_bytes"].sum()), int(remote["new_bytes"].sum())
        footer += (Row((Cell("total"), bytes_cell(base), bytes_cell(new), bytes_cell(new - base, signed=True),
                        pct_cell(100.0 * (new - base) / base if base else None), Cell(""), Cell(""), Cell(""))),)
        notes = (cut_note(view, "remote buffers"),)
    missing = _missing_sides(cmp, "remote_buffers")
    totals = comparison_streaming_totals_note(cmp.base, cmp.new)
    notes += (*missing, *((totals,) if totals else ()))
    empty = ("neither report records remote buffers" if len(missing) == 2
             else "neither report keeps anything in Streaming Memory")
    table = Table(columns, rows, id=_TABLE_ID, footer=footer, empty=empty)
    return Section(STREAMING_TITLE, (table,), notes, id=STREAMING_ID, text=STREAMING_TEXT if len(remote) else "",
                   notes_on_table=True)


__all__ = ["STREAMING_ID", "STREAMING_TEXT", "STREAMING_TITLE", "comparison_streaming_section",
           "comparison_streaming_totals_note", "report_streaming_section", "streaming_totals_note"]
