"""The "Program tree" section: a report's program tree and two aligned trees, cut from the top
of the tree with an "other" row, drawn alike by the terminal, the Markdown and the HTML page --
pinned on small trees built by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from profcompare.comparison import Comparison, compare
from profcompare.model import Report, ReportMeta, Target
from profcompare.render.html import build_page
from profcompare.render.page.model import Section, Table, TableFilter, placed_for_page
from profcompare.render.section_names import SECTION_NAMES
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.order import (
    PAGE_PROGRAMS,
    RowLimits,
    _comparison_builders,
    comparison_sections,
    report_sections,
)
from profcompare.render.sections.programs import (
    TREE_SENTENCE,
    comparison_programs_section,
    indented,
    report_programs_section,
    tree_top,
)
from profcompare.render.text import render_document as render_text

from tests.compare.program_trees import BASE, NEW

_ = "\u00a0"  # the indentation is of non-breaking spaces, so a page and Markdown keep it


def _meta(source: str) -> ReportMeta:
    return ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))


@pytest.fixture()
def base() -> Report:
    return Report.build(_meta("base"), programs=BASE)


@pytest.fixture()
def cmp(base: Report) -> Comparison:
    return compare(base, Report.build(_meta("new"), programs=NEW))


def _texts(table: Table | None, footer: bool = False) -> list[list[str]]:
    assert table is not None
    return [[cell.text for cell in row] for row in (table.footer if footer else table.rows)]


def test_a_report_s_tree_in_order_indented_by_depth(base: Report) -> None:
    section = report_programs_section(base, None)
    assert section is not None
    assert (section.title, section.id, section.charts) == ("Program tree", "programs", ())
    table = section.table
    assert table is not None and table.id == "programs-table" and not table.sortable
    assert [c.header for c in table.columns] == ["Program", "Kind", "Op", "IPU", "Programs"]
    assert _texts(table) == [
        ["main", "Sequence", "", "", "7"],
        ["└ matmul/100", "Sequence", "matmul", "0", "3"],
        [f"{_}{_}└ matmul/100/Convolve", "OnTileExecute", "matmul", "0", "1"],
        [f"{_}{_}└ matmul/100/Internal Sync", "Sync", "matmul", "0", "1"],
        ["└ relu", "Sequence", "relu", "0", "2"],
        [f"{_}{_}└ relu", "OnTileExecute", "relu", "0", "1"],
        ["└ copy/Begin", "StreamCopyBegin", "", "0", "1"],
    ]
    assert not table.footer
    # the page's tree: ids, parents, depths, the roots open
    assert [dict(row.data) for row in table.rows[:3]] == [
        {"name": "main", "id": "p0", "parent": "", "depth": "0", "open": "true"},
        {"name": "matmul/100", "id": "p1", "parent": "p0", "depth": "1", "open": "false"},
        {"name": "matmul/100/Convolve", "id": "p2", "parent": "p1", "depth": "2", "open": "false"}]
    assert table.tree
    # the kind's swatch is the trace's colour of its block type; a Sequence has none
    assert [row[1].swatch for row in table.rows] == [None, None, "#3b6fb6", "#e57373", None, "#3b6fb6", "#a5d6a7"]
    assert table.filter == TableFilter("program name (substring)")
    assert section.notes == ("All 7 programs shown.", TREE_SENTENCE)
    assert TREE_SENTENCE == ("Poplar's program tree: the programs the compiled graph runs, nested as Poplar nests "
                             "them; each op lowers to a Sequence of steps.")
    assert indented("x", 3) == f"{_}{_}{_}{_}└ x"


def test_a_long_tree_shows_its_top_and_counts_the_rest(base: Report) -> None:
    # 4 rows: the root and its three children (depth <= 1); depth 2 would make 7
    section = report_programs_section(base, 4)
    assert section is not None
    assert _texts(section.table) == [
        ["main", "Sequence", "", "", "7"],
        ["└ matmul/100", "Sequence", "matmul", "0", "3"],
        ["└ relu", "Sequence", "relu", "0", "2"],
        ["└ copy/Begin", "StreamCopyBegin", "", "0", "1"],
    ]
    assert _texts(section.table, footer=True) == [["other (3 programs)", "", "", "", "3"]]
    assert section.notes == ("Top 4 of 7 programs shown; 3 more in the 'other' row. Shown: every program down to "
                             "depth 1 (0: a root).", TREE_SENTENCE)
    # room for the roots, not their children: the roots alone
    # one row more: the first program of the next level too
    section = report_programs_section(base, 5)
    assert section is not None
    assert [row[0].text for row in section.table.rows] == [  # type: ignore[union-attr]
        "main", "└ matmul/100", f"{_}{_}└ matmul/100/Convolve", "└ relu", "└ copy/Begin"]
    assert _texts(section.table, footer=True) == [["other (2 programs)", "", "", "", "2"]]
    assert section.notes[0] == ("Top 5 of 7 programs shown; 2 more in the 'other' row. Shown: every program down to "
                                "depth 1 (0: a root) and 1 of the 3 at depth 2.")
    # a wide level: the roots, then the first children that fit
    cut = tree_top([0, 1, 1, 1, 0, 1], 3)
    assert (cut.keep.tolist(), cut.level, cut.partial, cut.next_level) == (
        [True, True, False, False, True, False], 0, 1, 4)
    # after the roots the enclosing rows, then each level with its first-put rows first
    cut = tree_top([0, 1, 1, 2, 1, 0, 1], 4, enclosing=np.array(
        [True, False, True, False, False, False, False]), first=np.array(
        [False, False, False, True, False, False, True]))
    # roots 0 and 5, the enclosing 2, then at depth 1 the first-put 6 before 1 and 4
    assert cut.keep.tolist() == [True, False, True, False, False, True, True]
    # not even the roots fit: the first roots
    cut = tree_top([0, 0, 0], 2)
    assert (cut.keep.tolist(), cut.level, cut.partial) == ([True, True, False], -1, 2)
    assert tree_top([0, 1], None).keep.tolist() == [True, True]


def test_the_terminal_draws_the_cut_tree(base: Report) -> None:
    drawn = render_text(report_document(base, top=4))
    at = drawn.index("Program tree\n------------\n")
    assert drawn[at:].split("\n")[2:9] == [
        "Program              Kind              Op       IPU   Programs",
        "──────────────────────────────────────────────────────────────",
        "main                 Sequence                                7",
        "└ matmul/100         Sequence          matmul     0          3",
        "└ relu               Sequence          relu       0          2",
        "└ copy/Begin         StreamCopyBegin              0          1",
        "other (3 programs)                                           3",
    ]
    # after the execution trace's place, before liveness
    ids = [s.id for s in report_sections(base, RowLimits.every(4))]
    assert ids.index("programs") > ids.index("code")


def test_two_trees_aligned_with_an_added_subtree(cmp: Comparison) -> None:
    section = comparison_programs_section(cmp, None)
    assert section is not None
    table = section.table
    assert table is not None
    assert [c.header for c in table.columns] == ["Program", "Kind", "Base programs", "New programs", "Delta", "Status"]
    assert _texts(table) == [
        ["main", "Sequence", "7", "8", "+1", "changed"],
        ["└ matmul/102", "Sequence", "3", "4", "+1", "changed"],
        [f"{_}{_}└ matmul/102/Convolve", "OnTileExecute", "1", "1", "0", "unchanged"],
        [f"{_}{_}└ matmul/102/Internal Sync", "Sync", "1", "1", "0", "unchanged"],
        [f"{_}{_}└ matmul/102/Reduce", "OnTileExecute", "0", "1", "+1", "added"],
        ["└ relu", "Sequence", "2", "0", "-2", "removed"],
        [f"{_}{_}└ relu", "OnTileExecute", "1", "0", "-1", "removed"],
        ["└ gelu", "Sequence", "0", "2", "+2", "added"],
        [f"{_}{_}└ gelu", "OnTileExecute", "0", "1", "+1", "added"],
        ["└ copy/Begin", "StreamCopyBegin", "1", "1", "0", "unchanged"],
        ["WeightsFromHost", "Sequence", "0", "1", "+1", "added"],
    ]
    # tones as the other listings: added costs, removed frees, changed is not coloured
    assert [(row[4].tone, row[5].tone) for row in table.rows[:2]] == [(None, None)] * 2
    assert (table.rows[7][5].tone, table.rows[5][5].tone) == ("bad", "good")
    assert dict(table.rows[7].data) == {"name": "gelu", "status": "added", "id": "p7", "parent": "p0", "depth": "1",
                                        "open": "false"}
    # a page opens the roots and the programs enclosing a difference
    assert [row.data["open"] for row in table.rows] == ["true", "true"] + ["false"] * 8 + ["true"]
    assert table.rows[1][0].title == "base: matmul/100; new: matmul/102"
    assert table.filter == TableFilter("program name (substring)",
                                       (("status", "Status", ("added", "removed", "changed", "unchanged")),))
    assert section.notes == ("All 11 programs shown.", TREE_SENTENCE)


def test_a_cut_comparison_keeps_where_the_trees_part_then_the_top(cmp: Comparison) -> None:
    # the roots (main, WeightsFromHost), the changed matmul/102, at depth 1 the removed relu and
    # the added gelu before the copy, at depth 2 the added Reduce first: 7 rows
    section = comparison_programs_section(cmp, 7)
    assert section is not None
    assert _texts(section.table) == [
        ["main", "Sequence", "7", "8", "+1", "changed"],
        ["└ matmul/102", "Sequence", "3", "4", "+1", "changed"],
        [f"{_}{_}└ matmul/102/Reduce", "OnTileExecute", "0", "1", "+1", "added"],
        ["└ relu", "Sequence", "2", "0", "-2", "removed"],
        ["└ gelu", "Sequence", "0", "2", "+2", "added"],
        ["└ copy/Begin", "StreamCopyBegin", "1", "1", "0", "unchanged"],
        ["WeightsFromHost", "Sequence", "0", "1", "+1", "added"],
    ]
    # left out: Convolve and Sync (both sides), relu's and gelu's children (one side each)
    assert _texts(section.table, footer=True) == [["other (4 programs)", "", "3", "3", "0", ""]]
    assert section.notes[0] == ("Top 7 of 11 programs shown; 4 more in the 'other' row. Shown: every program down "
                                "to depth 1 (0: a root) and 1 of the 5 at depth 2. Where the trees differ comes "
                                "first: the programs enclosing a difference, then at each depth the added and "
                                "removed programs.")
    # a smaller table: the roots, the changed matmul, then the removed and the added subtree
    small = comparison_programs_section(cmp, 5)
    assert small is not None
    assert [row[0].text for row in small.table.rows] == [  # type: ignore[union-attr]
        "main", "└ matmul/102", "└ relu", "└ gelu", "WeightsFromHost"]


def test_no_tree_no_section(base: Report, cmp: Comparison) -> None:
    bare = Report.build(_meta("bare"))
    assert report_programs_section(bare) is None
    assert comparison_programs_section(compare(bare, bare)) is None
    assert "programs" not in [s.id for s in report_sections(bare, RowLimits.every(20))]
    assert comparison_sections(compare(bare, bare), RowLimits.every(20), names={"programs"}) == ()
    # one side without a tree: the other's programs are all added
    one = comparison_programs_section(compare(bare, base), None)
    assert one is not None and {row.data["status"] for row in one.table.rows} == {"added"}  # type: ignore[union-attr]
    assert SECTION_NAMES["programs"] == "Program tree"
    # beside what it explains: after code by program and the operations
    assert list(SECTION_NAMES).index("programs") == list(SECTION_NAMES).index("operations") + 1 \
        == list(SECTION_NAMES).index("code") + 2
    assert [name for name, build in _comparison_builders(cmp, RowLimits(), None, None)] == list(SECTION_NAMES)
    assert [s.id for s in comparison_sections(cmp, RowLimits(), names={"trace", "programs", "liveness"})] == [
        "liveness", "programs"]
    assert (RowLimits.page().programs, RowLimits.every(5).programs, PAGE_PROGRAMS) == (200, 5, 200)


def _page_section(obj: Report | Comparison) -> Section:
    return next(s for s in build_page(obj, top=3).sections if s.id == "programs")


def test_the_page_holds_the_section_of_the_text_document(base: Report, cmp: Comparison) -> None:
    for obj, document in ((base, report_document(base, top=20)), (cmp, comparison_document(cmp, top=20))):
        text_section = next(s for s in document.sections if s.id == "programs")
        page_section = _page_section(obj)
        assert dataclasses.replace(page_section, charts=()) == placed_for_page(text_section)
        assert page_section.table is not None
        assert page_section.table.note.startswith("All ") and page_section.table.note.endswith(TREE_SENTENCE)
    # the page keeps up to 200 programs, whatever --top: the whole tree, no "other" row
    page_section = _page_section(cmp)
    assert page_section.table is not None and len(page_section.table.rows) == 11 and not page_section.table.footer
