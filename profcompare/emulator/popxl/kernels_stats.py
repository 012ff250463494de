"""Numeric kernels of the statistics and utility ops: ``Histogram``, ``ReduceMedian`` /
``ReduceMedianGrad``, ``LambSquare``, ``IncrementMod`` / ``IncrementModInplace`` and
``PrintTensor`` (semantics in :mod:`.ops.statistics`, :mod:`.ops.elementwise` and
:mod:`.ops.printing`). Registered into :mod:`.execution`'s kernel table when imported; values
keep the ``(R, *shape)`` layout.
"""

from __future__ import annotations

import sys

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _kernel
from .graph import Op


@_kernel("Histogram")
def _histogram(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t = op.inputs[0]
    i, o = cg.slot[t], cg.slot[op.outputs[0]]
    npdt = t.dtype.as_numpy()
    levels = np.asarray(op.attrs["levels"], np.float32).astype(npdt)  # Poplar holds them in t's type
    absolute = op.attrs["absolute_of_input"]
    bins = len(levels) + 1

    def run(env: list) -> None:
        x = env[i].reshape(env[i].shape[0], -1)
        if absolute:
            x = np.abs(x)
        counts = np.zeros((x.shape[0], bins), np.uint32)
        for r in range(x.shape[0]):
            # bin = number of levels <= x (NaN: every comparison false, the last bin)
            where = np.searchsorted(levels, x[r], side="right")
            counts[r] = np.bincount(where, minlength=bins)
        env[o] = counts
    return run


def _median_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(permutation putting the reduced axes last, over the replica-first layout; the kept
    shape; the reduced element count) of a median over ``axes`` of a tensor of ``shape``."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    perm = (0, *(d + 1 for d in kept), *(d + 1 for d in axes))
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return perm, tuple(shape[d] for d in kept), n


@_kernel("ReduceMedian")
def _median(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i = cg.slot[op.inputs[0]]
    vo, io = (cg.slot[t] for t in op.outputs)
    perm, kept, n = _median_layout(op.inputs[0].shape, tuple(op.attrs["axes"]))
    position = n // 2 - 1 if n > 1 and n % 2 == 0 else n // 2
    out_shape = (ex.replicas, *op.outputs[0].shape)

    def run(env: list) -> None:
        x = np.transpose(env[i], perm).reshape(ex.replicas, *kept, n)
        # ASSUMPTION: ties go to the first element (a stable sort); PopART's
        # popops::sortKeyValueInPlace is not documented as stable, so the IPU's index may differ
        order = np.argsort(x, axis=-1, kind="stable")[..., position:position + 1]
        env[vo] = np.take_along_axis(x, order, axis=-1).reshape(out_shape)
        env[io] = order.astype(np.int32).reshape(out_shape)
    return run


@_kernel("ReduceMedianGrad")
def _median_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The upstream gradient put at the index ReduceMedian returned, zeros elsewhere. For tied
    values that index is the simulator's choice (ASSUMPTION, see ``_median``: the first tied
    element, as a stable sort; Poplar's sort is not documented as stable)."""
    g_s, idx_s = cg.slot[op.inputs[0]], cg.slot[op.inputs[1]]
    o = cg.slot[op.outputs[0]]
    x = op.outputs[0]
    perm, kept, n = _median_layout(x.shape, tuple(op.attrs["axes"]))
    moved_shape = (ex.replicas, *kept, *(x.shape[p - 1] for p in perm[1 + len(kept):]))
    inverse = tuple(np.argsort(perm))
    npdt = x.dtype.as_numpy()

    def run(env: list) -> None:
        g = env[g_s].reshape(ex.replicas, *kept, 1).astype(npdt)
        idx = env[idx_s].reshape(ex.replicas, *kept, 1).astype(np.int64)
        grad = np.zeros((ex.replicas, *kept, n), npdt)
        np.put_along_axis(grad, idx, g, axis=-1)
        env[o] = np.ascontiguousarray(np.transpose(grad.reshape(moved_shape), inverse))
    return run


@_kernel("LambSquare")
def _lamb_square(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        x = env[i].reshape(env[i].shape[0], -1).astype(np.float32)
        env[o] = np.einsum("rn,rn->r", x, x)
    return run


def _increment_mod_fn(op: Op) -> tuple[np.dtype, object, object]:
    npdt = op.inputs[0].dtype.as_numpy()
    if np.issubdtype(npdt, np.integer):
        return npdt, npdt.type(int(op.attrs["increment"])), npdt.type(int(op.attrs["modulus"]))
    # float16 tensors are computed with float32 constants (PopART's IncrementModComputex<float>)
    return npdt, np.float32(op.attrs["increment"]), np.float32(op.attrs["modulus"])


@_kernel("IncrementMod", "IncrementModInplace")
def _increment_mod(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    npdt, inc, mod = _increment_mod_fn(op)
    inplace = op.type == "IncrementModInplace"

    def compute(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if np.issubdtype(npdt, np.integer):
                return np.fmod(x + inc, mod).astype(npdt)
            return np.fmod(x.astype(np.float32) + inc, mod).astype(npdt)

    def run(env: list) -> None:
        if inplace:
            x = env[i]
            x[...] = compute(x)
            env[o] = x
        else:
            env[o] = compute(env[i])
    return run


def format_tensor(value: np.ndarray, attrs: dict) -> str:
    """The text print_tensor writes for one replica's value (numpy's array2string from popxl's
    format arguments; see :mod:`.ops.printing`)."""
    threshold = attrs["summarise_threshold"] or sys.maxsize
    width = attrs["max_line_width"] or sys.maxsize
    options: dict = {"threshold": threshold, "edgeitems": attrs["edge_items"], "max_line_width": width,
                     "separator": attrs["separator"]}
    fmt = attrs["float_format"]
    if value.dtype.kind == "f":
        if fmt == "fixed":
            options.update(precision=attrs["digits"], floatmode="fixed", suppress_small=True)
        elif fmt == "scientific":
            digits = attrs["digits"]
            options["formatter"] = {"float_kind": lambda v: np.format_float_scientific(v, precision=digits)}
        elif fmt == "auto":
            options.update(precision=attrs["digits"], floatmode="maxprec")
    text = np.array2string(np.asarray(value), **options)
    if attrs["open_bracket"] != "[" or attrs["close_bracket"] != "]":
        text = text.replace("[", attrs["open_bracket"]).replace("]", attrs["close_bracket"])
    return text


@_kernel("PrintTensor")
def _print_tensor(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    attrs = dict(op.attrs)
    title = attrs["title"]
    printing = attrs["print_self"]

    def run(env: list) -> None:
        x = env[i]
        if printing:
            for r in range(x.shape[0]):
                head = title if x.shape[0] == 1 else f"{title} [replica {r}]"
                print(f"{head}: {format_tensor(x[r], attrs)}", flush=True)
        env[o] = np.array(x)
    return run
