"""The compile model with more than one IPU per replica, I/O tiles and pipelining (hand-checked)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.placement import Layout, pipeline_cycles, placed_tile_bytes
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device

from .pipelined_programs import two_stage_copy

MK2 = get_device("mk2")


def _copy_program(io_tiles: int = 0):
    """IPU 0: variable a (1024 fp32 = 4096 B) and a*2 (4096 B, same shape: same tiles);
    IPU 1: the copy of a*2 (4096 B), stored to the host."""
    ir = popxl.Ir()
    ir.num_io_tiles = io_tiles
    with ir.main_graph:
        a = popxl.variable(np.ones(1024, np.float32), name="a")
        ys = popxl.d2h_stream((1024,), popxl.float32, "y")
        c = (a * 2.0).copy_to_ipu(1)
        with popxl.ipu(1):
            ops.host_store(ys, c)
    return ir


def test_memory_per_ipu_is_what_each_ipu_holds():
    cp = compile_program(lower(_copy_program()), MK2)
    r = cp.report
    assert r.meta.target.ipus_per_replica == 2 and r.meta.target.num_ipus == 2
    tiles = r.tiles
    assert len(tiles) == 2 * 1472 and (tiles.groupby("ipu").size() == 1472).all()
    per_ipu = tiles.groupby("ipu")["not_always_live_peak_bytes"].sum()
    # IPU 0: a and a*2 live together on the same 32 tiles; IPU 1: only the copy
    assert per_ipu.to_dict() == {0: 8192, 1: 4096}
    assert (tiles.groupby("ipu")["stack"].sum() == 1472 * MK2.stack_bytes_per_tile).all()
    # the copy's global exchange code sits on the tiles of both ends (32 + 32)
    gx = tiles.groupby("ipu")["globalExchangeCode"].sum().to_dict()
    assert gx == {0: 32 * MK2.global_exchange_code_bytes, 1: 32 * MK2.global_exchange_code_bytes}


def test_ipu_copy_costs_bytes_over_the_ipu_link():
    cp = compile_program(lower(_copy_program()), MK2)
    static = cp.steps.static
    cyc = dict(zip([s.name for s in static], cp.static_cycles.sum(axis=1)))
    link = [v for k, v in cyc.items() if k.endswith("/IpuCopy")]
    expected = int(np.ceil(4096 / MK2.ipu_link_bytes_per_s * MK2.clock_hz + MK2.exchange_overhead_cycles))
    assert link == [expected]
    assert [v for k, v in cyc.items() if k.endswith("ipucopy/External Sync")] == [MK2.global_sync_cycles]


def _two_loads(io_tiles: int):
    """Two host loads of 4096 fp32 (16 KiB each): ``x`` as popxl builds it by default, ``z``
    inside ``popxl.io_tiles()``; each is used by an add on the compute tiles."""
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = io_tiles
    with ir.main_graph:
        xs = popxl.h2d_stream((4096,), popxl.float32, "x")
        zs = popxl.h2d_stream((4096,), popxl.float32, "z")
        x = ops.host_load(xs, "x")
        with popxl.io_tiles():
            z = ops.host_load(zs, "z")
        z_compute = ops.io_tile_copy(z)
        y = x + z_compute
        del y
    return compile_program(lower(ir), MK2).report


def test_io_tiles_hold_only_what_the_program_puts_there():
    r = _two_loads(32)
    tiles = r.variables.set_index("name")["tiles"].to_dict()
    # z (loaded inside io_tiles()) is spread over the 32 I/O tiles; x, loaded outside, lands on
    # compute tiles like the copy of z and the add: 16384 B at 128 B per tile (the minimum) = 128
    assert tiles == {"x_init": 128, "z_init": 32, "z_hostload_iotilecopy": 128, "add_out": 128}
    nal = r.tiles["not_always_live_peak_bytes"].to_numpy()
    # by hand: I/O tiles 0..31 hold z only, 16384 / 32 = 512 B each
    assert (nal[:32] == 512).all()
    # PopART's LinearMapper places x's placeholder on the first 128 compute tiles (32..159) and
    # the copy of z, also created outside its op, where x ended (160..287); the add's output is
    # a clone of x: 2 x 128 B on x's tiles, 128 B on the copy's; no other tile holds anything
    assert nal[32:160].tolist() == [2 * 128] * 128
    assert nal[160:288].tolist() == [128] * 128
    assert not nal[288:].any()
    assert int(nal.sum()) == 32 * 512 + 128 * 3 * 128


def test_layout_places_io_and_compute_regions():
    lay = Layout(1, 1472, 32)
    assert lay.region(0, "io") == (0, 32) and lay.region(0, "compute") == (32, 1440)
    row = placed_tile_bytes(lay, [4096], [4], [(4096,)], ["float32"], [0], ["io"], datapath_bytes=8,
                            min_bytes_per_tile=128)[0]
    assert row[:32].sum() == 16384 and row[32:].sum() == 0 and (row[:32] == 512).all()
    comp = placed_tile_bytes(lay, [4096], [4], [(4096,)], ["float32"], [0], ["compute"], datapath_bytes=8,
                             min_bytes_per_tile=128)[0]
    assert comp[:32].sum() == 0 and comp.sum() == 16384


def test_layout_rejects_too_many_io_tiles():
    with pytest.raises(ValueError, match="num_io_tiles"):
        Layout(1, 1472, 1472)


def test_pipeline_cycle_schedule():
    # 3 stages, 6 steps: 2 ramp-up, 4 main, 2 ramp-down cycles; no copy after the last
    sched = pipeline_cycles(3, 6)
    assert [a for a, _ in sched] == [(0,), (0, 1)] + [(0, 1, 2)] * 4 + [(1, 2), (2,)]
    assert [c for _, c in sched] == [True] * 7 + [False]


def _pipelined(steps: int) -> popxl.Ir:
    return two_stage_copy((256,), steps)


def test_pipeline_run_is_the_critical_path_of_the_schedule():
    steps = 8
    cp = compile_program(lower(_pipelined(steps)), MK2)
    rows, critical = cp.timeline
    static = cp.static_cycles
    ex = cp.steps.exec_static
    prog = lower(_pipelined(steps))
    (pipe,) = prog.pipelines
    stage_ops = {pos: set(ids) for pos, (_s, ids) in enumerate(pipe.stages)}
    copies = set(pipe.copies)
    t = {0: 0, 1: 0, "copy": 0}
    host = {0: 0, 1: 0}
    buffer = iterator = post = 0
    for entry, (a, b) in zip(prog.schedule, cp.steps.exec_ranges):
        top = entry.call_path[0] if entry.call_path else entry.op
        key = 0 if top in stage_ops[0] else 1 if top in stage_ops[1] else "copy" if top in copies else None
        assert key is not None
        for e in range(a, b):
            role = cp.steps.static[int(ex[e])].role
            if role in ("host_begin", "host_mid", "host_end"):
                host[key] += int(static[ex[e]].sum())
            elif role == "ipu_copy_buffer":
                buffer += int(static[ex[e]].sum())
            elif role == "pipeline_iterator":
                iterator += int(static[ex[e]].sum())
            else:
                t[key] += int(static[ex[e]].sum())
                post += int(static[ex[e]].sum()) if role == "ipu_copy_post" else 0
    # stage 0's output moves into the pipeline's buffer after stage 0's steps; every main cycle
    # starts with the repeat loop's iterator moved into its body on IPU 0, beside IPU 1's move of
    # what it received (the longer of the two delays the next host load)
    assert buffer > 0 and iterator > 0 and post > 0
    t[0] += buffer
    # 1 ramp-up cycle (stage 0), 7 main cycles (both stages), 1 ramp-down (stage 1); copies after 8
    # cycles. In a cycle the host load (stage 0's) and the host store (stage 1's) synchronise both
    # IPUs: the load first, then the stages' other steps on their IPUs at once, then the store. The
    # run opens with two control copies and the host's wait before its first host transfer.
    # and the program Switch's control broadcast over the 2 IPUs: 808 (test_trace._host_begin_blocks)
    opening = 2 * (269 + 1109 + 140) + 464_832 + 808
    assert cp.opening is not None and cp.opening[1] == opening
    expected = (8 * host[0] + 8 * host[1] + t[0] + 7 * max(t[0], t[1]) + t[1] + 8 * t["copy"]
                + 7 * max(0, iterator - post) + opening)
    assert int(critical.sum()) == expected
    assert cp.cycles_per_step == expected
    ex_frame = cp.execution_frame(1)
    span = int(ex_frame["cycles_to"].max() - ex_frame["cycles_from"].min())
    assert span == expected + cp.runtime_cycles
    assert len(rows) > 0


def test_a_pipelined_copy_moves_its_tensor_into_the_pipeline_buffer_after_the_stage_producing_it():
    steps = 6
    cp = compile_program(lower(_pipelined(steps)), MK2)
    rows, _ = cp.timeline
    static = cp.steps.static
    ex = cp.steps.exec_static
    placed = [(static[int(ex[r.step])], r) for r in rows]
    buffers = [r for st, r in placed if st.role == "ipu_copy_buffer"]
    iterators = [r for st, r in placed if st.role == "pipeline_iterator"]
    # stage 0 runs in 6 pipeline cycles (1 ramp-up, 5 main): its output moves into the buffer each
    # time, right after the stage's last step on IPU 0; the repeat loop's iterator moves once per
    # main cycle (steps - stages + 1 = 5)
    assert len(buffers) == steps and len(iterators) == steps - 2 + 1
    for r in buffers:
        before = [q for st, q in placed if q.start + int(q.cycles.sum()) == r.start and st.role == "sync_internal"]
        assert before, "the buffer move follows the stage's last step"
    names = {st.name for st in static if st.role in ("ipu_copy_buffer", "pipeline_iterator")}
    assert names == {"ipucopy/PipelineBuffer/ExchangePre", "ipucopy/PipelineIterator/ExchangePre"}
    assert {st.type for st in static if st.role in ("ipu_copy_buffer", "pipeline_iterator")} == {"DoExchange"}
    # a copy outside a pipeline has neither
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream((256,), popxl.float32, "x")
        with popxl.ipu(0):
            x = ops.host_load(xs, "x") * 2.0
        x.copy_to_ipu(1)
    plain = compile_program(lower(ir), MK2)
    assert not any(st.role in ("ipu_copy_buffer", "pipeline_iterator") for st in plain.steps.static)


def test_the_report_records_which_tiles_hold_each_variable():
    """variable_tiles: a (1024 fp32 on IPU 0) on 32 tiles of 128 B, its runs summing to its bytes
    and tile count; the copy on IPU 1 on IPU 1's tiles; each variable's placement adds up to the
    variables table's bytes and tiles."""
    from profcompare.emulator.compile.report import tile_runs

    r = compile_program(lower(_copy_program()), MK2).report
    placed = r.variable_tiles
    assert len(placed)
    spans = placed["last_tile"] - placed["first_tile"] + 1
    per_variable = (placed["bytes_per_tile"] * spans).groupby(placed["variable"]).sum()
    tiles = spans.groupby(placed["variable"]).sum()
    variables = r.variables.set_index("name")
    assert per_variable.to_dict() == variables.loc[per_variable.index, "bytes"].to_dict()
    assert tiles.to_dict() == variables.loc[tiles.index, "tiles"].to_dict()
    a = placed[placed["variable"] == "a"]
    assert int((a["bytes_per_tile"] * (a["last_tile"] - a["first_tile"] + 1)).sum()) == 4096
    assert set(a["bytes_per_tile"]) == {128} and set(a["ipu"]) == {0}
    assert (placed["first_tile"] // 1472 == placed["ipu"]).all() and (placed["last_tile"] // 1472 == placed["ipu"]).all()
    assert set(placed["ipu"]) == {0, 1}
    # runs of equal bytes: a wrap is two runs, zeros are left out
    first, last, size = tile_runs(np.array([5, 5, 0, 0, 7, 5, 5]))
    assert (first.tolist(), last.tolist(), size.tolist()) == ([0, 4, 5], [1, 4, 6], [5, 7, 5])


def test_a_placement_over_budget_records_the_fullest_tiles_only(monkeypatch):
    """Over MAX_PLACEMENT_ROWS the variables of the fullest tiles only are recorded, one row per
    variable and tile, each such tile marked by a PLACEMENT_MARK row; the tile detail lists those
    tiles' variables and, on any other tile, the replica's live set with a note naming the tiles."""
    from profcompare.analysis.tile_detail import partial_placement, placement_recorded, tile_detail
    from profcompare.emulator.compile import report as sim_report
    from profcompare.model import PLACEMENT_MARK
    from profcompare.render.sections.tile_detail import PARTIAL_PLACEMENT_NOTE, report_tile_detail_section

    whole = compile_program(lower(_copy_program()), MK2).report
    assert partial_placement(whole) == ()  # a small program: every tile recorded
    monkeypatch.setattr(sim_report, "MAX_PLACEMENT_ROWS", 3)
    r = compile_program(lower(_copy_program()), MK2).report
    placed = r.variable_tiles
    fullest = int(r.tiles["tile"][r.tiles["bytes_including_gaps"].idxmax()])
    assert partial_placement(r) == (fullest,)  # at least one tile, even over the budget
    marks = placed[placed["variable"] == PLACEMENT_MARK]
    assert marks[["first_tile", "last_tile", "bytes_per_tile"]].values.tolist() == [[fullest, fullest, 0]]
    # the fullest tile's rows are the whole placement's rows on that tile
    full = whole.variable_tiles
    on = full[(full["first_tile"] <= fullest) & (full["last_tile"] >= fullest)]
    kept = placed[placed["variable"] != PLACEMENT_MARK]
    assert sorted(zip(kept["variable"], kept["bytes_per_tile"])) == sorted(zip(on["variable"], on["bytes_per_tile"]))
    assert placement_recorded(r) and placement_recorded(r, fullest)
    other = next(t for t in range(1472) if t != fullest)
    assert not placement_recorded(r, other)
    assert tile_detail(r, fullest).placement_recorded and not tile_detail(r, other).placement_recorded
    notes = report_tile_detail_section(r).notes
    assert f"{PARTIAL_PLACEMENT_NOTE} (1: tiles {fullest})." in notes


def test_liveness_of_a_two_ipu_program_has_one_row_per_step_and_ipu():
    cp = compile_program(lower(_copy_program()), MK2)
    live = cp.report.liveness
    steps = live["step"].nunique()
    assert len(live) == 2 * steps
    assert live["ipu"].tolist() == [0, 1] * steps
    # the per-IPU rows of a step add up to the replica's curve, which the totals views read
    curve = cp.report.liveness_per_step()
    assert curve["not_always_live_bytes"].tolist() == live.groupby("step")["not_always_live_bytes"].sum().tolist()
    by_ipu = live.pivot(index="step", columns="ipu", values="not_always_live_bytes")
    # IPU 0 holds a and a*2 (8192 B at most), IPU 1 only the copy of a*2 (4096 B)
    assert by_ipu[0].max() == 8192 and by_ipu[1].max() == 4096
    assert cp.report.summary()["not_always_live_peak_bytes"] == curve["not_always_live_bytes"].max()
    # the copy is live on IPU 1 while a*2 is still live on IPU 0: the replica's peak is both
    assert curve["not_always_live_bytes"].max() == 12288


def test_compare_at_a_step_splits_the_bytes_per_ipu_and_the_chart_draws_each_ipu():
    from profcompare.comparison import compare
    from profcompare.comparison.at_step import compare_at
    from profcompare.render.interactive import liveness_chart

    report = compile_program(lower(_copy_program()), MK2).report
    curve = report.liveness_per_step()
    peak = int(curve["step"][curve["not_always_live_bytes"].idxmax()])
    at = compare_at(compare(report, report), "peak")
    assert at.base.choice.step == peak
    assert at.per_ipu.to_dict("list") == {"ipu": [0, 1], "base_bytes": [8192, 4096], "new_bytes": [8192, 4096],
                                          "delta_bytes": [0, 0]}
    chart = liveness_chart([report], ["report"])
    names = [r["attributes"]["data_source"]["attributes"].get("name")
             for r in chart.item["doc"]["roots"][0]["attributes"]["renderers"]
             if "data_source" in r.get("attributes", {}) and "attributes" in r["attributes"]["data_source"]]
    assert "chart-liveness:ipu:0:0" in names and "chart-liveness:ipu:0:1" in names
    assert f"Thin lines: each IPU's not-always-live bytes ({report.label}: 2 IPUs;" in chart.note
