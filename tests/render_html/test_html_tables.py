"""HTML tables that are cut to top N: the "other" row the note promises, and identifiers."""

from __future__ import annotations

import numpy as np
from html_fixtures import MK2_TILES

from profcompare.comparison import compare
from profcompare.model import Report, make_frame
from profcompare.render.format import format_bytes
from profcompare.render.html import Page, Table, build_page


def _table(page: Page, section_id: str, index: int = 0) -> Table:
    section = next(s for s in page.sections if s.id == section_id)
    return section.tables[index]


def test_report_remote_buffers_cut_to_top_have_an_other_row(offchip: Report) -> None:
    remote = offchip.remote_buffers
    table = _table(build_page(offchip, top=3), "streaming")
    assert len(table.rows) == 3
    assert "more in the 'other' row" in table.note
    other, total = table.footer
    cut = remote.sort_values("bytes", ascending=False).iloc[3:]
    assert other.cells[0].text == f"other ({len(cut)} remote buffers)"
    assert other.cells[-1].text == format_bytes(cut["bytes"].sum())
    assert total.cells[0].text == "total" and total.cells[-1].text == format_bytes(remote["bytes"].sum())


def test_comparison_remote_buffers_cut_to_top_have_an_other_row(onchip: Report, offchip: Report) -> None:
    diff = compare(onchip, offchip)
    table = _table(build_page(diff, top=3), "streaming")
    assert len(table.rows) == 3
    assert "more in the 'other' row" in table.note
    other, total = table.footer
    cut = diff.top("remote_buffers", 3).other
    assert cut is not None
    assert other.cells[0].text == f"other ({len(diff.remote_buffers) - 3} remote buffers)"
    assert [c.text for c in other.cells[1:4]] == [
        format_bytes(cut["base_bytes"]),
        format_bytes(cut["new_bytes"]),
        format_bytes(cut["delta_bytes"], signed=True),
    ]
    assert total.cells[0].text == "total"


def test_remote_buffers_all_shown_have_only_the_total_row(offchip: Report) -> None:
    table = _table(build_page(offchip, top=50), "streaming")
    assert [row.cells[0].text for row in table.footer] == ["total"]
    assert table.note.startswith(f"All {len(offchip.remote_buffers)} remote buffers shown. Total per replica: 1.3 MiB in 8 "
                                 "buffers (8 replica-sharded). All 4 replicas: 5.3 MiB = 1.3 MiB per replica x 4")


def test_fullest_tiles_show_the_tile_index_without_thousands_separator(onchip: Report) -> None:
    used = np.arange(MK2_TILES, dtype="int64") * 10 + 100_000  # the last tile is the fullest
    tiles = make_frame(
        "tiles",
        {
            "tile": np.arange(MK2_TILES),
            "ipu": np.zeros(MK2_TILES, dtype="int64"),
            "bytes_including_gaps": used,
            "bytes_excluding_gaps": used,
            "always_live_bytes": used // 2,
            "not_always_live_peak_bytes": used // 4,
        },
    )
    report = Report.build(onchip.meta, tiles=tiles)
    worst = _table(build_page(report), "tiles", 1)
    assert worst.rows[0].cells[0].text == str(MK2_TILES - 1)


def test_report_page_shows_its_ledger_and_what_is_live_at_the_peak(offchip: Report) -> None:
    page = build_page(offchip, top=5)
    assert [s.id for s in page.sections[:4]] == ["summary", "ledger", "peak", "liveness"]
    ledger = offchip.ledger()
    table = _table(page, "ledger")
    assert len(table.rows) == len(ledger)
    first = ledger.sort_values(["bytes", "parameter"], ascending=[False, True]).iloc[0]
    assert [c.text for c in table.rows[0].cells[:4]] == [first["parameter"], first["role"], "always-live",
                                                         format_bytes(first["bytes"])]
    assert table.filter is not None and table.filter.selects[0][2] == (
        "always-live", "not-always-live", "Streaming Memory")
    live = offchip.live_at_peak()
    peak = _table(page, "peak")
    assert sum(r.cells[3].sort for r in peak.rows) + sum(
        (r.cells[3].sort for r in peak.footer), 0.0) == live["bytes"].sum()


def test_comparison_page_leads_with_the_ledger(onchip: Report, offchip: Report) -> None:
    diff = compare(onchip, offchip)
    page = build_page(diff, top=5)
    # the answer first, then the views over time, then the details
    assert [s.id for s in page.sections[:8]] == ["verdict", "config", "moves", "ledger", "time-diff", "liveness", "peak",
                                                 "summary"]
    moves = next(s for s in page.sections if s.id == "moves")
    assert moves.items[0] == (
        f"layer0.weight optimizer_state: {format_bytes(diff.ledger_moves(1)['base_always_live'].item())} always-live -> "
        f"{format_bytes(diff.ledger_moves(1)['new_streaming_memory'].item())} Streaming Memory")
    by_parameter = _table(page, "ledger", 0)
    expected = diff.ledger_by_parameter()
    shown = [(r.cells[0].text, r.cells[-1].sort) for r in by_parameter.rows]
    shown = [(r.cells[0].text, r.cells[5].sort) for r in by_parameter.rows]
    assert sorted(shown) == sorted(zip(expected["parameter"].replace("", "(no parameter)"),
                                       expected["delta_tile_memory"].astype(float), strict=True))
    assert [abs(d) for _, d in shown] == sorted((abs(d) for _, d in shown), reverse=True)
    rows = _table(page, "ledger", 1)
    assert len(rows.rows) == len(diff.ledger)
    peak = _table(page, "peak")
    assert sum(r.cells[-1].sort for r in (*peak.rows, *peak.footer)) == diff.peak_composition()["delta_bytes"].sum()


def test_ledger_table_notes_end_in_a_sentence_of_their_own(onchip: Report, offchip: Report) -> None:
    diff = compare(onchip, offchip)
    page = build_page(diff, top=5)
    by_parameter, rows = _table(page, "ledger", 0), _table(page, "ledger", 1)
    parameters = len(diff.ledger_by_parameter())
    # every parameter and every ledger row fit under the page's bounds: the note says so as a sentence
    assert by_parameter.note.endswith(f"not in the tile totals. All {parameters} parameters shown.")
    assert rows.note.endswith(f"first-last step. All {len(diff.ledger)} rows shown.")


def test_cell_tag_writes_escaped_cells_with_their_sort_key_and_tone() -> None:
    from markupsafe import Markup

    from profcompare.render.html_model import Cell, Column
    from profcompare.render.templates_env import cell_tag

    number, text = Column("Bytes", True, key="bytes"), Column("Type", key="type")
    assert cell_tag("td", Cell("1.0 KiB", 1024, "bad", "<b>"), number) == (
        '<td class="num tone-bad" data-sort="1024" title="&lt;b&gt;">1.0 KiB</td>')
    assert cell_tag("td", Cell("a<b", "a<b"), text) == "<td>a&lt;b</td>"  # sorts by its text: no data-sort
    assert cell_tag("td", Cell("x", "y&z", "good"), text) == '<td class="tone-good" data-sort="y&amp;z">x</td>'
    assert cell_tag("td", Cell(Markup("<i>kept</i>")), number) == '<td class="num"><i>kept</i></td>'


def test_a_long_name_is_cut_in_the_middle_whole_in_its_tooltip_and_sort_key() -> None:
    from profcompare.render.html_model import Cell, Column
    from profcompare.render.templates_env import PAGE_NAME_CHARS, cell_tag

    name, op = Column("Op", key="name"), Column("Op", key="op")
    long = "DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@<449>"
    assert PAGE_NAME_CHARS == 40
    assert cell_tag("td", Cell(long, long, "bad"), name) == (
        '<td class="name tone-bad" data-sort="DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@&lt;449&gt;" '
        'title="DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@&lt;449&gt;">'
        "DecoderLayer_subgra\u2026operand_copies@&lt;449&gt;</td>")
    # a name that fits is whole, classed a name (one line); a tooltip it had comes after the name
    assert cell_tag("td", Cell("fc1/matmul"), op) == '<td class="name">fc1/matmul</td>'
    cut = cell_tag("td", Cell("x" * 50, None, None, "2 tiles"), name)
    assert f'data-sort="{"x" * 50}" title="{"x" * 50}\n2 tiles">' in cut


def test_the_page_and_the_terminal_draw_one_ledger(onchip: Report, offchip: Report) -> None:
    from profcompare.render.ledger_words import liveness_rule
    from profcompare.render.sections import comparison_document, report_document
    from profcompare.render.sections.ledger import LEDGER_MAX_ROWS

    diff = compare(onchip, offchip)
    page = {s.id: s for s in build_page(diff, top=5).sections}
    document = {s.id: s for s in comparison_document(diff, top=LEDGER_MAX_ROWS).sections}
    # the same tables, rows and notes; the page adds the chart of the moves and states the liveness rule
    assert page["ledger"].tables == document["ledger"].tables and page["ledger"].notes == document["ledger"].notes
    assert page["moves"].items == document["moves"].items and not document["moves"].charts
    assert [c.id for c in page["moves"].charts] == ["ledger-plot"]
    rule = liveness_rule(("always_live",))
    assert page["ledger"].text == f"Liveness: {rule}" and document["ledger"].text == ""
    document = {s.id: s for s in comparison_document(diff, top=5).sections}
    assert page["peak"] == document["peak"]
    assert [s.title for s in (page["moves"], page["ledger"], page["peak"])] == [
        "Where the memory moved", "Memory ledger", "What changed the not-always-live peak"]
    report_page = {s.id: s for s in build_page(offchip, top=5).sections}
    report = {s.id: s for s in report_document(offchip, top=5).sections}
    assert report_page["peak"] == report["peak"]
    assert report_page["ledger"].text == f"Liveness: {rule} {report['ledger'].text}"
    assert report["ledger"].text.endswith(" or Streaming Memory. Every row is attributed.")
    # the page's data says how many ledger rows its table leaves out (none here)
    assert build_page(diff).data["ledger"] == {"total": len(diff.ledger), "shown": len(diff.ledger), "cut": 0}
