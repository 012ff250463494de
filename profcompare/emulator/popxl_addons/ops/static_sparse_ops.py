"""popxl-addons 3.4's dense x constant-sparse matmul (``popxl_addons.ops.static_sparse_ops``, the
C++ op ``SparseMatmul`` over popsparse's static sparse matmul; not in 3.0).

``dense_const_sparse_matmul(lhs, rhs, output_cols)``: ``lhs`` is ``(m, k)`` (or ``(1, m, k)``),
float16 or float32; ``rhs`` a CSR matrix ``(k, output_cols)`` (anything with ``data``,
``indices`` and ``indptr``, such as scipy's ``csr_matrix``) fixed when the program is built. The
Opx stores the non-zero values as float32, sets them into a device tensor of ``lhs``'s dtype
(rounded to nearest) and runs popsparse's dense x sparse matmul, giving ``lhs @ rhs`` in
``lhs``'s dtype. The op is for inference: it defines no gradient.

Here the op is one simulator op of type ``SparseMatmul`` whose inputs are ``lhs`` and a
constant holding the non-zero values in ``lhs``'s dtype (the Poplar tensor the Opx fills, so
the compile model counts its bytes); the kernel multiplies with float32 accumulation and rounds
once to ``lhs``'s dtype (an assumption: popsparse's partials type is not set by the Opx and its
summation order is not modelled). The compile model costs it as an elementwise op of
``2 * m * nnz`` FLOPs on the vector unit (an assumption: the gather/scatter plan of popsparse is
not modelled).

:func:`random_sparse` zeroes entries of a dense array in place with the draws popxl-addons makes
through scipy (``bernoulli.rvs`` uses numpy's global generator: ``binomial(1, 1 - density)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.static_sparse_ops")

__all__ = ["dense_const_sparse_matmul", "random_sparse"]

OP_TYPE = "SparseMatmul"


def random_sparse(dense: np.ndarray, density: float = 0.5) -> np.ndarray:
    """Zero each entry of ``dense`` (in place) with probability ``1 - density``, keeping at least
    the first entry's position out of the mask; return ``dense``."""
    mask = np.random.binomial(1, 1 - density, size=dense.shape).astype(np.bool_)
    if np.all(mask):
        mask.reshape(-1)[0] = False
    dense[mask] = 0
    return dense


@dataclass(frozen=True, eq=False)
class SparsityPattern:
    """Row and column of each non-zero value of a CSR matrix ``(rows, cols)``."""

    rows: int
    cols: int
    row_of_nz: np.ndarray  # int64, one per non-zero value
    col_of_nz: np.ndarray  # int64, one per non-zero value

    @property
    def nnz(self) -> int:
        """Number of non-zero values."""
        return int(self.row_of_nz.size)

    def dense(self, nz: np.ndarray) -> np.ndarray:
        """Return the ``(rows, cols)`` matrix holding ``nz`` at the pattern, zeros elsewhere."""
        out = np.zeros((self.rows, self.cols), nz.dtype)
        out[self.row_of_nz, self.col_of_nz] = nz
        return out

    def __repr__(self) -> str:
        # lowered op attributes keep reprs: the pattern's size, not its indices
        return f"SparsityPattern({self.rows}x{self.cols}, nnz={self.nnz})"


def _pattern(rhs: Any, k: int, output_cols: int) -> SparsityPattern:
    indices = np.asarray(rhs.indices, dtype=np.int64)
    indptr = np.asarray(rhs.indptr, dtype=np.int64)
    if indptr.size != k + 1:
        raise ValueError(f"dense_const_sparse_matmul: the CSR matrix has {indptr.size - 1} rows, lhs has {k} columns")
    if indices.size and (indices.min() < 0 or indices.max() >= output_cols):
        raise ValueError(f"dense_const_sparse_matmul: a column index is outside output_cols={output_cols}")
    rows = np.repeat(np.arange(k, dtype=np.int64), np.diff(indptr))
    return SparsityPattern(k, int(output_cols), rows, indices)


@_kernel(OP_TYPE)
def _sparse_matmul_kernel(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lhs, nz = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    pattern: SparsityPattern = op.attrs["pattern"]
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        values = env[nz]
        # the non-zero values are a constant: the same on every replica
        rhs = pattern.dense(values[0].astype(np.float32))
        env[o] = np.matmul(env[lhs].astype(np.float32), rhs).astype(npdt)
    return run


def dense_const_sparse_matmul(lhs: popxl.Tensor, rhs: Any, output_cols: int) -> popxl.Tensor:
    """Return ``lhs @ rhs`` (``lhs.shape[:-1] + (output_cols,)``, ``lhs``'s dtype) for dense
    ``lhs`` and the constant CSR matrix ``rhs`` (see the module docstring)."""
    if lhs.dtype != popxl.float16 and lhs.dtype != popxl.float32:
        raise RuntimeError(f"dtype {lhs.dtype} not currently supported.")
    if lhs.rank not in (2, 3) or (lhs.rank == 3 and lhs.shape[0] != 1):
        raise RuntimeError(f"dense_const_sparse_matmul: lhs must be (m, k) or (1, m, k), got {lhs.shape}")
    k, m = lhs.shape[-1], lhs.shape[-2]
    pattern = _pattern(rhs, k, output_cols)
    data = np.asarray(rhs.data, dtype=np.float32)
    nz = popxl.constant(data.astype(lhs.dtype.as_numpy()), lhs.dtype, name="rhs")
    out_shape = (*lhs.shape[:-1], int(output_cols))
    op = add_op(OP_TYPE, "sparse_matmul", [lhs, nz], [("sparse_matmul_out", out_shape, lhs.dtype, ())],
                {"pattern": pattern, "output_cols": int(output_cols), "flops": 2 * m * pattern.nnz})
    return op.outputs[0]
