"""The program steps of one matmul, forward and backward, against Poplar's as the public evidence
shows them: Graph Analyser's program tree (shared/reference/popvision_screenshots/program_tree.png)
and the real trace of the pipelined MNIST in shared/data (its blocks named by the copy or compute
set they are). The tree shows no syncs; the trace shows an internal sync before each step that
receives data from other tiles (programs.place_syncs)."""

from __future__ import annotations

from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.targets import MK2

from .test_fc_weight_transpose import _linear_grad_ir


def _matmul_steps(compiled, program, phase: str | None) -> list[tuple[str, str]]:
    """(type, name after the op's) of the executed steps of the first MatMul of ``phase`` (None:
    the forward one), in order."""
    (op,) = [o for o in program.ops.values() if o.type == "MatMul" and o.attrs.get("phase") == phase][:1]
    steps = compiled.steps
    out = []
    for entry, (a, b) in zip(program.schedule, steps.exec_ranges):
        if entry.op != op.id:
            continue
        for e in range(a, b):
            st = steps.static[int(steps.exec_static[e])]
            out.append((st.type, st.name.split("/", 1)[1] if "/" in st.name else ""))
        break
    return out


def _program(width: int):
    program = lower(_linear_grad_ir(width))
    return program, compile_program(program, MK2)


def test_a_forward_matmul_is_the_trees_and_the_traces_steps():
    # x[5, 512] @ W[512, 512] (the MNIST's fc2): the tree's WriteUndef where the rearranged operand's
    # life begins; then as the real trace's fc2 forward: the rearrangement copy
    # (copy78_..._to_.../weightsRearranged/OnTileCopy-0), Convolve, Reduce0, Reduce1 (64 partials:
    # two stages), each after an internal sync
    program, compiled = _program(512)
    steps = _matmul_steps(compiled, program, None)
    assert steps[:9] == [
        ("WriteUndef", "rearranged/WriteUndef"), ("Sync", "Internal Sync"),
        ("OnTileExecute", "weightsRearranged/OnTileCopy"), ("Sync", "Internal Sync"),
        ("OnTileExecute", "Convolve"), ("Sync", "Internal Sync"),
        ("OnTileExecute", "Reduce0"), ("Sync", "Internal Sync"), ("OnTileExecute", "Reduce1")]
    # the tree's kinds, syncs left out, in its order: WriteUndef, the copies, Convolve, Reduce0
    kinds = [name.rsplit("/", 1)[-1] for kind, name in steps if kind != "Sync"]
    assert kinds == ["WriteUndef", "OnTileCopy", "Convolve", "Reduce0", "Reduce1"]


def test_a_backward_matmul_on_the_copy_path_is_the_trees_and_the_traces_steps():
    # dY[5, 10] @ W[512, 10]^T (the MNIST's fc4 input gradient): as the tree's second matmul
    # (WriteUndef, preRegroup copy, Transpose, the copy to the acts/weightsRearranged layout,
    # Convolve) and the real trace's fc4 input gradient on IPU 1: DoExchange
    # (fc4.weight_to_.../preRegroup/ExchangePre), OnTileExecute Transpose_#0, Internal Sync,
    # DoExchange ({...partialTranspose, ...}_to_{...actsRearranged, ...weightsRearranged}), Internal
    # Sync, Convolve
    program, compiled = _program(10)
    steps = _matmul_steps(compiled, program, "BwdLHS")
    body = steps[steps.index(("DoExchange", "preRegroup/ExchangePre")):]
    assert steps[0] == ("WriteUndef", "rearranged/WriteUndef")
    assert body[:6] == [
        ("DoExchange", "preRegroup/ExchangePre"), ("OnTileExecute", "Transpose"), ("Sync", "Internal Sync"),
        ("DoExchange", "rearranged/ExchangePre"), ("Sync", "Internal Sync"), ("OnTileExecute", "Convolve")]
    kinds = [name.rsplit("/", 1)[-1] for kind, name in steps if kind != "Sync"]
    assert kinds[:5] == ["WriteUndef", "ExchangePre", "Transpose", "ExchangePre", "Convolve"]


def _tree_rows(compiled, program, phase: str | None) -> list[list[tuple[str, str]]]:
    """(kind, name after the op's) of the program-tree rows, syncs left out, under each Sequence
    named as the first MatMul of ``phase`` (matmuls share their popxl name), in tree order."""
    (op,) = [o for o in program.ops.values() if o.type == "MatMul" and o.attrs.get("phase") == phase][:1]
    tree = compiled.report.programs
    seqs = tree[(tree["kind"].astype(str) == "Sequence") & (tree["name"] == (op.name or op.id))]
    out = []
    for seq in seqs["id"]:
        rows = tree[tree["parent"] == int(seq)]
        out.append([(str(k), n.split("/", 1)[1] if "/" in n else "") for k, n in zip(rows["kind"], rows["name"])
                    if str(k) != "Sync"])
    return out


def test_the_tree_lists_each_matmul_compute_sets_exchange_before_it():
    # the screenshot's first matmul: ... DoExchange (cs0_m4/Conv_1/Convolve/ExchangePre), [PreArrange,]
    # OnTileExecute (m4/Conv_1/Convolve), DoExchange (cs2_m4/Conv_1/Reduce0/ExchangePre), OnTileExecute
    # (m4/Conv_1/Reduce0); the model has no PreArrange (docs section 3: the real trace has none)
    program, compiled = _program(512)
    assert [
        ("WriteUndef", "rearranged/WriteUndef"), ("OnTileExecute", "weightsRearranged/OnTileCopy"),
        ("DoExchange", "Convolve/ExchangePre"), ("OnTileExecute", "Convolve"),
        ("DoExchange", "Reduce0/ExchangePre"), ("OnTileExecute", "Reduce0"),
        ("DoExchange", "Reduce1/ExchangePre"), ("OnTileExecute", "Reduce1")] in _tree_rows(compiled, program, None)
    assert [
        ("WriteUndef", "rearranged/WriteUndef"), ("OnTileExecute", "weightsRearranged/OnTileCopy"),
        ("DoExchange", "Convolve/ExchangePre"), ("OnTileExecute", "Convolve"),
        ("DoExchange", "Reduce0/ExchangePre"), ("OnTileExecute", "Reduce0"),
        ("DoExchange", "Reduce1/ExchangePre"), ("OnTileExecute", "Reduce1")] == _tree_rows(compiled, program, None)[0]
    # the second (copy path): preRegroup copy, Transpose, the copy to the plan's layout, then the
    # Convolve after its exchange (cs3_m5/Conv_1/Convolve/ExchangePre), and its Reduce0 after its own
    # (cs5_m5/Conv_1/Reduce0/ExchangePre)
    program, compiled = _program(10)
    assert [
        ("WriteUndef", "rearranged/WriteUndef"), ("DoExchange", "preRegroup/ExchangePre"),
        ("OnTileExecute", "Transpose"), ("DoExchange", "rearranged/ExchangePre"),
        ("DoExchange", "Convolve/ExchangePre"), ("OnTileExecute", "Convolve"),
        ("DoExchange", "Reduce0/ExchangePre"), ("OnTileExecute", "Reduce0")] in _tree_rows(compiled, program, "BwdLHS")


def test_a_compute_sets_exchange_is_inside_its_executed_step_with_its_cost():
    # the execution trace (the real one and program_tree.png's execution view) has no block for it:
    # the Convolve's step holds its exchange, a small exchange of the weights slice over the
    # partition's tiles (exchange_cost.py), then the AMP estimate
    from profcompare.emulator.compile.cycles import PHASE_INDEX, CostModel
    from profcompare.emulator.compile.exchange_cost import small_exchange_cycles

    program, compiled = _program(512)
    steps = _matmul_steps(compiled, program, None)
    assert not any(name.endswith("ExchangePre") for _kind, name in steps)
    (op,) = [o for o in program.ops.values() if o.type == "MatMul" and o.attrs.get("phase") is None][:1]
    part = CostModel(program, MK2, MK2.tiles_per_ipu).amp_partition(op)
    (conv,) = [s for s in compiled.steps.static if s.op == op.id and s.role == "mm_convolve"]
    row = compiled.static_cycles[conv.index]
    assert row[PHASE_INDEX["exchange"]] == small_exchange_cycles(MK2, part.weights_bytes_per_tile, part.tiles, 1472)
    assert row[PHASE_INDEX["compute"]] == part.convolve_cycles
