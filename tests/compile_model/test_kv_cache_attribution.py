"""A key/value cache is its own role, found by how the program uses the variable: written in
place one position at a time (DynamicUpdate) and read back by the attention's MatMul, never
updated as a weight. Hand-checked on a one-step decoder: a [4, 8] float32 key cache (128 B)
written at ``position`` with the step's key x @ Wk, read by (x @ Wq) @ cache^T."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.analysis.ledger import ledger


def _decoder(update_as_weight: bool = False, read_by_matmul: bool = True):  # type: ignore[no-untyped-def]
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        xs = popxl.h2d_stream((1, 8), popxl.float32, "x")
        out = popxl.d2h_stream((1, 4), popxl.float32, "scores")
        wq = popxl.variable(np.ones((8, 8), np.float32), name="layer.0.q.weight")
        wk = popxl.variable(np.ones((8, 8), np.float32), name="layer.0.k.weight")
        cache = popxl.variable(np.zeros((4, 8), np.float32), name="layer.0.key_cache")
        pos = popxl.variable(np.zeros((1,), np.uint32), name="position")
        x = ops.host_load(xs)
        k = x @ wk
        ops.dynamic_update_(cache, pos, k, axes=[0], sizes=[1], no_overlap=True)
        if read_by_matmul:
            scores = (x @ wq) @ ops.transpose(cache)
        else:
            scores = ops.slice(ops.sum(cache, axis=[0], keepdims=True), start=[0, 0], stop=[1, 4]) + (x @ wq)[:, :4]
        ops.host_store(out, scores)
        if update_as_weight:
            ops.scaled_add_(cache, ops.init((4, 8), popxl.float32, "delta", "zero"), b=-0.1)
    return compile_program(lower(ir, "ipu_hw")).report


def _rows(report) -> dict[str, tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    v = report.variables
    return {str(n): (str(k), p, str(r)) for n, k, p, r in zip(v["name"], v["kind"], v["parameter"], v["role"])}


def test_the_cache_is_its_own_role_and_parameter() -> None:
    report = _decoder()
    rows = _rows(report)
    assert rows["layer.0.key_cache"] == ("kv_cache", "layer.0.key_cache", "kv_cache")
    assert rows["layer.0.k.weight"] == ("weight", "layer.0.k.weight", "weight")
    # the key written into the cache this step: an activation, of the cache
    assert rows["matmul_out"] == ("activation", "layer.0.key_cache", "activation")
    assert rows["position"] == ("other", "", "other")
    led = ledger(report)
    cache = led[led["role"] == "kv_cache"]
    assert list(zip(cache["parameter"], cache["bytes"])) == [("layer.0.key_cache", 128)]
    # model state in tile memory: two 256 B weights and the 128 B cache
    assert report.summary()["variable_bytes"] == 2 * 256 + 128


@pytest.mark.parametrize(("update_as_weight", "read_by_matmul", "kind"), [
    (True, True, "weight"),  # also stepped by an optimizer-like update: a weight, not a cache
    (False, False, "other"),  # written per position but never an attention operand: no cache
])
def test_what_is_no_cache(update_as_weight: bool, read_by_matmul: bool, kind: str) -> None:
    rows = _rows(_decoder(update_as_weight, read_by_matmul))
    assert rows["layer.0.key_cache"][0] == kind
    assert "kv_cache" not in {r for _k, _p, r in rows.values()}
