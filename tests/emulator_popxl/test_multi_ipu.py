"""popxl placement on the simulator: popxl.ipu, copy_to_ipu / ops.ipu_copy, io_tiles, io_tile_copy,
IPU counts, and popxl-addons pipelined_execution (numerically identical to a single-IPU run)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops


def _two_ipu_program(split: bool):
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        x_stream = popxl.h2d_stream((4, 2), popxl.float32, "x")
        y_stream = popxl.d2h_stream((4, 3), popxl.float32, "y")
        x = ops.host_load(x_stream, "x")
        h = x @ w
        if split:
            h = h.copy_to_ipu(1)
            with popxl.ipu(1):
                y = ops.relu(h) + 1.0
        else:
            y = ops.relu(h) + 1.0
        ops.host_store(y_stream, y)
    return ir, x_stream, y_stream


def test_two_ipus_give_the_single_ipu_values_and_count_ipus():
    data = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    results = {}
    for split in (False, True):
        ir, xs, ys = _two_ipu_program(split)
        with popxl.Session(ir, "ipu_model") as s:
            results[split] = s.run({xs: data})[ys]
            assert s.ipus_per_replica == (2 if split else 1)
            assert s.num_ipus == (2 if split else 1)
    np.testing.assert_array_equal(results[False], results[True])


def test_ipu_placement_of_tensors_and_copy_names():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(3, np.float32), name="a")
        with popxl.ipu(2):
            b = a + 1
        c = ops.ipu_copy(b, 0)
        d = a.copy_to_ipu(3, 0)
        assert (a.ipu, b.ipu, c.ipu, d.ipu) == (2, 2, 0, 3)
        assert c.name == b.name + "_c0"
        # a variable has no producer: its IPU is its first consumer's
        assert ops.ipu_copy(a, 1).ipu == 1 and a.ipu == 2
        lonely = popxl.variable(np.ones(2, np.float32), name="lonely")
        with pytest.raises(ValueError, match="specify `source`"):
            ops.ipu_copy(lonely, 1)
        lonely2 = popxl.variable(np.ones(2, np.float32), name="lonely2")
        with pytest.raises(ValueError, match="IPU is undefined"):
            lonely2.ipu  # noqa: B018 - the property raises
    ir.replication_factor = 3
    with popxl.Session(ir, "ipu_model") as s:
        # 4 IPUs per replica x 3 replicas -> the next power of two
        assert (s.ipus_per_replica, s.num_ipus) == (4, 16)


def test_io_tiles_context_and_io_tile_copy():
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = 32
    assert ir.num_io_tiles == 32
    with ir.main_graph:
        a = popxl.variable(np.ones(3, np.float32), name="a")
        with popxl.io_tiles():
            b = a * 2
        c = ops.io_tile_copy(b)
        e = ops.io_tile_copy(c)
        assert (b.tile_set, c.tile_set, e.tile_set) == ("io", "compute", "io")
    prog = lower(ir)
    assert prog.num_io_tiles == 32
    assert prog.tensors[b.id].tile_set == "io" and prog.tensors[c.id].tile_set == "compute"
    with pytest.raises(NotImplementedError, match="SessionOptions.autoRecomputation"):
        ir._pb_ir.getSessionOptions().autoRecomputation = 1


def test_single_ipu_program_lowers_without_placement():
    ir, _, _ = _two_ipu_program(False)
    prog = lower(ir)
    assert prog.ipus_per_replica == 1 and prog.pipelines == ()
    assert all(t.ipu == 0 and t.tile_set == "compute" for t in prog.tensors.values())
    assert all("ipu" not in op.attrs for op in prog.ops.values())


def test_a_call_runs_where_its_called_graph_is():
    """A graph made outside popxl.ipu that calls a graph built on IPU 1 (as popxl-addons'
    recompute_graph makes one): PopART places a call's inputs and outputs by the called graph's
    tensors, so the call's outputs and its copies in and out are on IPU 1, not on IPU 0."""
    from profcompare.emulator.compile.programs import lower_to_steps
    from profcompare.emulator.compile.trace import step_places

    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(1):
            inner = ir.create_graph(lambda t: ops.relu(t) + 1.0, popxl.TensorSpec((4,), popxl.float32))
        outer = ir.create_graph(lambda t: ops.call(inner, t)[0], popxl.TensorSpec((4,), popxl.float32))
        x = popxl.variable(np.ones(4, np.float32), name="x")
        y, = ops.call(outer, x)  # outside popxl.ipu too
        assert (x.ipu, y.ipu) == (1, 1)  # Tensor.ipu says so as well
    prog = lower(ir)
    ipu_of = {t.name: t.ipu for t in prog.tensors.values()}
    assert prog.ipus_per_replica == 2
    calls = [op for op in prog.ops.values() if op.type == "Call"]
    assert len(calls) == 2 and not any("ipu" in op.attrs for op in calls)  # made outside popxl.ipu
    assert {prog.tensors[t].ipu for op in calls for t in (*op.inputs, *op.outputs)} == {1}
    assert ipu_of["x"] == 1
    steps = lower_to_steps(prog)
    places, _ = step_places(prog, steps, prog.ipus_per_replica)
    copies = [places[s.index] for s in steps.static if s.role in ("copy_in", "copy_out")]
    assert copies and set(copies) == {(1,)}


def _pipeline(steps: int, stages: int, pipelined: bool):
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream((2,), popxl.float32, "x")
        ys = popxl.d2h_stream((2,), popxl.float32, "y")

        def body(p):
            for s in range(stages):
                ctx = p.stage(s) if p else _null()
                with ctx, popxl.ipu(s):
                    x = ops.host_load(xs, "x") if s == 0 else x  # noqa: F821 - bound in the previous stage
                    x = x * 2.0 + float(s)
                    if s + 1 < stages:
                        x = x.copy_to_ipu(s + 1)
                    else:
                        ops.host_store(ys, x)

        if pipelined:
            with addons.pipelined_execution(steps) as p:
                body(p)
        else:
            body(None)
    ir.num_host_transfers = steps if pipelined else 1
    return ir, xs, ys


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def test_pipeline_gives_the_values_of_sequential_runs():
    steps = 6
    data = np.arange(steps * 2, dtype=np.float32).reshape(steps, 2)
    ir, xs, ys = _pipeline(steps, 3, True)
    with popxl.Session(ir, "ipu_model") as s:
        out = s.run({xs: data})[ys]
    ir1, xs1, ys1 = _pipeline(steps, 3, False)
    with popxl.Session(ir1, "ipu_model") as s1:
        ref = np.stack([s1.run({xs1: data[i]})[ys1] for i in range(steps)])
    np.testing.assert_array_equal(out, ref)
    # hand check: ((x*2 + 0)*2 + 1)*2 + 2 = 8x + 4
    np.testing.assert_array_equal(out, 8 * data + 4)
    prog = lower(ir)
    (pipe,) = prog.pipelines
    assert pipe.steps == steps and [s for s, _ in pipe.stages] == [0, 1, 2]
    assert dict(pipe.stage_ipus) == {0: 0, 1: 1, 2: 2} and len(pipe.copies) == 2
    assert all(op.type != "PipelineRepeat" for op in prog.ops.values())


def test_pipeline_refusals():
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.ones(2, np.float32))
        with pytest.raises(RuntimeError, match="stage context"):
            with addons.pipelined_execution(4):
                v + 1
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="at least 2x"):
        with addons.pipelined_execution(3) as p:
            with p.stage(0):
                a = v2 = popxl.variable(np.ones(2, np.float32)) + 1
            with p.stage(1), popxl.ipu(1):
                a.copy_to_ipu(1) * 2
        del v2


def test_stash_and_restore_returns_each_micro_batch_its_tensor():
    steps = 6
    data = np.arange(steps, dtype=np.float32).reshape(steps, 1)
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream((1,), popxl.float32, "x")
        ys = popxl.d2h_stream((1,), popxl.float32, "y")
        with addons.pipelined_execution(steps) as p:
            with p.stage(0):
                x = ops.host_load(xs, "x")
                a = x + 10.0
            with p.stage(1), popxl.ipu(1):
                b = a.copy_to_ipu(1) * 2.0
            with p.stage(2):
                kept = p.stash_and_restore_tensor(a)
                ops.host_store(ys, kept + b.copy_to_ipu(0, 1))
    ir.num_host_transfers = steps
    with popxl.Session(ir, "ipu_model") as s:
        out = s.run({xs: data})[ys]
    np.testing.assert_array_equal(out, 3 * (data + 10.0))
