"""Folding runs of like siblings of the program tree: pinned on trees built by hand, in the
section every medium draws (terminal, Markdown, page, JSON sections, CSV table)."""

from __future__ import annotations

import pytest

from profcompare.comparison import Comparison, compare
from profcompare.model import Report, ReportMeta, Target, programs_from_rows
from profcompare.render.page.export import table_data, table_rows
from profcompare.render.sections.program_runs import fold_runs, name_pattern, run_kind, run_name
from profcompare.render.sections.programs import (
    FOLD_SENTENCE,
    TREE_SENTENCE,
    comparison_programs_section,
    report_programs_section,
)
from profcompare.render.markdown import render_document as render_markdown
from profcompare.render.sections import report_document
from profcompare.render.templates_env import row_tag
from profcompare.render.text import render_document as render_text

_ = "\u00a0"


def _meta(source: str) -> ReportMeta:
    return ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))


def _report(rows: list[tuple[int, int | None, int, str, str, str, int | None]]) -> Report:
    return Report.build(_meta("r"), programs=programs_from_rows(rows))


# main { relu/0 { step }, relu/1 { step }, ..., relu/4 { step }, gelu, copy/x/Begin, copy/y/Begin }
FIVE = [(0, None, 0, "Sequence", "main", "", None)]
for i in range(5):
    FIVE += [(1 + 2 * i, 0, 1, "Sequence", f"relu/{i}", f"relu{i}", 0),
             (2 + 2 * i, 1 + 2 * i, 2, "OnTileExecute", f"relu/{i}/step", f"relu{i}", 0)]
FIVE += [(11, 0, 1, "Sequence", "gelu", "gelu", 0), (12, 0, 1, "OnTileExecute", "copy/x/Begin", "", None),
         (13, 0, 1, "OnTileExecute", "copy/y/Begin", "", None)]


def test_name_patterns_and_labels() -> None:
    assert name_pattern("matmul/100") == "matmul/#"
    assert name_pattern("WeightsFromHost/adam.fc1.bias.step/Begin") == "WeightsFromHost/…/Begin"
    assert name_pattern("a/b") == "a/b"
    assert run_name(["relu/0", "relu/1", "relu/2"], 1) == "3 × relu/#"
    assert run_name(["W/a/Begin", "W/a/Mid", "W/a/End"] * 2, 3) == "2 × W/…/{Begin, Mid, End}"
    assert run_name(["init", "host_load"] * 3, 2) == "3 × {init, host_load}"
    assert run_kind(["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"], 3) == "StreamCopy{Begin, Mid, End}"
    assert run_kind(["Sequence", "Sequence"], 2) == "Sequence"


def test_fold_runs_on_keys() -> None:
    # five alike roots fold; a sixth unlike one does not; two alike stay two
    units = fold_runs([0] * 8, ["a"] * 5 + ["b", "c", "c"])
    assert [(u.members, u.period, u.repeats) for u in units] == [
        ((0, 1, 2, 3, 4), 1, 5), ((5,), 0, 1), ((6,), 0, 1), ((7,), 0, 1)]
    # a group of three repeated three times, then an incomplete group
    units = fold_runs([0] * 11, list("xyz" * 3) + ["x", "y"])
    assert [(u.members, u.period) for u in units] == [(tuple(range(9)), 3), ((9,), 0), ((10,), 0)]
    # None is alike to none; a group mixing statuses does not fold
    assert len(fold_runs([0] * 3, [None] * 3)) == 3
    assert len(fold_runs([0] * 6, ["a", "b"] * 3, ["added", "unchanged"] * 3)) == 6
    # rows under a folded run's members belong to it: its end is past the last member's subtree
    units = fold_runs([0, 1, 0, 1, 0, 1, 0], ["s", "t", "s", "t", "s", "t", "u"])
    assert [(u.members, u.end) for u in units] == [((0, 2, 4), 6), ((6,), 7)]


def test_a_run_of_five_like_siblings_is_one_row_with_the_sums() -> None:
    section = report_programs_section(_report(FIVE), None)
    assert section is not None and section.table is not None
    table = section.table
    assert [[c.text for c in row] for row in table.rows] == [
        ["main", "Sequence", "", "", "14"],
        ["└ 5 × relu/#", "Sequence", "", "0", "10"],
        ["└ gelu", "Sequence", "gelu", "0", "1"],
        ["└ copy/x/Begin", "OnTileExecute", "", "", "1"],
        ["└ copy/y/Begin", "OnTileExecute", "", "", "1"],
    ]
    run = table.rows[1]
    assert run[0].title == "5 programs, from relu/0 to relu/4"
    assert dict(run.data) == {"name": "5 × relu/#", "id": "p1", "parent": "p0", "depth": "1", "open": "false",
                              "count": "5"}
    # the page holds the members (without what is under them), hidden under the run
    assert [[c.text for c in m] for m in run.members] == [
        [f"{_}{_}└ relu/{i}", "Sequence", f"relu{i}", "0", "2"] for i in range(5)]
    assert dict(run.members[2].data) == {"name": "relu/2", "id": "p1.2", "parent": "p1", "depth": "2", "open": "false",
                                         "member": "true"}
    html = str(row_tag(run, table.columns))
    assert html.count("<tr") == 6 and html.count(" hidden>") == 5
    assert section.notes == ("All 14 programs shown.", FOLD_SENTENCE, TREE_SENTENCE)
    # the terminal and the Markdown draw the folded row, not its members
    document = report_document(_report(FIVE), top=20)
    assert "| └ 5 × relu/# | Sequence |  | 0 | 10 |" in render_markdown(document).splitlines()
    text = render_text(document)
    assert "└ 5 × relu/#" in text and "relu/3" not in text
    # the exports carry the folded row as every medium does
    assert table_data(table)["rows"][1] == ["└ 5 × relu/#", "Sequence", "", 0, 10]
    assert table_rows(table)[1][1] == ["└ 5 × relu/#", "Sequence", "", 0, 10]


def test_the_fold_comes_before_the_cut() -> None:
    # 3 rows: main, the run, gelu -- unfolded, the run's first two members would fill them
    section = report_programs_section(_report(FIVE), 3)
    assert section is not None and section.table is not None
    assert [row[0].text for row in section.table.rows] == ["main", "└ 5 × relu/#", "└ gelu"]
    assert [c.text for c in section.table.footer[0]] == ["other (2 programs)", "", "", "", "2"]
    assert section.notes[0] == ("Top 12 of 14 programs shown; 2 more in the 'other' row. Shown: every program down "
                                "to depth 0 (0: a root) and 2 of the 4 at depth 1.")


def _cmp(base_rows: list, new_rows: list) -> Comparison:
    return compare(_report(base_rows), _report(new_rows))


def test_a_comparison_folds_runs_of_one_status_only() -> None:
    root = [(0, None, 0, "Sequence", "main", "", None)]
    kept = [(1 + i, 0, 1, "OnTileExecute", f"relu/{i}", "", 0) for i in range(3)]
    gone = [(4 + i, 0, 1, "OnTileExecute", f"relu/{3 + i}", "", 0) for i in range(4)]
    added = [(20, 0, 1, "DoExchange", "copy/1", "", 0)]
    section = comparison_programs_section(_cmp(root + kept + gone, root + kept + added), None)
    assert section is not None and section.table is not None
    assert [[c.text for c in row] for row in section.table.rows] == [
        ["main", "Sequence", "8", "5", "-3", "changed"],
        # three kept ones fold; the four removed ones are a run of their own
        ["└ 3 × relu/#", "OnTileExecute", "3", "3", "0", "unchanged"],
        ["└ 4 × relu/#", "OnTileExecute", "4", "0", "-4", "removed"],
        ["└ copy/1", "DoExchange", "0", "1", "+1", "added"],
    ]
    assert [row.data["status"] for row in section.table.rows[2].members] == ["removed"] * 4
    assert section.table.rows[2][5].tone == "good"


def test_changed_programs_never_fold() -> None:
    def tree(extra: bool) -> list:
        rows = [(0, None, 0, "Sequence", "main", "", None)]
        for i in range(3):
            rows.append((10 * i + 1, 0, 1, "Sequence", f"layer{i}", "", 0))
            rows.append((10 * i + 2, 10 * i + 1, 2, "OnTileExecute", f"layer{i}/mm", "", 0))
            if extra:
                rows.append((10 * i + 3, 10 * i + 1, 2, "DoExchange", f"layer{i}/ex", "", 0))
        return rows
    section = comparison_programs_section(_cmp(tree(False), tree(True)), None)
    assert section is not None and section.table is not None
    assert [row[0].text for row in section.table.rows][:4] == [
        "main", "└ layer0", f"{_}{_}└ layer0/mm", f"{_}{_}└ layer0/ex"]
    assert len(section.table.rows) == 10


@pytest.mark.parametrize("kind, name, colour", [
    ("StreamCopyMid", "x/Mid", "#43a047"), ("Sync", "op/External Sync", "#c0392b"),
    ("Sync", "op/Internal Sync", "#e57373"), ("Repeat", "loop", "#607d8b"), ("Sequence", "main", None)])
def test_kinds_take_the_trace_s_colours(kind: str, name: str, colour: str | None) -> None:
    from profcompare.render.trace_chart import program_colour
    assert program_colour(kind, name) == colour


def test_a_page_lists_members_up_to_its_budget() -> None:
    # two runs of 200 like roots (the second group of another kind): the first run's members are
    # listed, the second's would pass PAGE_MEMBERS (300) and are not
    rows = [(i, None, 0, "OnTileExecute", f"step/{i}", "", None) for i in range(200)]
    rows += [(200 + i, None, 0, "DoExchange", f"ex/{i}", "", None) for i in range(200)]
    section = report_programs_section(_report(rows), None)
    assert section is not None and section.table is not None
    first, second = section.table.rows
    assert (len(first.members), len(second.members)) == (200, 0)
    assert second[0].title == ("200 programs, from ex/0 to ex/199 (not listed in this page: over 300 folded "
                               "programs)")
    assert section.notes[-1] == "The HTML page lists the programs of folded runs up to 300; 1 run stays folded there."
