"""The "Memory per IPU" sections of ``show`` and ``compare`` (text, markdown: through ``render/sections/``)
and of the HTML page: by tile set one section that all three draw; per IPU still one for text and
Markdown and one for the page (whose IPU column holds the bare number, sorted as one). Present
only when a report has more than one IPU per replica, or I/O tiles (``show``: then by tile set,
the I/O tiles as their own group), so single-IPU outputs without I/O tiles are unchanged."""

from __future__ import annotations

from profcompare.analysis.memory_per_ipu import compare_memory_per_ipu, ipu_count, memory_per_ipu
from profcompare.model import Report
from profcompare.analysis.replicas import io_tiles_per_ipu, memory_per_tile_set
from profcompare.render.format import format_bytes, format_count
from profcompare.render.html_model import bytes_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table

_HEADERS = ("Always-live", "Not-always-live (tile peaks)", "Total", "Including gaps")
_COLUMNS = ("always_live_bytes", "not_always_live_peak_bytes", "total_bytes", "bytes_including_gaps")
_NOTE = ("Per IPU of one replica, summed over its tiles. Total = always-live + not-always-live (tile peaks) "
         "(excluding gaps): each tile's not-always-live peak, whenever it falls, summed -- not the summary's "
         "not-always-live peak, the most all tiles hold at one step.")


_TILE_SET_HEADERS = ("IPU", "Tile set", "Tiles", *_HEADERS, "Fullest tile")
_TILE_SET_NOTE = ("Per IPU of one replica and tile set: the I/O tiles (the first {io} tiles of each IPU) apart "
                  "from the compute tiles, summed over their tiles; the fullest tile includes gaps. Total = "
                  "always-live + not-always-live (tile peaks) (excluding gaps): each tile's not-always-live peak, "
                  "whenever it falls, summed -- not the summary's not-always-live peak, the most all tiles hold at "
                  "one step.")


def _tile_set_rows(report: Report) -> tuple[tuple[str, ...], ...]:
    """The rows of the per-IPU, per-tile-set table (display strings, ``_TILE_SET_HEADERS``)."""
    frame = memory_per_tile_set(report)
    return tuple((f"IPU {int(r['ipu'])}", str(r["tile_set"]), format_count(r["tiles"]),
                  *(format_bytes(r[c]) for c in _COLUMNS), format_bytes(r["max_tile_bytes"]))
                 for r in frame.to_dict("records"))


def _tile_set_section(report: Report, io: int) -> Section:
    """The "Memory per IPU" section of a report with ``io`` I/O tiles per IPU, by tile set: drawn
    alike by text, Markdown and the HTML page."""
    columns = tuple(Column(h, i >= 2, key=f"c{i}") for i, h in enumerate(_TILE_SET_HEADERS))
    rows = tuple(Row(tuple(Cell(c) for c in row)) for row in _tile_set_rows(report))
    table = Table(columns, rows, id="memory-per-ipu-table")
    return Section("Memory per IPU", (table,), (_TILE_SET_NOTE.format(io=io),), id="memory-per-ipu",
                   notes_on_table=True)


def report_ipu_section(report: Report) -> Section | None:
    """The "Memory per IPU" Section of one report (by tile set when it has I/O tiles), or None
    with a single IPU per replica and no I/O tiles."""
    io = io_tiles_per_ipu(report)
    if io:
        return _tile_set_section(report, io)
    if ipu_count(report) <= 1:
        return None
    frame = memory_per_ipu(report)
    rows = tuple(
        (Cell(f"IPU {int(r.ipu)}"), Cell(format_count(r.tiles)))
        + tuple(Cell(format_bytes(getattr(r, c))) for c in _COLUMNS)
        for r in frame.itertuples(index=False)
    )
    columns = (Column("IPU"), Column("Tiles", True)) + tuple(Column(h, True) for h in _HEADERS)
    return Section("Memory per IPU", (Table.of(columns, rows),), (_NOTE,))


def comparison_ipu_section(base: Report, new: Report) -> Section | None:
    """The "Memory per IPU" Section of a comparison (base, new, delta of always-live,
    not-always-live peak and total per IPU), or None when both reports have one IPU."""
    if max(ipu_count(base), ipu_count(new)) <= 1:
        return None
    frame = compare_memory_per_ipu(base, new)
    rows = []
    for r in frame.to_dict("records"):
        cells = [Cell(f"IPU {int(r['ipu'])}")]
        for c in _COLUMNS[:3]:
            cells += [Cell(format_bytes(r[f"base_{c}"])), Cell(format_bytes(r[f"new_{c}"])),
                      Cell(format_bytes(r[f"delta_{c}"], signed=True))]
        rows.append(tuple(cells))
    columns = [Column("IPU")]
    for h in _HEADERS[:3]:
        columns += [Column(f"{h} base", True), Column(f"{h} new", True), Column(f"{h} delta", True)]
    return Section("Memory per IPU", (Table.of(tuple(columns), tuple(rows)),), (_NOTE,))


def html_report_ipu_section(report: Report) -> Section | None:
    """The HTML page's "Memory per IPU" section of one report, or None with a single IPU per
    replica and no I/O tiles (by tile set it is the section :func:`report_ipu_section` builds;
    per IPU, the page's cells carry sort keys and exact bytes)."""
    io = io_tiles_per_ipu(report)
    if io:
        return _tile_set_section(report, io)
    if ipu_count(report) <= 1:
        return None
    frame = memory_per_ipu(report)
    cols = (Column("IPU", True, key="ipu"), Column("Tiles", True, key="tiles"),
            *(Column(h, True, key=c) for h, c in zip(_HEADERS, _COLUMNS)))
    rows = tuple(Row((Cell(f"{int(r['ipu'])}", int(r["ipu"])),
                      Cell(format_count(r["tiles"]), int(r["tiles"])),
                      *(bytes_cell(r[c]) for c in _COLUMNS)))
                 for r in frame.to_dict("records"))
    return _html_section(cols, rows)


def html_comparison_ipu_section(base: Report, new: Report) -> Section | None:
    """The HTML page's "Memory per IPU" section of a comparison, or None when both reports have
    one IPU per replica."""
    if max(ipu_count(base), ipu_count(new)) <= 1:
        return None
    frame = compare_memory_per_ipu(base, new)
    columns = [Column("IPU", True, key="ipu")]
    for h, c in zip(_HEADERS[:3], _COLUMNS[:3]):
        columns += [Column(f"{h} base", True, key=f"base_{c}"), Column(f"{h} new", True, key=f"new_{c}"),
                    Column(f"{h} delta", True, key=f"delta_{c}")]
    rows = tuple(Row((Cell(f"{int(r['ipu'])}", int(r["ipu"])),
                      *(cell for c in _COLUMNS[:3]
                        for cell in (bytes_cell(r[f"base_{c}"]), bytes_cell(r[f"new_{c}"]),
                                     bytes_cell(r[f"delta_{c}"], signed=True)))))
                 for r in frame.to_dict("records"))
    return _html_section(tuple(columns), rows)


def _html_section(columns: tuple[Column, ...], rows: tuple[Row, ...]) -> Section:
    table = Table(columns, rows, id="memory-per-ipu-table", note=_NOTE)
    return Section("Memory per IPU", id="memory-per-ipu", tables=(table,))


__all__ = ["comparison_ipu_section", "html_comparison_ipu_section", "html_report_ipu_section", "report_ipu_section"]
