"""Memory per IPU: the analysis frame, the ``show`` / ``compare`` text sections and the HTML
section appear with more than one IPU per replica and stay away with one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.comparison import compare
from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.analysis.memory_per_ipu import compare_memory_per_ipu, memory_per_ipu
from profcompare.render.html import HtmlRenderer
from profcompare.render.text import TextRenderer


def _report(two_ipus: bool):
    """a (1024 fp32) and a*2 on IPU 0; the copy of a*2 on IPU 1 (or on IPU 0 for one IPU)."""
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(1024, np.float32), name="a")
        ys = popxl.d2h_stream((1024,), popxl.float32, "y")
        b = a * 2.0
        if two_ipus:
            c = b.copy_to_ipu(1)
            with popxl.ipu(1):
                ops.host_store(ys, c)
        else:
            ops.host_store(ys, b)
    return compile_program(lower(ir), "mk2").report


def test_memory_per_ipu_frame():
    r = _report(True)
    frame = memory_per_ipu(r)
    assert list(frame.columns) == ["ipu", "tiles", "always_live_bytes", "not_always_live_peak_bytes", "total_bytes",
                                   "bytes_including_gaps"]
    pd.testing.assert_series_equal(frame["not_always_live_peak_bytes"],
                                   pd.Series([8192, 4096], dtype="int64", name="not_always_live_peak_bytes"))
    assert (frame["total_bytes"] == frame["always_live_bytes"] + frame["not_always_live_peak_bytes"]).all()
    assert frame["tiles"].tolist() == [1472, 1472]
    assert int(frame["total_bytes"].sum()) == int(r.tiles["bytes_excluding_gaps"].sum())


def test_compare_memory_per_ipu_outer_joins_ipus():
    one, two = _report(False), _report(True)
    cmp = compare_memory_per_ipu(one, two)
    assert cmp["ipu"].tolist() == [0, 1]
    assert cmp.loc[1, "base_not_always_live_peak_bytes"] == 0
    assert cmp.loc[1, "new_not_always_live_peak_bytes"] == 4096
    assert cmp.loc[1, "delta_not_always_live_peak_bytes"] == 4096


def test_show_text_has_a_memory_per_ipu_table_only_with_two_ipus():
    text = TextRenderer().render(_report(True))
    block = text[text.index("Memory per IPU"):].split("\n\n")[0]
    lines = [ln for ln in block.splitlines() if ln.startswith(("IPU 0", "IPU 1"))]
    assert len(lines) == 2
    assert "8.0 KiB" in lines[0] and "4.0 KiB" in lines[1]
    assert "Memory per IPU" not in TextRenderer().render(_report(False))


def test_compare_text_and_html_show_memory_per_ipu():
    one, two = _report(False), _report(True)
    cmp = compare(one, two)
    text = TextRenderer().render(cmp)
    block = text[text.index("Memory per IPU"):].split("\n\n")[0]
    assert "IPU 1" in block and "+4.0 KiB" in block
    html = HtmlRenderer().render(cmp)
    assert 'id="memory-per-ipu"' in html
    assert 'id="memory-per-ipu"' not in HtmlRenderer().render(compare(one, one))
    assert "Memory per IPU" not in TextRenderer().render(compare(one, one))


def test_one_memory_per_ipu_section_for_every_output():
    """The section is built once: the terminal's document and the page hold the same one (the
    page with its note at the table); its IPU cells sort by number, its bytes carry exact counts."""
    from dataclasses import replace

    from profcompare.render.html import build_page
    from profcompare.render.sections import comparison_document, report_document
    from profcompare.render.sections.ipus import comparison_ipu_section, report_ipu_section

    one, two = _report(False), _report(True)
    section = report_ipu_section(two)
    assert section is not None and section.table is not None
    assert [(row[0].text, row[0].sort) for row in section.table.rows] == [("IPU 0", "0000"), ("IPU 1", "0001")]
    assert [row[3].title for row in section.table.rows] == ["8,192 B", "4,096 B"]  # not-always-live (tile peaks)
    cmp = compare(one, two)
    both = comparison_ipu_section(cmp)
    assert both is not None and both.table is not None
    assert [c.text for c in both.table.rows[1]][4:7] == ["0 B", "4.0 KiB", "+4.0 KiB"]
    for obj, document, built in ((two, report_document(two), section), (cmp, comparison_document(cmp), both)):
        page = {s.id: s for s in build_page(obj).sections}["memory-per-ipu"]
        assert next(s for s in document.sections if s.id == "memory-per-ipu") == built
        note = " ".join(built.notes)
        assert page == replace(built, tables=(replace(built.tables[0], note=note),), notes=(), notes_on_table=False)
