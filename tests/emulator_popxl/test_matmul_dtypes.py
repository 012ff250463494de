"""popxl.ops.matmul's dtype rule, as PopART's MatMulOp::setup: the output is ``output_type`` when
given, else the lhs dtype; the operand dtypes are not compared when the graph is built (Poplar's
matmul refuses operands of different types when the session compiles); float8 operands are
refused without a log2 scale."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def build(lhs: popxl.dtype, rhs: popxl.dtype, **kwargs: object) -> tuple[popxl.Ir, popxl.Tensor]:
    """A main graph computing ``lhs_var @ rhs_var`` (2 x 3 @ 3 x 4) and storing it to a stream."""
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones((2, 3)), lhs, name="a")
        b = popxl.variable(np.ones((3, 4)), rhs, name="b")
        y = ops.matmul(a, b, **kwargs)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    return ir, y


@pytest.mark.parametrize("lhs,rhs,output_type,expected", [
    (popxl.float32, popxl.float16, None, popxl.float32),
    (popxl.float16, popxl.float32, None, popxl.float16),
    (popxl.float16, popxl.float32, popxl.float32, popxl.float32),
    (popxl.float32, popxl.float16, popxl.float16, popxl.float16),
    (popxl.int32, popxl.float32, None, popxl.int32),
])
def test_mixed_operands_build_with_the_lhs_dtype_or_output_type(lhs: popxl.dtype, rhs: popxl.dtype,
                                                               output_type: popxl.dtype | None,
                                                               expected: popxl.dtype) -> None:
    _, y = build(lhs, rhs, output_type=output_type)
    assert y.dtype == expected and y.shape == (2, 4)


def test_mixed_operands_are_refused_when_the_session_compiles() -> None:
    ir, _ = build(popxl.float32, popxl.float16)
    with pytest.raises(RuntimeError, match=r"operands of one type, got a \(float32\) and b \(float16\)"):
        popxl.Session(ir, "ipu_model")


@pytest.mark.parametrize("dt,output_type", [(popxl.float16, None), (popxl.float16, popxl.float32),
                                            (popxl.float32, None)])
def test_operands_of_one_dtype_still_run(dt: popxl.dtype, output_type: popxl.dtype | None) -> None:
    ir, y = build(dt, dt, output_type=output_type)
    assert y.dtype == (output_type or dt)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    (values,) = out.values()
    np.testing.assert_array_equal(values, np.full((2, 4), 3.0, (output_type or dt).as_numpy()))


def test_float8_operands_need_matmul_pow2scaled() -> None:
    f8 = np.zeros((2, 2), np.float16)
    ir = popxl.Ir()
    with ir.main_graph:
        a8 = popxl.variable(f8, popxl.float8_143)
        b8 = popxl.variable(f8, popxl.float8_152)
        x = popxl.variable(np.ones((2, 2), np.float16), popxl.float16, name="x")
        with pytest.raises(RuntimeError, match="every operand of a float8 matmul to be float8"):
            ops.matmul(a8, x)
        with pytest.raises(RuntimeError, match=r"operand x has dtype float16"):
            ops.matmul(x, b8)
        with pytest.raises(RuntimeError, match="need a log2 scale; use popxl.ops.matmul_pow2scaled"):
            ops.matmul(a8, b8)
