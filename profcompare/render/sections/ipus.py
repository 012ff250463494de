"""The "Memory per IPU" section of every output (terminal, Markdown, HTML): a report's memory per
IPU of one replica (by tile set when it has I/O tiles, the I/O tiles as their own group), or a
comparison's base, new and delta per IPU. Present only with more than one IPU per replica or
with I/O tiles, so single-IPU outputs without I/O tiles do not have it."""

from __future__ import annotations

from profcompare.analysis.memory_per_ipu import compare_memory_per_ipu, ipu_count, memory_per_ipu
from profcompare.analysis.replicas import io_tiles_per_ipu, memory_per_tile_set
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_count
from profcompare.render.html_model import bytes_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table

#: The one title of the section in every output.
IPUS_TITLE = "Memory per IPU"

_HEADERS = ("Always-live", "Not-always-live (tile peaks)", "Total", "Including gaps")
_COLUMNS = ("always_live_bytes", "not_always_live_peak_bytes", "total_bytes", "bytes_including_gaps")
_NOTE = ("Per IPU of one replica, summed over its tiles. Total = always-live + not-always-live (tile peaks) "
         "(excluding gaps): each tile's not-always-live peak, whenever it falls, summed -- not the summary's "
         "not-always-live peak, the most all tiles hold at one step.")

_TILE_SET_NOTE = ("Per IPU of one replica and tile set: the I/O tiles (the first {io} tiles of each IPU) apart "
                  "from the compute tiles, summed over their tiles; the fullest tile includes gaps. Total = "
                  "always-live + not-always-live (tile peaks) (excluding gaps): each tile's not-always-live peak, "
                  "whenever it falls, summed -- not the summary's not-always-live peak, the most all tiles hold at "
                  "one step.")


def _ipu_cell(ipu: object) -> Cell:
    """``IPU 0``; its sort key zero-padded, so that a page sorting the column as text puts IPU 2
    before IPU 10."""
    number = int(ipu)  # type: ignore[call-overload]
    return Cell(f"IPU {number}", f"{number:04d}")


def _section(columns: tuple[Column, ...], rows: tuple[Row, ...], note: str) -> Section:
    table = Table(columns, rows, id="memory-per-ipu-table")
    return Section(IPUS_TITLE, (table,), (note,), id="memory-per-ipu", notes_on_table=True)


def _tile_set_section(report: Report, io: int) -> Section:
    """Memory per IPU and tile set of a report with ``io`` I/O tiles per IPU."""
    columns = (Column("IPU", key="ipu"), Column("Tile set", key="tile_set"), Column("Tiles", True, key="tiles"),
               *(Column(h, True, key=c) for h, c in zip(_HEADERS, _COLUMNS, strict=True)),
               Column("Fullest tile", True, key="max_tile_bytes"))
    rows = tuple(Row((_ipu_cell(r["ipu"]), Cell(str(r["tile_set"])), Cell(format_count(r["tiles"]), int(r["tiles"])),
                      *(bytes_cell(r[c]) for c in _COLUMNS), bytes_cell(r["max_tile_bytes"])))
                 for r in memory_per_tile_set(report).to_dict("records"))
    return _section(columns, rows, _TILE_SET_NOTE.format(io=io))


def report_ipu_section(report: Report) -> Section | None:
    """The "Memory per IPU" section of one report: per IPU its tiles and always-live,
    not-always-live (tile peaks), total and including-gaps bytes (by tile set when it has I/O
    tiles); None with a single IPU per replica and no I/O tiles."""
    io = io_tiles_per_ipu(report)
    if io:
        return _tile_set_section(report, io)
    if ipu_count(report) <= 1:
        return None
    columns = (Column("IPU", key="ipu"), Column("Tiles", True, key="tiles"),
               *(Column(h, True, key=c) for h, c in zip(_HEADERS, _COLUMNS, strict=True)))
    rows = tuple(Row((_ipu_cell(r["ipu"]), Cell(format_count(r["tiles"]), int(r["tiles"])),
                      *(bytes_cell(r[c]) for c in _COLUMNS)))
                 for r in memory_per_ipu(report).to_dict("records"))
    return _section(columns, rows, _NOTE)


def comparison_ipu_section(cmp: Comparison) -> Section | None:
    """The "Memory per IPU" section of a comparison: per IPU the base, new and delta of
    always-live, not-always-live (tile peaks) and total bytes; None when both reports have one
    IPU per replica."""
    base, new = cmp.base, cmp.new
    if max(ipu_count(base), ipu_count(new)) <= 1:
        return None
    columns = [Column("IPU", key="ipu")]
    for h, c in zip(_HEADERS[:3], _COLUMNS[:3], strict=True):
        columns += [Column(f"{h} base", True, key=f"base_{c}"), Column(f"{h} new", True, key=f"new_{c}"),
                    Column(f"{h} delta", True, key=f"delta_{c}")]
    rows = tuple(Row((_ipu_cell(r["ipu"]),
                      *(cell for c in _COLUMNS[:3]
                        for cell in (bytes_cell(r[f"base_{c}"]), bytes_cell(r[f"new_{c}"]),
                                     bytes_cell(r[f"delta_{c}"], signed=True)))))
                 for r in compare_memory_per_ipu(base, new).to_dict("records"))
    return _section(tuple(columns), rows, _NOTE)


__all__ = ["IPUS_TITLE", "comparison_ipu_section", "report_ipu_section"]
