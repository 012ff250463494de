"""Numeric execution of a built Ir with numpy, all replicas at once.

Every value is an array with a leading replica axis, ``(R, *shape)``, so one numpy call serves
every replica; collectives combine along that axis (replica r = (a*group_size + i)*stride + s,
i being r's rank in its group). Each graph is compiled once into a list of closures over a
slot list (``env``); running a graph is a loop over those closures.

Aliasing rules (what makes in-place ops safe): in-place ops write into the existing array and
their output shares it; view-producing ops (reshape, transpose, detach, host_load) share their
input's array unless one side is ever modified in place in the graph, then they copy; calls
pass by-ref inputs as the same array, copy non-by-ref inputs the callee modifies, and copy
outputs that are not freshly computed inside the callee.

Optimizer kernels (moving averages, Adam updater, in-place scaled add) check whether every
replica holds the same values (the usual data-parallel case) and then compute once and copy the
result to all replicas; the results are bit-identical to computing per replica.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import float16_math as f16
from . import float16_torch as ft
from .graph import Graph, Op
from .ops.core import GELU_A, GELU_B
from .replica_threads import by_replica
from .tensor import Constant, Tensor, Variable

if TYPE_CHECKING:
    from .ir import Ir

Kernel = Callable[[list], None]

#: op types whose output shares the input's storage on purpose (popxl aliases)
_ALIAS_OPS = {"ReshapeInplace", "SliceInplace", "TransposeInplace", "DetachInplace"}
#: op types whose output may be a view of the input (copied when either side is mutated)
_VIEW_OPS = {"Reshape", "Transpose", "Detach"}
#: op types producing a fresh array
_NOT_FRESH = _ALIAS_OPS | _VIEW_OPS | {"HostLoad", "Call", "Loop", "If"}


class RunContext:
    """Per-run host data: inputs (T, R, *shape) per h2d stream, outputs per d2h stream."""

    __slots__ = ("in_count", "inputs", "out_count", "outputs")

    def __init__(self, n_in: int, n_out: int) -> None:
        self.inputs: list[Any] = [None] * n_in
        self.in_count = [0] * n_in
        self.outputs: list[Any] = [None] * n_out
        self.out_count = [0] * n_out

    def reset(self, inputs: list[Any], outputs: list[Any]) -> None:
        """Start a run with these host arrays."""
        self.inputs = inputs
        self.outputs = outputs
        self.in_count = [0] * len(inputs)
        self.out_count = [0] * len(outputs)


class DeviceState:
    """Device memory of the simulated replicas: on-chip variables and remote buffers."""

    def __init__(self, ir: Ir) -> None:
        self.replicas = ir.replication_factor
        self.variables: dict[Variable, np.ndarray] = {}
        self.buffers: dict[int, np.ndarray] = {}
        r = self.replicas
        for v in ir._variables:
            if v._remote_buffer is None:
                self.variables[v] = np.zeros((r, *v.shape), v.dtype.as_numpy())
        for bid, buf in ir._remote_buffers.items():
            self.buffers[bid] = np.zeros((r, buf.entries, *buf.tensor_shape), buf.tensor_dtype.as_numpy())
        # the on-chip shards of replica_sharded_variable (filled from their buffers by weights_from_host)
        self.shards: dict[Tensor, np.ndarray] = {
            t: np.zeros((r, *t.shape), t.dtype.as_numpy()) for t in ir._replica_shards}

    def load_shards(self) -> None:
        """The WeightsFromHost remote loads: each replica shard from entry 0 of its buffer."""
        for t, arr in self.shards.items():
            arr[...] = self.buffers[t._full._remote_buffer.remote_buffer_id][:, 0]

    def store_shards(self) -> None:
        """The WeightsToHost remote stores: each replica shard into entry 0 of its buffer."""
        for t, arr in self.shards.items():
            self.buffers[t._full._remote_buffer.remote_buffer_id][:, 0] = arr


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Tensor, Tensor] = {}

    def find(self, t: Tensor) -> Tensor:
        p = self.parent.get(t, t)
        if p is t:
            return t
        root = self.find(p)
        self.parent[t] = root
        return root

    def union(self, a: Tensor, b: Tensor) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


class CompiledGraph:
    """A graph turned into closures over a slot list."""

    def __init__(self, graph: Graph, executor: Executor) -> None:
        self.graph = graph
        self.slot: dict[Tensor, int] = {t: i for i, t in enumerate(graph._tensors.values())}
        self.n_slots = len(self.slot)
        self.input_slots = [self.slot[t] for t in graph._inputs]
        self.output_slots = [self.slot[t] for t in graph._outputs]
        uf = _UnionFind()
        modified: set[Tensor] = set()
        for op in graph._ops:
            modified.update(op.modified)
            if op.type in _ALIAS_OPS:
                uf.union(op.outputs[0], op.inputs[0])
            for m in op.modified:
                for o in op.outputs:
                    uf.union(o, m)
        self._uf = uf
        self._mutated_roots = {uf.find(t) for t in modified}
        inputs_set = set(graph._inputs)
        self.mutated_inputs = [self.is_mutated(t) for t in graph._inputs]
        roots_of_inputs = {uf.find(t) for t in inputs_set}
        self.output_copy = []
        for t in graph._outputs:
            prod = t._producer
            fresh = prod is not None and prod.type not in _NOT_FRESH and not prod.modified
            self.output_copy.append(not fresh or uf.find(t) in roots_of_inputs)
        self.template: list[Any] = [None] * self.n_slots
        self.kernels: list[Kernel] = []
        self._executor = executor
        consumers: dict[Tensor, list[Op]] = {}
        for op in graph._ops:
            for t in op.inputs:
                consumers.setdefault(t, []).append(op)
        self._consumers = consumers
        r = executor.replicas
        for t, s in self.slot.items():
            if isinstance(t, Constant):
                data = np.broadcast_to(t._data, (r, *t.shape))
                if self.is_mutated(t):
                    self.kernels.append(_fresh_copy(s, data))
                else:
                    self.template[s] = data
            elif t in executor.state.shards:
                self.template[s] = executor.state.shards[t]
            elif isinstance(t, Variable):
                if t._remote_buffer is None:
                    self.template[s] = executor.state.variables[t]
                elif t in consumers:
                    raise ValueError(f"remote variable {t.id} lives in Streaming Memory; load it with "
                                     "ops.remote_load before using it")
        for op in graph._ops:
            k = executor.kernel(op, self)
            if k is not None:
                self.kernels.append(k)

    def is_mutated(self, t: Tensor) -> bool:
        """True when t (or an alias of it) is modified in place in this graph."""
        return self._uf.find(t) in self._mutated_roots

    def only_feeds_loads(self, t: Tensor) -> bool:
        """True when t is only the placeholder input of host/remote loads."""
        cons = self._consumers.get(t, [])
        return bool(cons) and all(c.type in ("HostLoad", "RemoteLoad") and c.inputs[0] is t for c in cons) \
            and t not in self.graph._outputs

    def run(self, env: list) -> None:
        """Execute every op of the graph on ``env``."""
        for k in self.kernels:
            k(env)


def _fresh_copy(s: int, data: np.ndarray) -> Kernel:
    def run(env: list) -> None:
        env[s] = np.array(data)
    return run


class Executor:
    """Compiles an Ir's graphs (once) and runs its main graph."""

    def __init__(self, ir: Ir, state: DeviceState) -> None:
        self.ir = ir
        self.state = state
        self.replicas = state.replicas
        self.h2d_index = {s: i for i, s in enumerate(ir._h2d_streams)}
        self.d2h_index = {s: i for i, s in enumerate(ir._d2h_streams)}
        self.rc = RunContext(len(self.h2d_index), len(self.d2h_index))
        self._compiled: dict[Graph, CompiledGraph] = {}
        self.main = self.compiled(ir.main_graph)

    def compiled(self, graph: Graph) -> CompiledGraph:
        """The compiled form of ``graph`` (built on first use)."""
        cg = self._compiled.get(graph)
        if cg is None:
            cg = CompiledGraph(graph, self)
            self._compiled[graph] = cg
        return cg

    def run(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        """One run of the main program on host arrays shaped (T, R, *shape)."""
        self.rc.reset(inputs, outputs)
        env = list(self.main.template)
        with ft.one_thread():  # torch's float16 kernels, when used, in this thread
            for k in self.main.kernels:
                k(env)

    def kernel(self, op: Op, cg: CompiledGraph) -> Kernel | None:
        """The closure executing ``op`` inside ``cg`` (None when it needs no work)."""
        factory = _KERNELS.get(op.type)
        if factory is None:
            raise NotImplementedError(f"no numeric kernel for op type {op.type}")
        return factory(op, cg, self)


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
_KERNELS: dict[str, Callable[[Op, CompiledGraph, Executor], Kernel | None]] = {}


def _kernel(*types: str) -> Callable[[Any], Any]:
    def deco(fn: Any) -> Any:
        for t in types:
            _KERNELS[t] = fn
        return fn
    return deco


def _bview(t: Tensor, rank: int, r: int) -> tuple[int, ...] | None:
    """Shape to view ``t``'s (R, *shape) array with, to broadcast it to ``rank`` dims (None = as is)."""
    if t.rank == rank:
        return None
    return (r,) + (1,) * (rank - t.rank) + t.shape


def _scalar_view(r: int, rank: int) -> tuple[int, ...]:
    return (r,) + (1,) * rank


def _binary(ufunc: Any) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        a, b = (cg.slot[t] for t in op.inputs)
        o = cg.slot[op.outputs[0]]
        n = op.outputs[0].rank
        va = _bview(op.inputs[0], n, ex.replicas)
        vb = _bview(op.inputs[1], n, ex.replicas)
        f = ufunc
        if op.outputs[0].dtype.as_numpy() == np.float16:
            # float16: torch's vectorised kernels where they give numpy's bits (float16_torch)
            def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
                return ft.binary(ufunc, x, y)
        if op.outputs[0].dtype.is_int and ufunc is np.true_divide:
            npdt = op.outputs[0].dtype.as_numpy()

            def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
                return np.trunc(np.true_divide(x, y)).astype(npdt)
        if va is None and vb is None:
            def run(env: list) -> None:
                env[o] = by_replica(f, env[a], env[b])
        elif va is None:
            def run(env: list) -> None:
                env[o] = by_replica(f, env[a], env[b].reshape(vb))
        elif vb is None:
            def run(env: list) -> None:
                env[o] = by_replica(f, env[a].reshape(va), env[b])
        else:
            def run(env: list) -> None:
                env[o] = by_replica(f, env[a].reshape(va), env[b].reshape(vb))
        return run
    return factory


_kernel("Add")(_binary(np.add))
_kernel("Sub")(_binary(np.subtract))
_kernel("Mul")(_binary(np.multiply))
_kernel("Div")(_binary(np.true_divide))


@_kernel("AddLhsInplace")
def _add_inplace(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    a, b = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    vb = _bview(op.inputs[1], op.inputs[0].rank, ex.replicas)

    def run(env: list) -> None:
        x = env[a]
        y = env[b] if vb is None else env[b].reshape(vb)
        if x.dtype == np.float16 and y.dtype == np.float16:
            np.copyto(x, ft.add(x, y))  # the same bits as np.add(x, y, out=x), faster (float16_torch)
        else:
            np.add(x, y, out=x)
        env[o] = x
    return run


def _unary(fn: Callable[[np.ndarray], np.ndarray], rows: bool = False) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    """The kernel factory of a unary op computing ``fn`` of its input. With ``rows``, ``fn``
    computes each replica's rows from that replica's alone and returns a new array, so large
    inputs are computed in parts on several threads (:func:`replica_threads.by_replica`)."""
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
        if rows:
            def run(env: list) -> None:
                env[o] = by_replica(fn, env[i])
        else:
            def run(env: list) -> None:
                env[o] = fn(env[i])
        return run
    return factory


def _inplace_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    """The kernel factory of an in-place unary op: ``fn`` written back into its input's array."""
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]

        def run(env: list) -> None:
            x = env[i]
            x[...] = fn(x)
            env[o] = x
        return run
    return factory


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(0.7978845608 x + 0.035677408136 x^3)) in x's dtype (popnn GELU)."""
    dt = x.dtype.type
    if x.dtype == np.float16:  # the same operations through float16_torch
        mul = ft.multiply
        u = ft.add(mul(mul(mul(x, x), x), dt(GELU_B)), mul(dt(GELU_A), x))
        np.tanh(u, out=u)
        return mul(mul(ft.add(u, dt(1.0)), x), dt(0.5))
    u = x * x
    u *= x
    u *= dt(GELU_B)
    u += dt(GELU_A) * x
    np.tanh(u, out=u)
    u += dt(1.0)
    u *= x
    u *= dt(0.5)
    return u


def gelu_tanh_grad(x: np.ndarray) -> np.ndarray:
    """d/dx of :func:`gelu_tanh`, in x's dtype."""
    dt = x.dtype.type
    if x.dtype == np.float16:  # the same operations through float16_torch
        mul, add = ft.multiply, ft.add
        x2 = mul(x, x)
        th = np.tanh(mul(x, add(dt(GELU_A), mul(dt(GELU_B), x2))))
        du = add(dt(GELU_A), mul(dt(3.0 * GELU_B), x2))
        sech2 = ft.subtract(dt(1.0), mul(th, th))
        return add(mul(dt(0.5), add(dt(1.0), th)), mul(mul(mul(dt(0.5), x), sech2), du))
    x2 = x * x
    th = np.tanh(x * (dt(GELU_A) + dt(GELU_B) * x2))
    du = dt(GELU_A) + dt(3.0 * GELU_B) * x2
    sech2 = dt(1.0) - th * th
    return dt(0.5) * (dt(1.0) + th) + dt(0.5) * x * sech2 * du


_kernel("Neg")(_unary(np.negative, rows=True))
_kernel("Gelu")(_unary(gelu_tanh, rows=True))


_kernel("GeluInplace")(_inplace_unary(gelu_tanh))


@_kernel("GeluGrad")
def _gelu_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    g, x = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]

    def grad(gv: np.ndarray, xv: np.ndarray) -> np.ndarray:
        d = gelu_tanh_grad(xv)
        if d.dtype == np.float16 and gv.dtype == np.float16:
            return ft.multiply(d, gv)
        d *= gv
        return d

    def run(env: list) -> None:
        env[o] = by_replica(grad, env[g], env[x])
    return run


def _view_kernel(op: Op, cg: CompiledGraph, fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    copy = op.type not in _ALIAS_OPS and (cg.is_mutated(op.inputs[0]) or cg.is_mutated(op.outputs[0]))
    if copy:
        def run(env: list) -> None:
            env[o] = np.array(fn(env[i]))
    else:
        def run(env: list) -> None:
            env[o] = fn(env[i])
    return run


@_kernel("Reshape", "ReshapeInplace")
def _reshape(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    shape = (ex.replicas, *op.attrs["shape"])
    return _view_kernel(op, cg, lambda x: x.reshape(shape))


@_kernel("Transpose", "TransposeInplace")
def _transpose(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    perm = (0, *(p + 1 for p in op.attrs["perm"]))
    return _view_kernel(op, cg, lambda x: np.transpose(x, perm))


@_kernel("Detach", "DetachInplace")
def _detach(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    return _view_kernel(op, cg, lambda x: x)


@_kernel("Cast")
def _cast(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    npdt = op.attrs["dtype"].as_numpy()
    return _unary(lambda x: ft.astype(x, npdt), rows=True)(op, cg, ex)


@_kernel("MatMul")
def _matmul(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lhs, rhs = op.inputs
    if lhs.dtype != rhs.dtype:
        # PopART builds the op (output typed as lhs); Poplar's matmul, a convolution, refuses
        # input and weights of different types while the session compiles
        raise RuntimeError(f"{op.name}: Poplar's matmul needs operands of one type, got {lhs.id} ({lhs.dtype.name}) "
                           f"and {rhs.id} ({rhs.dtype.name}); cast one of them")
    out_t = op.outputs[0]
    r = ex.replicas
    a_s, b_s = cg.slot[lhs], cg.slot[rhs]
    o = cg.slot[out_t]
    la = (1, *lhs.shape) if lhs.rank == 1 else lhs.shape
    lb = (*rhs.shape, 1) if rhs.rank == 1 else rhs.shape
    n = max(len(la), len(lb))
    full_a = (r,) + (1,) * (n - len(la)) + la
    full_b = (r,) + (1,) * (n - len(lb)) + lb
    va: tuple[int, ...] | None = None if full_a == (r, *lhs.shape) else full_a
    vb: tuple[int, ...] | None = None if full_b == (r, *rhs.shape) else full_b
    vo = (r, *out_t.shape)
    in_np = lhs.dtype.as_numpy()
    out_np = out_t.dtype.as_numpy()
    # partials are float32 (popxl default): half inputs are multiplied in float32
    calc = np.float32 if in_np == np.float16 else None

    def product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if calc is not None:  # the casts through float16_torch: numpy's bits and layout
            x = ft.astype(x, calc)
            y = ft.astype(y, calc)
        z = np.matmul(x, y)
        return z if z.dtype == out_np else ft.astype(z, out_np)

    def run(env: list) -> None:
        x = env[a_s] if va is None else env[a_s].reshape(va)
        y = env[b_s] if vb is None else env[b_s].reshape(vb)
        z = product(x, y)  # numpy's BLAS runs threads of its own
        env[o] = z if z.shape == vo else z.reshape(vo)
    return run


@_kernel("Softmax")
def _softmax(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    ax = op.attrs["axis"] + 1

    def softmax(x: np.ndarray) -> np.ndarray:
        # float16: the same steps with one conversion to float32, not one per step (bit for bit)
        return f16.softmax_half(x, ax)
    return _unary(softmax, rows=True)(op, cg, ex)


@_kernel("ReduceSum")
def _reduce_sum(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    axes = tuple(a + 1 for a in op.attrs["axes"])
    keep = op.attrs["keepdims"]
    # the replica axis is never summed: each replica's sum is its own rows'
    return _unary(lambda x: x.sum(axis=axes, keepdims=keep), rows=True)(op, cg, ex)


@_kernel("Expand")
def _expand(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    r = ex.replicas
    t = op.inputs[0]
    shape = (r, *op.attrs["shape"])
    v = _bview(t, len(op.attrs["shape"]), r)
    return _unary(lambda x: np.array(np.broadcast_to(x if v is None else x.reshape(v), shape)))(op, cg, ex)


def _factor_getter(op: Op, cg: CompiledGraph, ex: Executor, key: str, tensor_index: int | None,
                   rank: int) -> Callable[[list], Any]:
    """Return env -> factor: a python float, or a per-replica array shaped (R, 1, ...)."""
    if tensor_index is None:
        value = op.attrs[key]
        return lambda env: value
    s = cg.slot[op.inputs[tensor_index]]
    view = _scalar_view(ex.replicas, rank)
    return lambda env: env[s].reshape(view)


def _scaled_add_factors(op: Op, cg: CompiledGraph, ex: Executor) -> tuple[Any, Any]:
    idx = 2
    rank = op.inputs[0].rank
    ai = bi = None
    if op.attrs["a_tensor"]:
        ai, idx = idx, idx + 1
    if op.attrs["b_tensor"]:
        bi = idx
    return (_factor_getter(op, cg, ex, "a", ai, rank), _factor_getter(op, cg, ex, "b", bi, rank))


@_kernel("ScaledAdd")
def _scaled_add(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs, ys = cg.slot[op.inputs[0]], cg.slot[op.inputs[1]]
    o = cg.slot[op.outputs[0]]
    fa, fb = _scaled_add_factors(op, cg, ex)
    npdt = op.inputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        a, b = fa(env), fb(env)
        y = env[ys].astype(npdt)
        y *= npdt.type(b) if isinstance(b, float) else b.astype(npdt)
        x = env[xs] * (npdt.type(a) if isinstance(a, float) else a.astype(npdt))
        x += y
        env[o] = x
    return run


@_kernel("ScaledAddLhsInplace")
def _scaled_add_inplace(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs, ys = cg.slot[op.inputs[0]], cg.slot[op.inputs[1]]
    o = cg.slot[op.outputs[0]]
    fa, fb = _scaled_add_factors(op, cg, ex)
    npdt = op.inputs[0].dtype.as_numpy()

    def update(x: np.ndarray, y_in: np.ndarray, a: Any, b: Any) -> None:
        y = y_in.astype(npdt)
        y *= npdt.type(b) if isinstance(b, float) else b.astype(npdt)
        if not (isinstance(a, float) and a == 1.0):
            x *= npdt.type(a) if isinstance(a, float) else a.astype(npdt)
        x += y

    def run(env: list) -> None:
        a, b = fa(env), fb(env)
        x, y = env[xs], env[ys]
        if x.shape[0] > 1 and _rows_equal(x) and _rows_equal(y) and _rows_equal(a) and _rows_equal(b):
            one = x[:1].copy()
            update(one, y[:1], _first(a), _first(b))
            x[...] = one
        else:
            update(x, y, a, b)
        env[o] = x
    return run


@_kernel("Init")
def _init(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel | None:
    t = op.outputs[0]
    if cg.only_feeds_loads(t):
        return None  # an 'undef' placeholder overwritten by the load: no storage needed
    o = cg.slot[t]
    shape = (ex.replicas, *t.shape)
    npdt = t.dtype.as_numpy()

    def run(env: list) -> None:
        env[o] = np.zeros(shape, npdt)
    return run


@_kernel("HostLoad")
def _host_load(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    k = ex.h2d_index[op.attrs["stream"]]
    o = cg.slot[op.outputs[0]]
    rc = ex.rc
    copy = cg.is_mutated(op.outputs[0])

    def run(env: list) -> None:
        i = rc.in_count[k]
        rc.in_count[k] = i + 1
        x = rc.inputs[k][i]
        env[o] = np.array(x) if copy else x
    return run


@_kernel("HostStore")
def _host_store(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    k = ex.d2h_index[op.attrs["stream"]]
    s = cg.slot[op.inputs[0]]
    rc = ex.rc

    def run(env: list) -> None:
        i = rc.out_count[k]
        rc.out_count[k] = i + 1
        rc.outputs[k][i] = env[s]
    return run


def _offset_reader(off: Tensor, cg: CompiledGraph, ex: Executor, entries: int, buf_id: int) -> Any:
    """Return a constant entry index, or env -> per-replica index array."""
    if isinstance(off, Constant) and not cg.is_mutated(off):
        k = int(np.asarray(off._data).reshape(-1)[0])
        if not 0 <= k < entries:
            raise ValueError(f"offset {k} is out of range for RemoteBuffer[id={buf_id}] with {entries} entries")
        return k
    s = cg.slot[off]
    r = ex.replicas

    def read(env: list) -> np.ndarray:
        idx = env[s].reshape(r).astype(np.intp)
        if idx.min() < 0 or idx.max() >= entries:
            raise ValueError(f"remote buffer offset {idx.tolist()} out of range for RemoteBuffer[id={buf_id}] "
                             f"with {entries} entries")
        return idx
    return read


@_kernel("RemoteLoad", "RemoteLoadInplace")
def _remote_load(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    buf_obj = op.attrs["remote_buffer"]
    buf = ex.state.buffers[buf_obj.remote_buffer_id]
    off = _offset_reader(op.inputs[1], cg, ex, buf_obj.entries, buf_obj.remote_buffer_id)
    o = cg.slot[op.outputs[0]]
    rows = np.arange(ex.replicas)
    if op.type == "RemoteLoad":
        if isinstance(off, int):
            def run(env: list) -> None:
                env[o] = buf[:, off].copy()
        else:
            def run(env: list) -> None:
                env[o] = buf[rows, off(env)]
        return run
    t = cg.slot[op.inputs[0]]

    def run_inplace(env: list) -> None:
        x = env[t]
        x[...] = buf[:, off] if isinstance(off, int) else buf[rows, off(env)]
        env[o] = x
    return run_inplace


@_kernel("RemoteStore")
def _remote_store(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    buf_obj = op.attrs["remote_buffer"]
    buf = ex.state.buffers[buf_obj.remote_buffer_id]
    off = _offset_reader(op.inputs[1], cg, ex, buf_obj.entries, buf_obj.remote_buffer_id)
    s = cg.slot[op.inputs[0]]
    rows = np.arange(ex.replicas)
    if isinstance(off, int):
        def run(env: list) -> None:
            buf[:, off] = env[s]
    else:
        def run(env: list) -> None:
            buf[rows, off(env)] = env[s]
    return run


@_kernel("Call")
def _call(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    callee = ex.compiled(op.attrs["called_graph"])
    # by-ref inputs are in op.modified from the start; set_parent_input_modified adds others:
    # those are passed as the parent's own array, so the callee's in-place changes reach it
    modified = set(op.modified)
    ins = []
    for i, (pt, gt) in enumerate(zip(op.inputs, callee.graph._inputs)):
        copy = pt not in modified and callee.mutated_inputs[i]
        ins.append((callee.slot[gt], cg.slot[pt], copy))
    outs = [(gs, cg.slot[pt], copy) for gs, pt, copy in zip(callee.output_slots, op.outputs, callee.output_copy)]
    template = callee.template
    kernels = callee.kernels

    def run(env: list) -> None:
        sub = list(template)
        for gs, ps, copy in ins:
            sub[gs] = np.array(env[ps]) if copy else env[ps]
        for k in kernels:
            k(sub)
        for gs, ps, copy in outs:
            env[ps] = np.array(sub[gs]) if copy else sub[gs]
    return run


@_kernel("Loop")
def _loop(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """popxl.ops.repeat: the body's outputs feed its first inputs between iterations; a by-ref
    loop-carried input gets the body input's final value copied back (PopART LoopOpx)."""
    body = ex.compiled(op.attrs["called_graph"])
    count = int(op.attrs["repeat_count"])
    modified = set(op.modified)
    n_carry = len(body.output_slots)
    ins = []
    for i, (pt, gt) in enumerate(zip(op.inputs, body.graph._inputs)):
        # a loop-carried input is overwritten every iteration, so the parent's array is passed
        # only for a by-ref input that is not carried (its changes must reach the parent)
        by_ref = pt in modified and i >= n_carry
        ins.append((body.slot[gt], cg.slot[pt], not by_ref and (body.mutated_inputs[i] or i < n_carry)))
    carry = list(zip(body.output_slots, body.input_slots[:n_carry]))
    copy_back = [(body.input_slots[i], cg.slot[pt]) for i, pt in enumerate(op.inputs[:n_carry]) if pt in modified]
    outs = [(gs, cg.slot[pt]) for gs, pt in zip(body.output_slots, op.outputs)]
    first_inputs = [(cg.slot[pt], cg.slot[po]) for pt, po in zip(op.inputs, op.outputs)]
    template = body.template
    kernels = body.kernels

    def run(env: list) -> None:
        if count == 0:
            for ps, po in first_inputs:
                env[po] = np.array(env[ps])
            return
        sub = list(template)
        for gs, ps, copy in ins:
            sub[gs] = np.array(env[ps]) if copy else env[ps]
        for it in range(count):
            if it:
                values = [sub[o] for o, _ in carry]
                for (_, i), v in zip(carry, values):
                    sub[i] = np.array(v)
            for k in kernels:
                k(sub)
        for gs, ps in copy_back:
            np.copyto(env[ps], sub[gs])
        for gs, po in outs:
            env[po] = np.array(sub[gs])
    return run


@_kernel("If")
def _if(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """popxl.ops.conditional: one branch runs, chosen by the condition (the same on every replica)."""
    n_then = int(op.attrs["n_then"])
    cond_slot = cg.slot[op.inputs[0]]
    branches = []
    for g, parents in ((op.attrs["then_branch"], op.inputs[1:1 + n_then]), (op.attrs["else_branch"], op.inputs[1 + n_then:])):
        b = ex.compiled(g)
        ins = [(b.slot[gt], cg.slot[pt], b.mutated_inputs[i]) for i, (pt, gt) in enumerate(zip(parents, g._inputs))]
        branches.append((b.template, b.kernels, ins, b.output_slots))
    outs = [cg.slot[pt] for pt in op.outputs]

    def run(env: list) -> None:
        c = np.asarray(env[cond_slot]).reshape(len(env[cond_slot]), -1)[:, 0].astype(bool)
        if c.all() != c.any():
            from .errors import SimulatorNotImplementedError, not_implemented_message
            raise SimulatorNotImplementedError(not_implemented_message(
                "popxl.ops.conditional with a condition that differs between replicas"))
        template, kernels, ins, out_slots = branches[0 if c[0] else 1]
        sub = list(template)
        for gs, ps, copy in ins:
            sub[gs] = np.array(env[ps]) if copy else env[ps]
        for k in kernels:
            k(sub)
        for gs, po in zip(out_slots, outs):
            env[po] = np.array(sub[gs])
    return run


@_kernel("RemoteCodeLoad")
def _remote_code_load(op: Op, cg: CompiledGraph, ex: Executor) -> None:
    """popxl.ops.remote_code_load moves code, not data: nothing to compute."""
    return None


# --- collectives ---------------------------------------------------------------------------------
def _reduce(x: np.ndarray, op: str, axis: int, group: int) -> np.ndarray:
    if op == "add":
        return x.sum(axis=axis, keepdims=True)
    if op == "mean":
        s = x.sum(axis=axis, keepdims=True)
        return s / s.dtype.type(group) if s.dtype.kind == "f" else s // group
    if op == "min":
        return x.min(axis=axis, keepdims=True)
    if op == "max":
        return x.max(axis=axis, keepdims=True)
    if op == "square_add":
        return (x * x).sum(axis=axis, keepdims=True)
    if op == "and":
        return np.logical_and.reduce(x, axis=axis, keepdims=True).astype(x.dtype)
    if op == "or":
        return np.logical_or.reduce(x, axis=axis, keepdims=True).astype(x.dtype)
    raise ValueError(f"unknown collective op {op!r}")


@_kernel("ReplicatedAllReduce", "ReplicatedAllReduceInplace")
def _all_reduce(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    t = op.inputs[0]
    a, g, s = op.attrs["group"]._layout()
    grouped = (a, g, s, *t.shape)
    full = (ex.replicas, *t.shape)
    red_op = op.attrs["op"]
    npdt = t.dtype.as_numpy()
    inplace = op.type == "ReplicatedAllReduceInplace"

    def run(env: list) -> None:
        x = env[i]
        red = _reduce(x.reshape(grouped), red_op, 1, g).astype(npdt, copy=False)
        if inplace:
            x.reshape(grouped)[...] = red
            env[o] = x
        else:
            env[o] = np.array(np.broadcast_to(red, grouped)).reshape(full)
    return run


@_kernel("ReplicatedReduceScatter")
def _reduce_scatter(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    t = op.inputs[0]
    a, g, s = op.attrs["group"]._layout()
    r = ex.replicas
    n = t.nelms
    c = op.outputs[0].shape[0]
    pad = g * c - n
    red_op = op.attrs["op"]
    npdt = t.dtype.as_numpy()
    idx = np.arange(g)

    def run(env: list) -> None:
        x = env[i].reshape(r, n)
        if pad:
            x = np.concatenate([x, np.zeros((r, pad), npdt)], axis=1)
        xr = x.reshape(a, g, s, g, c)
        if red_op == "local":
            shard = xr[:, idx, :, idx, :]  # (g, a, s, c): replica rank i keeps chunk i
            out = np.transpose(shard, (1, 0, 2, 3))
        else:
            red = _reduce(xr, red_op, 1, g)[:, 0].astype(npdt, copy=False)  # (a, s, g, c)
            out = np.transpose(red, (0, 2, 1, 3))
        env[o] = np.ascontiguousarray(out).reshape(r, c)
    return run


@_kernel("ReplicatedAllGather")
def _all_gather(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    t = op.inputs[0]
    a, g, s = op.attrs["group"]._layout()
    r = ex.replicas
    mode = op.attrs["output_shape"]
    axis = op.attrs["axis"]
    out_full = (r, *op.outputs[0].shape)

    def gather(x: np.ndarray) -> np.ndarray:
        xr = x.reshape(a, g, s, *t.shape)
        per_group = np.moveaxis(xr, 1, 2)  # (a, s, g, *shape)
        every = np.broadcast_to(per_group[:, None], (a, g, s, g, *t.shape))
        return every.reshape(r, g, *t.shape)

    if mode == "new_axis":
        def run(env: list) -> None:
            env[o] = np.array(gather(env[i]))
    elif mode == "concat":
        def run(env: list) -> None:
            gathered = np.moveaxis(gather(env[i]), 1, axis + 1)
            env[o] = np.ascontiguousarray(gathered).reshape(out_full)
    else:
        n = int(np.prod(op.outputs[0].shape, dtype=np.int64))

        def run(env: list) -> None:
            flat = np.ascontiguousarray(gather(env[i])).reshape(r, -1)
            env[o] = flat[:, :n].reshape(out_full).copy()
    return run


# --- var updates ---------------------------------------------------------------------------------
def _var_update(op: Op, cg: CompiledGraph, ex: Executor,
                body: Callable[[np.ndarray, list, Any], None], key: str = "f") -> Kernel:
    ts = cg.slot[op.inputs[0]]
    o = cg.slot[op.outputs[0]]
    rank = op.inputs[0].rank
    tensor_index = len(op.inputs) - 1 if op.attrs.get(f"{key}_tensor") else None
    fget = _factor_getter(op, cg, ex, key, tensor_index, rank)

    def run(env: list) -> None:
        t = env[ts]
        body(t, env, fget(env))
        env[o] = t
    return run


#: the unsigned integer type of each float width: rows compared bit for bit
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}

#: Elements per piece of an update done piece by piece (:func:`_mean_update`): 256 KiB of
#: float32, so each piece of the accumulator stays in the core's cache across the update's
#: three passes instead of streaming the whole tensor through memory three times. Measured
#: on an MNIST gradient (4 x 784 x 512 float32): 1.1 ms as whole-tensor passes, 0.6 ms in
#: pieces of 65,536 (0.8 ms of 16,384); small tensors are done whole.
_PIECE = 65_536


def _mean_update(t: np.ndarray, x: np.ndarray, keep: Any, new: Any) -> None:
    """``t = t * keep + x * new`` in place, each product and the sum rounded to ``t``'s type
    as the whole-tensor operations round them (the same elementwise operations, so the same
    bits), piece by piece when ``t`` and ``x`` are large contiguous arrays of one shape and type
    that do not overlap and the factors are scalars."""
    pairs = None if x.dtype != t.dtype or np.ndim(keep) or np.ndim(new) else _piece_pairs(t, x)
    if pairs is None:
        scaled = np.multiply(x, new) if x.dtype == t.dtype else x.astype(t.dtype)
        if x.dtype != t.dtype:
            scaled *= new
        t *= keep
        t += scaled
        return
    buffer = np.empty(_PIECE, t.dtype)
    for piece, x_piece in pairs:
        scaled = buffer[: piece.size]
        np.multiply(x_piece, new, out=scaled)
        np.multiply(piece, keep, out=piece)
        np.add(piece, scaled, out=piece)


def _piece_pairs(t: np.ndarray, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """``t`` and ``x`` cut into pieces of :data:`_PIECE` elements, as (piece of t, piece of x)
    views, when both are large contiguous arrays of one shape that do not overlap; else None."""
    if (t.size <= _PIECE or x.shape != t.shape or not (t.flags.c_contiguous and x.flags.c_contiguous)
            or np.may_share_memory(t, x)):
        return None
    flat_t, flat_x = t.reshape(-1), x.reshape(-1)
    return [(flat_t[start : start + _PIECE], flat_x[start : start + _PIECE])
            for start in range(0, flat_t.size, _PIECE)]


def _rows_equal(x: Any) -> bool:
    """True when every replica holds the same values (rows along axis 0 equal; floats: a float),
    so an elementwise update computed once for the first row and copied gives every row.

    Rows with the same bits qualify at once (one integer comparison: float16's own comparison
    is several times slower), NaNs included: the same bits give the same results. Other rows are
    compared by value, as before (-0.0 equals 0.0)."""
    if isinstance(x, float) or x is None or x.shape[0] == 1:
        return True
    if x.dtype.kind == "f" and x.itemsize in _BITS and x.flags.c_contiguous:
        bits = x.view(_BITS[x.itemsize]).reshape(x.shape[0], -1)
        if (bits[1:] == bits[:1]).all():
            return True
    first = x[0]
    return all(np.array_equal(first, x[r]) for r in range(1, x.shape[0]))


def _in_pieces(update: Callable[[np.ndarray, np.ndarray, Any], None], t: np.ndarray, x: np.ndarray, f: Any) -> None:
    """``update(t, x, f)``, an elementwise update of ``t`` in place with a float factor, done on
    pieces of :data:`_PIECE` elements of ``t`` and ``x`` (each element's operations and
    roundings are its own, so the same bits) when both are large contiguous arrays of one shape
    that do not overlap; otherwise on the whole arrays."""
    pairs = _piece_pairs(t, x) if isinstance(f, float) else None
    if pairs is None:
        update(t, x, f)
        return
    for piece, x_piece in pairs:
        update(piece, x_piece, f)


def _first(x: Any) -> Any:
    return x if isinstance(x, float) or x is None else x[:1]


def _typed(f: Any, npdt: np.dtype) -> Any:
    return npdt.type(f) if isinstance(f, float) else f.astype(npdt)


@_kernel("Accumulate")
def _accumulate(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs = cg.slot[op.inputs[1]]
    npdt = op.inputs[0].dtype.as_numpy()

    def body(t: np.ndarray, env: list, f: Any) -> None:
        x = env[xs]
        if f is None and x.dtype == npdt:
            t += x  # the same sum as through a copy, without writing one
            return
        x = x.astype(npdt)
        if f is not None:
            x *= _typed(f, npdt)
        t += x
    return _var_update(op, cg, ex, body)


@_kernel("AccumulateSquare")
def _accumulate_square(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs = cg.slot[op.inputs[1]]
    npdt = op.inputs[0].dtype.as_numpy()

    def body(t: np.ndarray, env: list, f: Any) -> None:
        x = env[xs].astype(npdt)
        x *= x
        x *= _typed(f, npdt)
        t += x
    return _var_update(op, cg, ex, body)


@_kernel("AccumulateMean")
def _accumulate_mean(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs = cg.slot[op.inputs[1]]
    npdt = op.inputs[0].dtype.as_numpy()

    def body(t: np.ndarray, env: list, step: Any) -> None:
        if isinstance(step, float):
            keep, new = npdt.type(step / (step + 1.0)), npdt.type(1.0 / (step + 1.0))
        else:
            st = step.astype(np.float32)
            keep, new = (st / (st + 1)).astype(npdt), (1 / (st + 1)).astype(npdt)
            if keep.size == keep.shape[0] and _rows_equal(keep) and _rows_equal(new):
                # every replica at the same step (as usual): one factor, not one per replica
                # broadcast over the tensor (the same products, a faster multiply)
                keep, new = keep.reshape(-1)[0], new.reshape(-1)[0]
        _mean_update(t, env[xs], keep, new)
    return _var_update(op, cg, ex, body, key="step")


def _moving_average(square: bool) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        xs = cg.slot[op.inputs[1]]
        npdt = op.inputs[0].dtype.as_numpy()

        def update_half(t: np.ndarray, x_in: np.ndarray, f: Any) -> None:
            # the float16 steps below, each as numpy does it (float32 operation, rounded to
            # float16), with the fast conversions: a float16 first moment is mostly subnormal
            if isinstance(f, float):
                fa, fb = np.float32(np.float16(f)), np.float32(np.float16(1.0 - f))
            else:
                fa, fb = f16.cast(f.astype(np.float16), np.float32), f16.cast((1 - f).astype(np.float16), np.float32)
            x = f16.to_float32(x_in) if x_in.dtype == np.float16 else f16.round_to_half(x_in)
            if square:
                x = f16.round_to_half(x * x)
            x = f16.round_to_half(x * fb)
            t[...] = f16.to_half(f16.round_to_half(f16.to_float32(t) * fa) + x)

        def update(t: np.ndarray, x_in: np.ndarray, f: Any) -> None:
            if npdt == np.float16 and x_in.dtype in (np.float16, np.float32):
                update_half(t, x_in, f)
                return
            if isinstance(f, float):
                fa, fb = npdt.type(f), npdt.type(1.0 - f)
            else:
                fa, fb = f.astype(npdt), (1 - f).astype(npdt)
            x = x_in.astype(npdt)  # X is cast to t's dtype first
            if square:
                x *= x
            x *= fb
            t *= fa
            t += x

        def body(t: np.ndarray, env: list, f: Any) -> None:
            x_in = env[xs]
            # optimizer state is usually identical on every replica: compute once, copy to all
            if t.shape[0] > 1 and _rows_equal(t) and _rows_equal(x_in) and _rows_equal(f):
                one = t[:1].copy()
                _in_pieces(update, one, x_in[:1], _first(f))
                t[...] = one
            else:
                _in_pieces(update, t, x_in, f)
        return _var_update(op, cg, ex, body)
    return factory


_kernel("AccumulateMovingAverage")(_moving_average(False))
_kernel("AccumulateMovingAverageSquare")(_moving_average(True))


@_kernel("AccumulatorScale")
def _accumulator_scale(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    npdt = op.inputs[0].dtype.as_numpy()

    def body(t: np.ndarray, env: list, f: Any) -> None:
        if isinstance(f, float) and f == 0.0:
            t[...] = 0
        else:
            t *= _typed(f, npdt)
    return _var_update(op, cg, ex, body)


@_kernel("CopyVarUpdate")
def _copy_var_update(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    ts, xs = cg.slot[op.inputs[0]], cg.slot[op.inputs[1]]
    o = cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        t = env[ts]
        np.copyto(t, env[xs], casting="unsafe")
        env[o] = t
    return run


@_kernel("AdamUpdater")
def _adam_updater(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    at = op.attrs
    m_t, v_t = op.inputs[0], op.inputs[1]
    ms, vs = cg.slot[m_t], cg.slot[v_t]
    rank = m_t.rank
    idx = 2
    ws = None
    if at["weight"]:
        ws, idx = cg.slot[op.inputs[idx]], idx + 1
    getters = {}
    for key in ("weight_decay", "beta1", "beta2", "epsilon"):
        ti = None
        if at[f"{key}_tensor"]:
            ti, idx = idx, idx + 1
        getters[key] = _factor_getter(op, cg, ex, key, ti, rank)
    # Adam, Lamb and AdaMax take the time step; AdaMax corrects m only and does not take sqrt(v)
    step_s = cg.slot[op.inputs[idx]] if at["mode"] in ("adam", "lamb", "adamax") else None
    adamax = at["mode"] == "adamax"
    o = cg.slot[op.outputs[0]]
    m_np, v_np = m_t.dtype.as_numpy(), v_t.dtype.as_numpy()
    out_np = op.outputs[0].dtype.as_numpy()
    view = _scalar_view(ex.replicas, rank)

    def compute(m: np.ndarray, v: np.ndarray, step: Any, get: Callable[[str], Any], w: Any) -> np.ndarray:
        eps = get("epsilon")
        if step is not None:
            ts = step.reshape((step.shape[0],) + view[1:]).astype(np.float32)
            b1, b2 = get("beta1"), get("beta2")
            b1c = (np.float32(1) - np.power(np.float32(b1) if isinstance(b1, float) else b1, ts)).astype(m_np)
            if m.dtype == b1c.dtype == np.float16:  # numpy's float16 division, without its slow conversions
                mh = f16.cast(f16.round_to_half(f16.to_float32(m) / f16.to_float32(b1c)), v_np)
            else:
                mh = (m / b1c).astype(v_np)
            if adamax:
                vh = v
            else:
                b2c = (np.float32(1) - np.power(np.float32(b2) if isinstance(b2, float) else b2, ts)).astype(v_np)
                vh = v / b2c
        else:
            mh = f16.cast(m, v_np)
            vh = v
        den = vh.astype(v_np) if adamax else np.sqrt(vh)
        den += _typed(eps, v_np)
        upd = mh / den
        if w is not None:
            upd = upd.astype(w.dtype) + _typed(get("weight_decay"), w.dtype) * w
        return upd if upd.dtype == out_np else f16.cast(upd, out_np)

    def run(env: list) -> None:
        m, v = env[ms], env[vs]
        step = None
        if step_s is not None:
            step = env[step_s]
            step += step.dtype.type(1)  # time_step is incremented in place before use
        w = env[ws] if ws is not None else None
        values = {k: g(env) for k, g in getters.items()}
        if m.shape[0] > 1 and all(_rows_equal(x) for x in (m, v, step, w, *values.values())):
            firsts = {k: _first(x) for k, x in values.items()}
            one = compute(m[:1], v[:1], _first(step), firsts.__getitem__, _first(w))
            env[o] = np.array(np.broadcast_to(one, m.shape))
        else:
            env[o] = compute(m, v, step, values.__getitem__, w)
    return run
