"""The "Vertices, compute sets and exchanges" section: titles, ids, columns, the cut, the notes,
its place among the sections, and a comparison's paired rows."""

from __future__ import annotations

from profcompare.comparison import compare
from profcompare.emulator.compile import compile_program
from profcompare.model import Report, ReportMeta, Target, table_from_rows
from profcompare.render.section_names import SECTION_NAMES
from profcompare.render.sections.order import RowLimits, comparison_sections, report_sections
from profcompare.render.sections.vertices import comparison_vertices_section, report_vertices_section
from profcompare.render.text import render_table
from tests.compile_model.test_operations import TINY, _gelu_program

VERTICES = [("poplin::ConvPartial1x1Out<half,float>", 96, 4608, 6400, 4, 2),
            ("popops::ScaledAdd2D<float>", 12, 192, 800, 4, 1),
            ("popops::Zero<float>", 400, 6400, 200, 4, 1)]


def _report(vertices: list[tuple], capabilities: frozenset[str] = frozenset({"vertices"})) -> Report:
    meta = ReportMeta(source="", format="store", producer="test", simulated=False, capabilities=capabilities,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))
    return Report.build(meta, vertices=table_from_rows("vertices", vertices))


def test_the_simulated_gelu_program() -> None:
    report = compile_program(_gelu_program(), TINY).report
    section = report_vertices_section(report, top=20)
    assert (section.title, section.id) == ("Vertices, compute sets and exchanges", "vertices")
    vertices, compute_sets, exchanges = section.tables
    assert [t.id for t in section.tables] == ["vertices-vertices", "vertices-compute-sets", "vertices-exchanges"]
    assert [c.title for c in vertices.columns] == ["Vertex type", "Code bytes", "Vertex state", "Instances", "Tiles",
                                                   "Compute sets"]
    assert [[c.text for c in row] for row in vertices.rows] == [["codelets:nonlinearity", "1.2 KiB", "384 B", "24", "4", "1"]]
    assert [c.title for c in compute_sets.columns] == ["Compute set", "Op", "Vertex state", "Vertices", "Cycles",
                                                       "Tiles"]
    assert [[c.text for c in row] for row in compute_sets.rows] == [["gelu", "gelu", "384 B", "24", "626", "4"]]
    assert [[c.text for c in row] for row in exchanges.rows] == [
        ["load_x/Mid", "StreamCopyMid", "384 B", "1,605", "4"],
        ["store_y/Mid", "StreamCopyMid", "384 B", "1,605", "4"],
    ]
    assert [c.text for c in exchanges.footer[0]] == ["total", "", "768 B", "", ""]
    assert (vertices.note, exchanges.note) == ("All 1 vertex types shown.", "All 2 exchanges shown.")
    assert section.notes == ("Simulated: the vertex types are the simulator's codelet families, and every figure is "
                             "modelled (docs/ipu-model.md).",)
    # after the program tree, in the one order of every medium
    assert [s.id for s in report_sections(report, RowLimits.every(20))][-5:] == [
        "operations", "programs", "vertices", "streaming", "execution"]


def test_a_cut_table_sums_the_rest_and_names_the_most_state() -> None:
    section = report_vertices_section(_report(VERTICES), top=1)
    (table,) = section.tables
    assert [c.text for c in table.rows[0]] == ["poplin::ConvPartial1x1Out<half,float>", "6.2 KiB", "4.5 KiB", "96",
                                               "4", "2"]
    assert [[c.text for c in row] for row in table.footer] == [
        ["other (2 vertex types)", "1000 B", "6.4 KiB", "412", "", ""],
        ["total", "7.2 KiB", "10.9 KiB", "508", "", ""],
    ]
    assert table.note == "Top 1 of 3 vertex types shown; 2 more in the 'other' row."
    assert section.notes == ("Most vertex state: popops::Zero<float> (6.2 KiB in 400 instances).",)
    text = render_table(table)
    assert "poplin::ConvPartial1x1Out<half,float>" in text and "other (2 vertex types)" in text


def test_a_report_without_them_has_no_section() -> None:
    bare = _report([], frozenset())
    assert "vertices" not in [s.id for s in report_sections(bare, RowLimits.every(20))]
    assert report_vertices_section(bare).tables[0].empty == (
        "this report does not record vertex types, compute sets and exchanges")
    assert comparison_vertices_section(compare(bare, bare)) is None


def test_comparison_section_pairs_and_classifies() -> None:
    new = [("poplin::ConvPartial1x1Out<half,float>", 96, 4608, 9600, 4, 2), VERTICES[1],
           ("popnn::NonLinearity1D<float,3>", 24, 384, 1280, 4, 1)]
    cmp = compare(_report(VERTICES), _report(new))
    section = comparison_vertices_section(cmp, top=3)
    assert section is not None
    (table,) = section.tables
    assert [c.title for c in table.columns] == ["Vertex type", "Base code", "New code", "Delta code", "Base state",
                                                "New state", "Delta state", "Status"]
    assert [[c.text for c in row] for row in table.rows] == [
        ["poplin::ConvPartial1x1Out<half,float>", "6.2 KiB", "9.4 KiB", "+3.1 KiB", "4.5 KiB", "4.5 KiB", "0 B",
         "grew"],
        ["popnn::NonLinearity1D<float,3>", "0 B", "1.2 KiB", "+1.2 KiB", "0 B", "384 B", "+384 B", "added"],
        ["popops::Zero<float>", "200 B", "0 B", "-200 B", "6.2 KiB", "0 B", "-6.2 KiB", "removed"],
    ]
    assert [c.text for c in table.footer[0]][:4] == ["other (1 vertex types)", "800 B", "800 B", "0 B"]
    assert table.note == "Top 3 of 4 vertex types shown; 1 more in the 'other' row."
    names = list(SECTION_NAMES)
    assert SECTION_NAMES["vertices"] == "Vertices, compute sets and exchanges"
    assert names.index("vertices") == names.index("programs") + 1
    assert [s.id for s in comparison_sections(cmp, RowLimits.every(3), names={"vertices"})] == ["vertices"]


def test_each_table_exports_as_csv() -> None:
    from profcompare.render.csv_out import page_table_csv

    report = compile_program(_gelu_program(), TINY).report
    assert page_table_csv(report, "vertices-exchanges") == (
        "Exchange,Type,Code bytes,Cycles,Tiles\n"
        "load_x/Mid,StreamCopyMid,384,1605,4\n"
        "store_y/Mid,StreamCopyMid,384,1605,4\n"
        "total,,768,,\n")
    assert page_table_csv(report, "vertices-vertices").splitlines()[1] == "codelets:nonlinearity,1280,384,24,4,1"


def test_a_page_shows_at_most_eight_rows_of_each_table() -> None:
    from profcompare.render.sections.order import PAGE_VERTICES, page_vertex_rows

    assert (PAGE_VERTICES, RowLimits.page().vertices, RowLimits.page(5).vertices, page_vertex_rows(None)) == (8, 8, 5, 8)
    assert RowLimits.every(30).vertices == 30  # the terminal and Markdown follow --top


def test_hostile_names_are_escaped_on_the_page() -> None:
    from profcompare.render.html import HtmlRenderer

    hostile = "x</script><b>y</b>"
    report = _report([(hostile, 3, 48, 96, 1, 1)])
    page = HtmlRenderer().render(report)
    assert "x&lt;/script&gt;&lt;b&gt;y&lt;/b&gt;" in page
    assert "<b>y</b>" not in page
