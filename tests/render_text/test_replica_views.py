"""Which replica and replica groups the figures are for, in every output, on our own GPT program
(phased-rts at the workload's tiny size: TP 2 x DP 2 = 4 replicas, 32 I/O tiles per IPU).

Hand-checked figures:

- collectives over the tensor-parallel groups (stride 1, size 2): each decoder layer's attention
  and feed-forward block all-reduce once forwards and once backwards -> 2 layers x 4 = 8 per
  micro-batch; the vocabulary-split embedding all-reduces its lookup forwards (1), the LM head's
  input all-reduces its gradient backwards (1) and the sharded cross-entropy all-reduces the row
  max, the sum of exponentials and the true-class logit (3) -> 8 + 5 = 13 per micro-batch x 2
  micro-batches = 26 per step;
- over the data-parallel groups (stride TP = 2, size 2): every one of the 21 parameters (word and
  position embeddings, 8 per layer x 2, final layer norm weight and bias, LM head) is
  reduce-scattered, sliced to its shard and all-gathered after its update (RTS): 63;
- replica-sharded Adam state: 59,008 parameter elements per TP rank (word 128 / TP x 64,
  positions 16 x 64, LM head 64 x 128 / TP, final layer norm 2 x 64, per layer 2 x 2 x 64 (layer norms) +
  64 x 96 (QKV, 3 x 64 / TP columns) + 32 x 64 + 64 x 128 + 128 x 64) x (4 + 4 bytes of the two
  float32 moments) / DP 2 = 236,032 B per replica.
"""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest

from profcompare.analysis import replicas
from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.errors import ReportValidationError
from profcompare.model import Target
from profcompare.readers.store import read_report, write_report
from profcompare.render.html import HtmlRenderer
from profcompare.render.markdown import MarkdownRenderer
from profcompare.render.notebook import report_repr_html
from profcompare.render.format import replica_scope
from profcompare.render.text import TextRenderer
from workloads import find_variant, parse_knobs
from workloads.gpt import layout_of, shape_of

SCOPE = ("figures per replica: replica 0, in group 0 of each replica grouping; all 4 replicas run the same "
         "program on the same layout")


def _gpt(variant: str):  # type: ignore[no-untyped-def]
    from workloads import _gpt_program as gp

    config = parse_knobs(find_variant(variant, "gpt"), {"io_tiles": 32})
    program = gp.build_program(layout_of(variant, config), shape_of(config), config["lr"], config["seed"], 32)
    return compile_program(lower(program.ir, "ipu_hw")).with_execution(1)


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return _gpt("phased-rts")


def _plain_html(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_report_records_its_groupings_and_io_tiles(report) -> None:  # type: ignore[no-untyped-def]
    replication = report.meta.replication
    assert replication["io_tiles_per_ipu"] == 32
    counts = [(g["stride"], g["group_size"], g["num_groups"], g["collectives"]) for g in replication["replica_groupings"]]
    assert counts == [(1, 2, 2, 26), (2, 2, 2, 63)]
    # the collectives' cycles: every phase of their steps, so at least the collective phase's
    # and within the device cycles of the run
    summed = sum(g["cycles"] for g in replication["replica_groupings"])
    execution = report.execution
    collective = int(execution.loc[execution["phase"].astype(str) == "collective", "cycles"].sum())
    assert 0 < collective <= summed < report.summary()["cycles_per_step"]


def test_group_members_follow_popxl_replica_groupings() -> None:
    tp = replicas.Grouping(stride=1, group_size=4, num_groups=4, collectives=0, cycles=0)
    dp = replicas.Grouping(stride=4, group_size=4, num_groups=4, collectives=0, cycles=0)
    # 16 replicas, TP 4 x DP 4: replica 5 is rank 1 of TP group 1 and in DP group 1
    assert (tp.members(5), tp.group_of(5)) == ((4, 5, 6, 7), 1)
    assert (dp.members(5), dp.group_of(5)) == ((1, 5, 9, 13), 1)
    assert (dp.members(0), dp.group_of(0)) == ((0, 4, 8, 12), 0)


def test_memory_per_tile_set_puts_the_io_tiles_apart(report) -> None:  # type: ignore[no-untyped-def]
    frame = replicas.memory_per_tile_set(report)
    assert list(zip(frame["ipu"], frame["tile_set"], frame["tiles"])) == [(0, "I/O", 32), (0, "compute", 1440)]
    tiles = report.tiles
    io = tiles["tile"] < 32
    for column, source in (("always_live_bytes", "always_live_bytes"), ("total_bytes", "bytes_excluding_gaps"),
                           ("bytes_including_gaps", "bytes_including_gaps")):
        assert frame[column].tolist() == [int(tiles.loc[io, source].sum()), int(tiles.loc[~io, source].sum())]
    assert frame["max_tile_bytes"].tolist() == [int(tiles.loc[io, "bytes_including_gaps"].max()),
                                                int(tiles.loc[~io, "bytes_including_gaps"].max())]


def test_streaming_memory_over_all_replicas(report) -> None:  # type: ignore[no-untyped-def]
    totals = replicas.streaming_totals(report)
    assert totals.sharded_per_replica == 236_032
    assert totals.per_replica == int(report.remote_buffers["bytes"].sum())
    assert (totals.replicas, totals.all_replicas, totals.sharded_all_replicas) == (
        4, 4 * totals.per_replica, 4 * 236_032)


def test_terminal_html_and_notebook_say_the_same(report) -> None:  # type: ignore[no-untyped-def]
    text = TextRenderer(color=False, width=250).render(report)
    page = _plain_html(HtmlRenderer().render(report))
    notebook = _plain_html(report_repr_html(report))
    assert f"({SCOPE})" in text and f"({SCOPE})" in page
    assert SCOPE[0].upper() + SCOPE[1:] + "." in notebook
    rows = [["stride 1, size 2", "2", "0, 1", "26"], ["stride 2, size 2", "2", "0, 2", "63"]]
    for row in rows:
        assert re.search(r"\s+".join(map(re.escape, row)), text), row
        assert " ".join(row) in page, row
    totals = replicas.streaming_totals(report)
    from profcompare.render.format import format_bytes

    sentence = (f"All 4 replicas: {format_bytes(totals.all_replicas)} = {format_bytes(totals.per_replica)} per "
                f"replica x 4 (exact: each replica holds its own remote buffers; the replica-sharded ones, "
                f"230.5 KiB per replica, are a different shard on each replica, 922.0 KiB in all).")
    assert sentence in text and sentence in page
    for words in ("Replicas and collectives", "Memory per IPU", "I/O tiles: the first 32 tiles of each IPU"):
        assert words in text and words in page, words
    assert re.search(r"IPU 0\s+I/O\s+32\s", text) and "IPU 0 I/O 32 " in page


def test_scope_of_one_replica_and_of_reports_without_groupings(report) -> None:  # type: ignore[no-untyped-def]
    one = report.meta.replace(target=Target("Mk2", 1, 1472, 638976, 1.33e9, num_replicas=1, ipus_per_replica=1))
    assert replica_scope(one) == "figures per replica"
    assert replica_scope(report.meta.replace(replication={})) == "figures per replica"
    assert replica_scope(report.meta) == SCOPE


def test_the_store_keeps_replication_and_refuses_a_bad_one(report, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.sqlite"
    write_report(report, path)
    assert dict(read_report(path).meta.replication) == dict(report.meta.replication)
    with pytest.raises(ReportValidationError, match=r"^meta\.replication\.replica_groupings\.stride must be an integer >= 1"):
        report.meta.replace(replication={"replica_groupings": [
            {"stride": 0, "group_size": 2, "num_groups": 2, "collectives": 1, "cycles": 1}]})
    with pytest.raises(ReportValidationError, match=r"^meta\.replication: unknown keys \['tp'\]$"):
        report.meta.replace(replication={"tp": 2})


def test_code_loaded_at_run_time() -> None:
    """One graph loaded by remote_code_load and called once: one row, its loaded code's bytes."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")

    def body(a):  # type: ignore[no-untyped-def]
        return a + a

    g = ir.create_graph(body, x)
    with ir.main_graph, popxl.in_sequence(True):
        ops.remote_code_load(g, "executable")
        (y,) = ops.call(g, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    rep = compile_program(lower(ir)).report
    frame = replicas.loaded_code(rep)
    v = rep.variables
    row = v[v["name"].astype(str).str.contains("/loaded code")]
    assert len(frame) == 1 and len(row) == 1
    assert (frame["graph"][0], int(frame["bytes"][0]), int(frame["loads"][0])) == (
        str(row["name"].iloc[0]).split("/loaded code")[0], int(row["bytes"].iloc[0]), 1)
    text = TextRenderer(color=False, width=200).render(rep)
    page = _plain_html(HtmlRenderer().render(rep))
    assert "Code loaded at run time" in text and "Code loaded at run time" in page


def test_a_comparison_sets_the_groupings_side_by_side(report) -> None:  # type: ignore[no-untyped-def]
    """phased all-reduces each of the 21 gradients over the data-parallel groups; phased-rts
    reduce-scatters, slices and all-gathers each (3 x 21): the tensor-parallel ones are the same."""
    from profcompare.comparison import compare
    from profcompare.render.sections.replicas import comparison_replicas_section

    cmp = compare(_gpt("phased"), report)
    section = comparison_replicas_section(cmp)
    assert section is not None and section.table is not None
    rows = [tuple(cell.text for cell in row) for row in section.table.rows]
    assert [r[:3] for r in rows] == [("stride 1, size 2", "26", "26"), ("stride 2, size 2", "21", "63")]
    assert rows[0][5] == "0"  # the same collectives on the same data: the same modelled cycles
    text = TextRenderer(color=False, width=250).render(cmp)
    page = _plain_html(HtmlRenderer().render(cmp))
    markdown = MarkdownRenderer().render(cmp)
    for row in rows:
        assert re.search(r"\s+".join(map(re.escape, row)), text), row
        assert " ".join(row) in page, row
        assert "| " + " | ".join(row) + " |" in markdown, row
    for words in ("Replicas and collectives", "Over all replicas (per replica x replicas, exact): base "):
        assert words in text and words in page


def test_the_terminal_and_the_page_draw_one_section(report) -> None:  # type: ignore[no-untyped-def]
    """The replicas and the per-tile-set sections are built once: the terminal's document and the
    HTML page hold the same section (the page with its notes at the table)."""
    from profcompare.render.html import build_page
    from profcompare.render.sections.ipus import report_ipu_section
    from profcompare.render.page.model import placed_for_page
    from profcompare.render.sections.replicas import report_replicas_section
    from profcompare.render.sections import report_document

    page = {s.id: s for s in build_page(report).sections}
    document = {s.title: s for s in report_document(report).sections}
    built = (report_replicas_section(report), report_ipu_section(report))
    assert [s.id for s in built if s is not None] == ["replicas", "memory-per-ipu"]
    for section in built:
        assert section is not None
        assert document[section.title] == section
        assert page[section.id] == placed_for_page(section)
