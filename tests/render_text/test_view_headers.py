"""Every view of one report or of two opens with the same header: the ops and tiles commands and
compare --at warn of a report out of memory, simulated or compile-only as show and compare do."""

from __future__ import annotations

from profcompare.comparison import Comparison, compare
from profcompare.model import Report
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.operations import operations_document
from profcompare.render.sections.tile_detail import tile_detail_document


def test_one_report_views_share_the_show_header(offchip: Report) -> None:
    oom = offchip.with_meta(offchip.meta.replace(oom=True, execution="compile-only"))
    shown = report_document(oom)
    assert len(shown.warnings) == 3 and shown.warnings[0].startswith("OUT OF MEMORY")
    for document in (operations_document(oom), tile_detail_document(oom)):
        assert document.warnings == shown.warnings
        assert document.facts == shown.facts[:2]  # what it is and its source; show adds target, workload...


def test_comparison_views_share_the_compare_header(comparison: Comparison, onchip: Report, offchip: Report) -> None:
    full = comparison_document(comparison)
    ops = operations_document(comparison)
    tiles = tile_detail_document(comparison)
    for document in (ops, tiles):
        assert document.warnings == full.warnings
        assert document.facts[:4] == full.facts[:4]  # base, base source, new, new source
    assert full.warnings[0].startswith("SIMULATED: both reports")
    oom = compare(onchip, offchip.with_meta(offchip.meta.replace(oom=True)))
    assert tile_detail_document(oom).warnings[0].startswith("OUT OF MEMORY")
