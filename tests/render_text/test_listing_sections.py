"""The Variables, "Code by program" and Streaming Memory sections: one builder each, whose
figures every medium (terminal, Markdown, the HTML page) draws alike."""

from __future__ import annotations

import dataclasses

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_bytes
from profcompare.render.html import build_page
from profcompare.render.markdown import render_document as render_markdown
from profcompare.render.page.model import Section, placed_for_page
from profcompare.render.section_names import SECTION_NAMES
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.code import comparison_code_section, report_code_section
from profcompare.render.sections.streaming import comparison_streaming_section, report_streaming_section
from profcompare.render.sections.variables import comparison_variables_section, report_variables_section
from profcompare.render.text import render_document as render_text


def _texts(row) -> list[str]:  # type: ignore[no-untyped-def]
    return [cell.text for cell in row]


def test_one_title_and_anchor_per_family_in_every_medium(offchip: Report, comparison: Comparison) -> None:
    assert (SECTION_NAMES["variables"], SECTION_NAMES["code"], SECTION_NAMES["streaming"]) == (
        "Variables", "Code by program", "Streaming Memory")
    for build, obj in ((report_variables_section, offchip), (comparison_variables_section, comparison)):
        section = build(obj, 3)  # type: ignore[operator]
        assert (section.title, section.id, section.charts) == ("Variables", "variables", ())
    for build, obj in ((report_code_section, offchip), (comparison_code_section, comparison)):
        section = build(obj, 3)  # type: ignore[operator]
        assert (section.title, section.id, section.charts) == ("Code by program", "code", ())
    for build, obj in ((report_streaming_section, offchip), (comparison_streaming_section, comparison)):
        section = build(obj, 3)  # type: ignore[operator]
        assert (section.title, section.id, section.charts) == ("Streaming Memory", "streaming", ())
    titles = [s.title for s in comparison_document(comparison, top=3).sections]
    assert {"Variables", "Code by program", "Streaming Memory"} <= set(titles)
    page_titles = {s.id: s.title for s in build_page(comparison, top=3).sections}
    assert (page_titles["variables"], page_titles["code"], page_titles["streaming"]) == (
        "Variables", "Code by program", "Streaming Memory")


def test_a_report_s_variables_sum_the_rest_in_the_footer(offchip: Report) -> None:
    section = report_variables_section(offchip, 3)
    table = section.table
    assert table is not None
    assert [c.header for c in table.columns] == ["Variable", "Kind", "Bytes", "Always-live", "Dtype", "Shape", "Tiles",
                                                 "Live steps"]
    assert _texts(table.rows[0]) == ["layer0/weight", "weight", "1.5 MiB", "yes", "float32", "[784, 512]", "1,472",
                                     "always"]
    assert dict(table.rows[0].data) == {"name": "layer0/weight", "filter": "always-live"}
    rest = offchip.variables.sort_values("bytes", ascending=False).iloc[3:]
    (other,) = table.footer
    assert _texts(other)[:3] == [f"other ({len(rest)} variables)", "", format_bytes(rest["bytes"].sum())] == [
        "other (27 variables)", "", "5.3 MiB"]
    assert section.notes[0] == "Top 3 of 30 variables shown; 27 more in the 'other' row (5.3 MiB)."
    whole = report_variables_section(offchip, None)
    assert whole.table is not None and not whole.table.footer and whole.notes == ("All 30 variables shown.",)


def test_a_not_always_live_variable_says_its_steps_and_sorts_by_them(offchip: Report) -> None:
    view = analysis.variables_view(offchip, top=None, always_live=False)
    table = report_variables_section(offchip, view=view).table
    assert table is not None
    first = table.rows[0]
    assert first[-1].text == "14-16"
    # zero-padded, so a page sorting the column as text puts step 9 before step 10
    assert first[-1].sort == f"{14:012d}-{16:012d}"


def test_a_comparison_s_variables_lead_with_matched_changes_and_sum_the_rest(comparison: Comparison) -> None:
    section = comparison_variables_section(comparison, 3)
    table = section.table
    assert table is not None
    assert section.text.startswith("Variables found in both reports that grew or shrank first")
    assert [c.header for c in table.columns] == ["Variable", "Kind", "Base", "New", "Delta", "Delta %", "Status",
                                                 "Always-live", "Shape"]  # no Match column: no normalised pair
    assert _texts(table.rows[0]) == ["layer0/weight/second_moment", "optimizer_state", "1.5 MiB", "0 B", "-1.5 MiB",
                                     "-100.0%", "removed", "yes", "[784, 512]"]
    assert [c.tone for c in table.rows[0]][4:7] == ["good", "good", "good"]
    assert dict(table.rows[0].data) == {"name": "layer0/weight/second_moment", "filter": "removed"}
    (other,) = table.footer
    assert _texts(other) == ["other (35 variables)", "", "9.0 MiB", "9.4 MiB", "+434.5 KiB", "+4.7%", "", "", ""]
    assert section.notes[0] == "Top 3 of 38 variables shown; 35 more in the 'other' row."
    assert section.notes[-1] == "Status over all variables: 12 added, 8 removed, 0 grew, 0 shrank, 18 unchanged."


def test_a_normalised_match_adds_the_match_column(comparison: Comparison) -> None:
    frame = comparison.variables.copy()
    position = frame.index[frame["status"].astype(str) == "unchanged"][0]
    name = frame.at[position, "name"]
    frame.loc[position, ["match", "base_name", "new_name"]] = ["normalised", f"{name}@1", name]
    section = comparison_variables_section(dataclasses.replace(comparison, variables=frame), None)
    table = section.table
    assert table is not None and table.columns[-1].header == "Match"
    row = next(r for r in table.rows if r[0].text == name)
    assert row[-1].text == f"normalised (base: {name}@1)"
    assert row[0].title == f"base: {name}@1; new: {name}"


def test_code_by_program_of_a_report_and_of_a_comparison(offchip: Report, comparison: Comparison) -> None:
    report = report_code_section(offchip, 3).table
    assert report is not None
    assert [_texts(r) for r in report.rows] == [["grad/reduce_scatter", "Call", "52.7 KiB"],
                                                ["layer1/fwd/matmul", "OnTileExecute", "52.7 KiB"],
                                                ["layer3/fwd/matmul", "OnTileExecute", "49.8 KiB"]]
    assert [_texts(r) for r in report.footer] == [["other (16 programs)", "", "574.2 KiB"]]
    section = comparison_code_section(comparison, 3)
    table = section.table
    assert table is not None
    assert _texts(table.rows[1]) == ["grad/reduce_scatter", "Call", "0 B", "52.7 KiB", "+52.7 KiB", "n/a", "added"]
    assert [c.tone for c in table.rows[1]][4:] == ["bad", "bad", "bad"]
    cut = comparison.top("code", 3).other
    assert cut is not None
    assert [_texts(r) for r in table.footer] == [["other (17 programs)", "", format_bytes(cut["base_code_bytes"]),
                                                  format_bytes(cut["new_code_bytes"]), "+67.4 KiB", "+12.0%", ""]]
    assert section.notes == ("Top 3 of 20 programs shown; 17 more in the 'other' row.",)


def test_streaming_memory_sums_the_rest_and_the_total_and_colours_nothing(offchip: Report,
                                                                          comparison: Comparison) -> None:
    section = report_streaming_section(offchip, 3)
    table = section.table
    assert table is not None
    assert [_texts(r) for r in table.footer] == [["other (5 remote buffers)", "5", "", "", "", "459.5 KiB"],
                                                 ["total", "", "", "", "", "1.3 MiB"]]
    assert section.notes[1:] == (
        "Total per replica: 1.3 MiB in 8 buffers (8 replica-sharded).",
        "All 4 replicas: 5.3 MiB = 1.3 MiB per replica x 4 (exact: each replica holds its own remote buffers; the "
        "replica-sharded ones, 1.3 MiB per replica, are a different shard on each replica, 5.3 MiB in all).")
    section = comparison_streaming_section(comparison, 3)
    table = section.table
    assert table is not None
    assert _texts(table.rows[0]) == ["layer0/weight/second_moment", "0 B", "392.0 KiB", "+392.0 KiB", "n/a", "added",
                                     "yes", "1"]
    assert all(cell.tone is None for row in table.rows + table.footer for cell in row)
    assert [_texts(r) for r in table.footer] == [
        ["other (5 remote buffers)", "0 B", "459.5 KiB", "+459.5 KiB", "n/a", "", "", ""],
        ["total", "0 B", "1.3 MiB", "+1.3 MiB", "n/a", "", "", ""]]
    assert section.notes[-1] == ("Over all replicas (per replica x replicas, exact): base 0 B (4 x 0 B), new 5.3 MiB "
                                 "(4 x 1.3 MiB).")


def test_a_report_without_remote_buffers_says_so_in_its_table(onchip: Report) -> None:
    section = report_streaming_section(onchip, 3)
    assert section.table is not None and not section.table.rows and section.notes == () and section.text == ""
    assert section.table.empty == "no remote buffers: nothing is kept in Streaming Memory"
    document = report_document(onchip, top=3)
    drawn = render_text(dataclasses.replace(document, sections=tuple(
        s for s in document.sections if s.title == "Streaming Memory")))
    assert "(no remote buffers: nothing is kept in Streaming Memory)" in drawn


def _page_section(obj: Report | Comparison, section_id: str) -> Section:
    return next(s for s in build_page(obj, top=3).sections if s.id == section_id)


def test_the_page_draws_the_same_sections_with_the_code_chart(offchip: Report, comparison: Comparison) -> None:
    for obj, code, streaming in ((offchip, report_code_section, report_streaming_section),
                                 (comparison, comparison_code_section, comparison_streaming_section)):
        page_code = _page_section(obj, "code")
        assert [chart.id for chart in page_code.charts] == ["chart-code"]
        assert dataclasses.replace(page_code, charts=()) == placed_for_page(code(obj, 3))  # type: ignore[arg-type]
        assert _page_section(obj, "streaming") == placed_for_page(streaming(obj, 3))  # type: ignore[arg-type]


def test_the_page_holds_the_variables_table_under_its_filter(comparison: Comparison) -> None:
    page = build_page(comparison, top=3)
    section = next(s for s in page.sections if s.id == "variables")
    assert section.tables == () and section.text.startswith("Variables found in both reports")
    # every variable up to the page's bound, whatever --top: 38 rows, no "other" row
    assert len(page.variables.rows) == 38 and not page.variables.footer
    assert page.variables.note.startswith("All 38 variables shown. Status over all variables: 12 added")
    assert page.variables == placed_for_page(comparison_variables_section(comparison, None)).table


def test_terminal_and_markdown_draw_the_footer_rows(comparison: Comparison) -> None:
    document = comparison_document(comparison, top=3, names={"streaming"})
    text = render_text(document)
    assert "other (5 remote buffers)       0 B   459.5 KiB   +459.5 KiB       n/a" in text
    assert "total                          0 B     1.3 MiB     +1.3 MiB       n/a" in text
    markdown = render_markdown(document)
    assert "| _other (5 remote buffers)_ | _0 B_ | _459.5 KiB_ | _+459.5 KiB_ | _n/a_ |  |  |  |" in markdown
    assert "| _total_ | _0 B_ | _1.3 MiB_ | _+1.3 MiB_ | _n/a_ |  |  |  |" in markdown
