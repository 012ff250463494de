"""What the compile model charges for popxl-addons' custom ops built from popxl ops: their
pass-through op is a view (no steps, no cycles, storage shared with the value it passes), and a
tensor-parallel all-reduce of identical inputs is the Identity PopART's OpToIdentityPattern
leaves, costed as popxl's identity."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import CompiledProgram, compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.ops.cross_entropy_sharded_loss import cross_entropy_sharded_loss
from profcompare.emulator.popxl_addons.ops.layer_norm_distributed import layer_norm_distributed
from profcompare.emulator.popxl_addons.ops.replicated_all_reduce_TP import replicated_all_reduce_TP as tp
from profcompare.emulator.program import LoweredProgram


def _cycles_by_op_name(program: LoweredProgram, compiled: CompiledProgram) -> dict[str, int]:
    out: dict[str, int] = {}
    for step in compiled.steps.static:
        if step.op:
            name = program.ops[step.op].name
            out[name] = out.get(name, 0) + int(compiled.static_cycles[step.index].sum())
    return out


def _tp_program(identity: bool) -> LoweredProgram:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones((64, 128), np.float32))
        if identity:
            ops.identity(x)
        else:
            tp.replicated_all_reduce_identical_inputs(x)
    return lower(ir)


def test_pass_throughs_lower_to_views_without_steps_or_cycles() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones((64, 256), np.float32))
        w = popxl.variable(np.ones((256,), np.float32))
        b = popxl.variable(np.zeros((256,), np.float32))
        y = layer_norm_distributed(x, w, b)
        cross_entropy_sharded_loss(y, popxl.variable(np.zeros((64,), np.int32)), reduction="none")
    program = lower(ir)
    compiled = compile_program(program)
    passes = {op.attrs["custom_op"]: op for op in program.ops.values() if op.type == "Alias"}
    assert set(passes) == {"LayerNormDistributed", "CrossEntropySharded"}
    assert not any(step.op in {op.id for op in passes.values()} for step in compiled.steps.static)
    for op in passes.values():
        assert "grad" not in op.attrs
        # the output shares the storage of the value the composition computed
        assert op.attrs["aliases"] == {op.outputs[0]: op.inputs[-1]}
        root = compiled.steps.alias_root
        assert root[op.outputs[0]] == root.get(op.inputs[-1], op.inputs[-1])
    cycles = _cycles_by_op_name(program, compiled)
    assert "layer_norm_distributed" not in cycles and "cross_entropy_sharded" not in cycles


def test_all_reduce_tp_of_identical_inputs_costs_what_an_identity_costs() -> None:
    program = _tp_program(identity=False)
    (op,) = [o for o in program.ops.values() if o.name == "replicated_all_reduce_TP"]
    assert op.type == "Identity" and op.attrs["identical_inputs"] is True
    compiled = compile_program(program)
    steps = [s for s in compiled.steps.static if s.op == op.id]
    assert [(s.type, s.role) for s in steps] == [("OnTileExecute", "compute"), ("Sync", "sync_internal")]
    identity = _tp_program(identity=True)
    assert _cycles_by_op_name(program, compiled)["replicated_all_reduce_TP"] == \
        _cycles_by_op_name(identity, compile_program(identity))["identity"] == 352
    assert compiled.phase_cycles.get("collective", 0) == 0


def test_all_reduce_tp_of_different_inputs_stays_a_collective() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        tp.replicated_all_reduce_identical_grad_inputs(popxl.variable(np.ones((64, 128), np.float32)))
    program = lower(ir)
    (op,) = [o for o in program.ops.values() if o.name == "replicated_all_reduce_TP"]
    assert op.type == "ReplicatedAllReduceTP"
    assert compile_program(program).phase_cycles["collective"] > 0
