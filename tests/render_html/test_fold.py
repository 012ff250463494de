"""Which sections the page folds and the one line each folded section shows (the browser checks
that they open: test_page_reading.py)."""

from __future__ import annotations

from profcompare.comparison import compare
from profcompare.model import Report
from profcompare.render.html import HtmlRenderer, build_page
from profcompare.render.page.fold import DETAIL_SECTIONS, headline
from profcompare.render.page.model import Cell, Column, Row, Section, Table


def test_the_comparison_page_folds_its_detail_views_with_a_headline(onchip: Report, offchip: Report) -> None:
    page = build_page(compare(onchip, offchip))
    assert dict(page.folds) == {
        "tiles": "fullest tile 152.2 KiB \u2192 268.7 KiB; tiles over budget 0 \u2192 0; "
                 "1,469 of 1,472 tiles changed beyond the noise threshold",
        "variables": "33 variables; largest change layer0/weight/second_moment -1.5 MiB",
        "code": "12 programs; largest change fwd/matmul0 +346.7 KiB",
        "streaming": "8 remote buffers; largest change layer0/weight/second_moment +392.0 KiB",
        "execution": "largest change Streaming Memory +867,782 cycles",
        "tile-detail": "base: tile 0 is the fullest: 152.2 KiB, 2.9x the median tile (51.9 KiB); "
                       "new: tile 0 is the fullest: 268.7 KiB, 5.3x the median tile (50.3 KiB)",
    }
    # the answer stays open: every section before the detail views
    open_ids = [s.id for s in page.sections if s.id not in page.folds]
    assert open_ids == ["verdict", "config", "moves", "ledger", "time-diff", "liveness", "peak", "summary", "memory"]
    assert not set(open_ids) & DETAIL_SECTIONS


def test_a_report_page_folds_with_its_largest_figures(offchip: Report) -> None:
    assert dict(build_page(offchip).folds) == {
        "tiles": "fullest tile 268.7 KiB; tiles over budget 0",
        "variables": "25 variables; largest layer0/weight 1.5 MiB",
        "code": "12 programs; largest fwd/matmul0 386.9 KiB (code bytes)",
        "streaming": "8 remote buffers; largest layer0/weight/second_moment 392.0 KiB",
        "execution": "largest Streaming Memory 867,782 (device cycles per step)",
        "tile-detail": "tile 0 is the fullest: 268.7 KiB, 5.3x the median tile (50.3 KiB)",
    }


def test_a_folded_section_is_a_button_its_headline_and_a_body(onchip: Report, offchip: Report) -> None:
    html = HtmlRenderer().render(compare(onchip, offchip))
    assert ('<section id="code" class="section fold">\n  <h2 class="fold-head"><button type="button" '
            'class="fold-toggle" id="code-toggle" aria-expanded="true" aria-controls="code-body">Code by program'
            '</button> <span class="fold-headline" title="12 programs; largest change fwd/matmul0 +346.7 KiB">'
            '12 programs; largest change fwd/matmul0 +346.7 KiB</span></h2>\n  <div class="fold-body" id="code-body">'
            ) in html
    assert '<section id="verdict" class="section">\n  <h2>Verdict</h2>' in html


def test_a_headline_names_the_largest_change_cut_in_the_middle() -> None:
    long = "DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@449"
    table = Table(
        (Column("Op", key="name"), Column("Base cycles", True, key="base_cycles"), Column("Delta", True, key="delta")),
        (Row((Cell("small"), Cell("1", 1), Cell("+5", 5))), Row((Cell(long), Cell("9", 9), Cell("-700", -700)))),
        note="Top 2 of 312 ops shown; 310 more in the 'other' row.")
    assert headline(Section("Operations", (table,), id="operations")) == (
        "312 ops; largest change DecoderLayer_subgraph\u2026operand_copies@449 -700 cycles")
    unchanged = Table(table.columns, (Row((Cell("a"), Cell("1", 1), Cell("0", 0))),))
    assert headline(Section("Operations", (unchanged,), id="operations")) == "no change"
    assert headline(Section("Execution", notes=("Neither report has an execution profile. More.",))) == (
        "Neither report has an execution profile")
