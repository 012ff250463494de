"""The execution-trace view: the chart's blocks and hover fields, the overview of a large trace,
the page section (spans, cycles per type, escaping), both runs of a comparison on one axis, and
the notebook figure."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser

import numpy as np
import pytest
from html_fixtures import ESCAPE_NAME
from matplotlib.figure import Figure
from test_interactive import _sources

from profcompare.comparison import compare
from profcompare.model import Report, make_frame
from profcompare.render.html import build_page, render_page
from profcompare.render.trace_chart import FLAME_COLOURS, TYPE_COLOURS, trace_chart


def _with_trace(report: Report, blocks: list[tuple[int, int, int, str, str]],
                groups: dict[str, str] | None = None) -> Report:
    """``report`` with a trace of (ipu, from, to, type, name) blocks, each in the group ``groups``
    names for its name (at the top level without one)."""
    ipu, start, end, types, names = (list(c) for c in zip(*blocks, strict=True))
    parents = [(groups or {}).get(n, "") for n in names]
    trace = make_frame("trace", {"ipu": ipu, "cycles_from": start, "cycles_to": end, "type": types, "name": names,
                                 "program": names, "parent": parents, "depth": [int(bool(p)) for p in parents]})
    target = dataclasses.replace(report.meta.target, ipus_per_replica=2, num_ipus=2 * report.meta.target.num_replicas)
    return Report.build(report.meta.replace(capabilities=report.meta.capabilities | {"trace"}, target=target),
                        **{t: getattr(report, t) for t in ("tiles", "categories", "variables", "liveness", "code",
                                                           "execution", "remote_buffers")}, trace=trace)


BASE_BLOCKS = [(0, 0, 100, "OnTileExecute", "Convolve"), (0, 100, 130, "InternalSync", "Internal Sync"),
               (0, 0, 400, "SyncAns", "SyncAns"), (0, 130, 400, "StreamCopyBegin", ESCAPE_NAME),
               (1, 0, 50, "DoExchange", "ExchangePre"), (1, 50, 300, "OnTileExecute", "Reduce")]
NEW_BLOCKS = [(0, 0, 80, "OnTileExecute", "Convolve"), (0, 80, 200, "GlobalExchange", "IpuCopy")]


@pytest.fixture(scope="module")
def base(onchip: Report) -> Report:
    return _with_trace(onchip, BASE_BLOCKS)


#: The fixture blocks' groups (SyncAns in none, as Graph Analyser draws it).
GROUPS = {"Convolve": "matmul", "Internal Sync": "matmul", ESCAPE_NAME: ESCAPE_NAME, "ExchangePre": "reduce",
          "Reduce": "reduce", "IpuCopy": "copy"}


@pytest.fixture(scope="module")
def new(offchip: Report) -> Report:
    return _with_trace(offchip, NEW_BLOCKS)


@pytest.fixture(scope="module")
def grouped_base(onchip: Report) -> Report:
    return _with_trace(onchip, BASE_BLOCKS, GROUPS)


@pytest.fixture(scope="module")
def grouped_new(offchip: Report) -> Report:
    return _with_trace(offchip, NEW_BLOCKS, GROUPS)


def test_every_block_is_drawn_with_its_hover_fields(base: Report) -> None:
    chart = trace_chart([base], ["report"])
    assert chart.note == "All 6 blocks drawn."
    sources = _sources(json.loads(json.dumps(chart.item)))
    blocks = {s["type"][0]: s for name, s in sources.items() if name.startswith("chart-trace:blocks:")}
    assert sorted(blocks) == ["DoExchange", "InternalSync", "OnTileExecute", "StreamCopyBegin", "SyncAns"]
    on_tile = blocks["OnTileExecute"]
    # IPU 0 is the top lane (centre 0), IPU 1 the next (centre -1)
    assert on_tile["left"] == [0.0, 50.0] and on_tile["right"] == [100.0, 300.0]
    assert on_tile["cycles"] == ["0–100 (100 cycles)", "50–300 (250 cycles)"]
    assert on_tile["bottom"] == pytest.approx([-0.22, -1.22]) and on_tile["top"] == pytest.approx([0.4, -0.6])
    # SyncAns is the band under its lane, never over the blocks it waits for
    assert blocks["SyncAns"]["top"] == pytest.approx([-0.28]) and blocks["SyncAns"]["bottom"] == pytest.approx([-0.42])
    assert blocks["StreamCopyBegin"]["name"] == [ESCAPE_NAME]  # text for the tooltip, not markup
    text = json.dumps(chart.item)
    for block_type in blocks:
        assert TYPE_COLOURS[block_type] in text


def test_a_large_trace_is_drawn_as_bins_and_says_so(base: Report) -> None:
    chart = trace_chart([base], ["report"], max_blocks=2, bins=4)
    assert chart.note.startswith("6 blocks: too many to draw one by one, so each lane shows 4 time bins")
    assert "the 2 longest blocks (at least 270 cycles)" in chart.note
    sources = _sources(json.loads(json.dumps(chart.item)))
    drawn = [s for name, s in sources.items() if name.startswith("chart-trace:blocks:")]
    assert sorted(v for s in drawn for v in s["cycles"]) == ["0–400 (400 cycles)", "130–400 (270 cycles)"]
    bins = sources["chart-trace:overview"]
    # IPU 0 over 0..400 in bins of 100: bin 0 holds OnTileExecute 100 and SyncAns 100, bin 1
    # InternalSync 30, StreamCopyBegin 70 and SyncAns 100
    assert bins["where"][:4] == ["0–100", "100–200", "200–300", "300–400"]
    assert bins["busy"][0] == "OnTileExecute 100; SyncAns 100"
    assert bins["busy"][1] == "SyncAns 100; StreamCopyBegin 70; InternalSync 30"


class _TableText(HTMLParser):
    """The cell texts of the body rows of the table with a given id."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.depth, self.rows, self.cell = table_id, False, 0, [], None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self.cell = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False
        elif self.inside and tag == "td" and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell += data


def _rows(html: str, table_id: str) -> list[list[str]]:
    parser = _TableText(table_id)
    parser.feed(html)
    return [r for r in parser.rows if r]


def test_the_page_section_has_spans_and_cycles_per_type(base: Report) -> None:
    html = render_page(build_page(base))
    assert 'id="trace"' in html and "Execution trace" in html and 'id="chart-trace"' in html
    assert ESCAPE_NAME not in html  # only escaped, in the chart's JSON
    assert "6 blocks, modelled (no SyncAns: an IPU" in html  # the simulator's trace
    spans = _rows(html, "trace-spans")
    # IPU, span, from-to, blocks
    assert spans == [["0", "400", "0–400", "4"], ["1", "300", "0–300", "2"]]
    types = {(r[0], r[1]): r[2:] for r in _rows(html, "trace-types")}
    assert types[("0", "SyncAns")] == ["1", "400", "400.0"]
    assert types[("0", "StreamCopyBegin")] == ["1", "270", "270.0"]
    assert types[("1", "OnTileExecute")] == ["1", "250", "250.0"]
    assert len(types) == 6


def test_a_report_without_a_trace_has_no_section(onchip: Report) -> None:
    assert 'id="chart-trace"' not in render_page(build_page(onchip))


def test_a_comparison_puts_both_runs_on_one_time_axis(base: Report, new: Report) -> None:
    chart = trace_chart([base, new], ["base", "new"])
    item = json.loads(json.dumps(chart.item))
    sources = _sources(item)
    lanes = {}
    for name, s in sources.items():
        if name.startswith("chart-trace:blocks:"):
            for report, bottom in zip(s["report"], s["bottom"], strict=True):
                lanes.setdefault(report, set()).add(round(bottom + 0.22) if bottom > -0.3 + round(bottom) else None)
    # base's two IPUs are lanes 0 and -1, new's one IPU is lane -2: base above new
    assert {k: sorted(v - {None}) for k, v in lanes.items()} == {
        f"base: {base.label}": [-1, 0], f"new: {new.label}": [-2]}
    assert "Both runs share the time axis" in chart.caption
    html = render_page(build_page(compare(base, new)))
    assert html.count('id="chart-trace"') == 1
    # each row names its report: base's two IPUs, then new's one
    assert _rows(html, "trace-spans") == [["base", "0", "400", "0–400", "4"], ["base", "1", "300", "0–300", "2"],
                                          ["new", "0", "200", "0–200", "2"]]
    assert "Base: 6 blocks, modelled (no SyncAns" in html and "New: 2 blocks, modelled (no SyncAns" in html


def test_notebook_figures(base: Report, new: Report) -> None:
    assert isinstance(base.plot_trace(), Figure) and isinstance(base.plot_execution(), Figure)
    fig = compare(base, new).plot_trace()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [f"base: {base.label} IPU 0", f"base: {base.label} IPU 1", f"new: {new.label} IPU 0"]
    bars = [c for c in fig.axes[0].collections]
    assert sum(len(c.get_paths()) for c in bars) == len(BASE_BLOCKS) + len(NEW_BLOCKS)
    assert np.isfinite(fig.axes[0].get_xlim()).all()


def test_a_trace_without_groups_has_no_flame_rows(base: Report) -> None:
    chart = trace_chart([base], ["report"])
    assert not [name for name in _sources(json.loads(json.dumps(chart.item))) if name.endswith(":flame")]
    assert "enclosing" not in chart.caption and "enclosing" not in chart.note


def test_the_groups_are_flame_rows_above_each_lane(grouped_base: Report) -> None:
    chart = trace_chart([grouped_base], ["report"])
    assert chart.note == ("All 6 blocks drawn. Above each lane, 3 bars of the programs enclosing its blocks, up to 4 "
                          "levels from the outermost (deeper levels are not drawn).")
    assert "The grey rows above a lane are the programs enclosing its blocks" in chart.caption
    item = json.loads(json.dumps(chart.item))
    sources = _sources(item)
    bars = sources["chart-trace:flame"]
    # IPU 0: matmul (Convolve, Internal Sync) then the escaped name's group; IPU 1: reduce; SyncAns in none
    assert bars["name"] == ["matmul", ESCAPE_NAME, "reduce"]  # text for the tooltip, not markup
    assert bars["left"] == [0.0, 130.0, 0.0] and bars["right"] == [130.0, 400.0, 300.0]
    assert bars["cycles"] == ["0–130 (130 cycles)", "130–400 (270 cycles)", "0–300 (300 cycles)"]
    assert bars["blocks"] == ["2", "1", "2"] and bars["level"] == ["1", "1", "1"]
    # one flame row (0.22 of a lane) over each lane: IPU 0's blocks stay at 0, IPU 1's move down to -1.22
    assert bars["bottom"] == pytest.approx([0.46, 0.46, -0.76]) and bars["top"] == pytest.approx([0.64, 0.64, -0.58])
    on_tile = next(s for name, s in sources.items() if name.startswith("chart-trace:blocks:")
                   and s["type"][0] == "OnTileExecute")
    assert on_tile["bottom"] == pytest.approx([-0.22, -1.44])
    assert FLAME_COLOURS[0] in json.dumps(item)
    assert _find(item, "height") == 252  # 232 without the rows


def _find(item: object, key: str) -> object:
    """The first value of ``key`` in the chart's JSON (depth first)."""
    if isinstance(item, dict):
        if key in item:
            return item[key]
        values = item.values()
    elif isinstance(item, list):
        values = item
    else:
        return None
    for v in values:
        found = _find(v, key)
        if found is not None:
            return found
    return None


def test_many_flame_bars_are_merged_per_time_bin(grouped_base: Report) -> None:
    chart = trace_chart([grouped_base], ["report"], bins=2, max_flame_spans=1)
    assert chart.note.endswith("Bars shorter than 200 cycles are merged per time bin of that width.")


def test_both_runs_of_a_comparison_get_flame_rows(grouped_base: Report, grouped_new: Report) -> None:
    chart = trace_chart([grouped_base, grouped_new], ["base", "new"])
    bars = _sources(json.loads(json.dumps(chart.item)))["chart-trace:flame"]
    assert list(zip(bars["report"], bars["name"], strict=True)) == [
        (f"base: {grouped_base.label}", "matmul"), (f"base: {grouped_base.label}", ESCAPE_NAME),
        (f"base: {grouped_base.label}", "reduce"), (f"new: {grouped_new.label}", "matmul"),
        (f"new: {grouped_new.label}", "copy")]
    html = render_page(build_page(compare(grouped_base, grouped_new)))
    assert ESCAPE_NAME not in html


def test_the_notebook_figure_draws_the_flame_rows(grouped_base: Report, grouped_new: Report) -> None:
    fig = compare(grouped_base, grouped_new).plot_trace()
    ax = fig.axes[0]
    flames = [c for c in ax.collections if tuple(np.round(c.get_facecolor()[0][:3] * 255).astype(int))
              == tuple(int(FLAME_COLOURS[0][i:i + 2], 16) for i in (1, 3, 5))]
    assert sum(len(c.get_paths()) for c in flames) == 5
    # the lanes move down by one flame row each
    assert [round(t, 2) for t in ax.get_yticks()] == [0.0, -1.22, -2.44]
    # names of wide bars are plain text (no mathtext, no markup)
    assert ESCAPE_NAME in [t.get_text() for t in ax.texts]


def test_the_stream_copy_parts_differ_in_lightness() -> None:
    # Begin, Mid and End of a stream copy: one green family, light to dark, far enough apart to
    # tell in a legend (three similar mid greens were not)
    from colorsys import rgb_to_hls

    def lightness(colour: str) -> float:
        return rgb_to_hls(*(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)))[1]

    parts = [lightness(TYPE_COLOURS[t]) for t in ("StreamCopyBegin", "StreamCopy", "StreamCopyEnd")]
    assert parts == sorted(parts, reverse=True)
    assert min(a - b for a, b in zip(parts, parts[1:])) >= 0.2


def test_the_terminal_and_the_page_draw_one_trace_section(base: Report, new: Report) -> None:
    """The trace's tables are built once: ``show`` and ``compare`` (text, Markdown) hold the
    section the page holds, the page adding only its chart; ``--section trace`` names it."""
    from dataclasses import replace

    from profcompare.render.section_names import SECTION_NAMES
    from profcompare.render.sections import comparison_document, report_document

    for obj, document in ((base, report_document(base)), (compare(base, new), comparison_document(compare(base, new)))):
        page = {s.id: s for s in build_page(obj).sections}["trace"]
        drawn = next(s for s in document.sections if s.id == "trace")
        assert drawn.title == SECTION_NAMES["trace"] == "Execution trace"
        assert [c.id for c in page.charts] == ["chart-trace"]
        assert replace(page, charts=()) == drawn
    section = comparison_document(compare(base, new), names={"trace"}).sections
    assert [s.title for s in section] == ["Execution trace"]
    assert [c.text for c in section[0].tables[1].rows[0]] == ["base", "0", "SyncAns", "1", "400", "400.0"]
