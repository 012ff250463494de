"""IPU and tile-set placement: ``popxl.ipu``, ``popxl.io_tiles``, ``ops.ipu_copy``, ``ops.io_tile_copy``.

popxl places every op on a virtual graph (an IPU of the replica) and a tile set:

- ``with popxl.ipu(n):`` sets the IPU of the ops created inside; outside any such block ops are on
  IPU 0 (popxl's context starts with IPU 0).
- ``with popxl.io_tiles():`` puts the ops created inside on the I/O tiles of their IPU.
- A tensor is on the IPU of the op that produces it (an ``IpuCopy`` produces on its destination);
  a tensor without a producer (a variable, a constant, a graph input) is on the IPU of its first
  consumer (the source IPU of an ``IpuCopy`` that reads it), else IPU 0. A call is placed by the
  graph it calls, tensor by tensor: its output is where that graph produces it, a tensor it reads
  first where that graph reads it.
- IPUs per replica = the highest IPU any op uses + 1; a Session acquires the next power of two
  of (IPUs per replica x replicas).

The simulator records the placement in ``Op.attrs``: ``"ipu"`` only when it is not 0 and
``"tile_set": "io"`` only on I/O tiles, so that single-IPU programs lower exactly as before.
Copies between IPUs and tile sets are identities numerically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .context import get_current_context
from .execution import CompiledGraph, Executor, Kernel, _kernel
from .graph import Op, add_op

if TYPE_CHECKING:
    from .ir import Ir
    from .session_options import SessionOptions
    from .tensor import Tensor


class UndefinedValue(ValueError):
    """A tensor's IPU or tile set cannot be determined (popxl.errors.UndefinedValue)."""


def op_ipu(op: Op) -> int:
    """The IPU (virtual graph id) of ``op``."""
    return int(op.attrs.get("ipu", 0))


def op_tile_set(op: Op) -> str:
    """``"io"`` or ``"compute"``: the tile set of ``op``."""
    return "io" if op.attrs.get("tile_set") == "io" else "compute"


def _first_consumer(t: Tensor) -> Op | None:
    for op in t._graph._ops:
        if any(i is t for i in op.inputs) or any(m is t for m in op.modified):
            return op
    return None


def _inner(op: Op, t: Tensor, outputs: bool) -> Tensor | None:
    """The tensor of the graph ``op`` calls that ``t`` is bound to (None when ``op`` is no call)."""
    g = op.attrs.get("called_graph") if op.type in ("Call", "Loop") else None
    if g is None or not hasattr(g, "_inputs"):
        return None
    pairs = zip(op.outputs, g._outputs) if outputs else zip(op.inputs, g._inputs)
    return next((inner for outer, inner in pairs if outer is t), None)


def tensor_ipu(t: Tensor, default: int | None = None, _depth: int = 0) -> int:
    """The IPU of tensor ``t`` (see the module docstring). A tensor with neither a producer nor a
    consumer has no IPU: ``default``, or UndefinedValue when it is None (popxl ``Tensor.ipu``).
    A call's output is where its called graph produces it, a tensor first read by a call is where
    the called graph reads it (PopART's SubgraphOp introspection)."""
    prod = t._producer
    if prod is not None:
        inner = _inner(prod, t, outputs=True) if _depth < 64 else None
        return op_ipu(prod) if inner is None else tensor_ipu(inner, op_ipu(prod), _depth + 1)
    cons = _first_consumer(t)
    if cons is None:
        if default is None:
            raise UndefinedValue("Tensor's IPU is undefined.")
        return default
    if cons.type == "IpuCopy":
        return int(cons.attrs["source"])
    inner = _inner(cons, t, outputs=False) if _depth < 64 else None
    return op_ipu(cons) if inner is None else tensor_ipu(inner, op_ipu(cons), _depth + 1)


def tensor_tile_set(t: Tensor) -> str:
    """``"io"`` or ``"compute"``: the tile set of tensor ``t`` (its producer's, else its first consumer's)."""
    prod = t._producer
    if prod is not None:
        if prod.type == "IoTileCopy":
            return "io" if prod.attrs.get("tile_set") == "io" else "compute"
        return op_tile_set(prod)
    cons = _first_consumer(t)
    if cons is None or cons.type == "IoTileCopy":
        return "compute" if cons is None or cons.attrs.get("tile_set") == "io" else "io"
    return op_tile_set(cons)


def ipus_per_replica(ir: Ir) -> int:
    """Highest IPU used by any op of ``ir`` + 1 (popxl Session ``_get_ipus_per_replica``)."""
    top = 0
    for g in ir._graphs.values():
        for op in g._ops:
            top = max(top, op_ipu(op))
            if op.type == "IpuCopy":
                top = max(top, int(op.attrs["source"]), int(op.attrs["destination"]))
    return top + 1


def _check_ipu(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 0:
        raise ValueError(f"{what} must be a non-negative int IPU index, got {value!r}")
    return int(value)


def ipu_copy(t: Tensor, destination: int, source: int | None = None) -> Tensor:
    """Copy ``t`` to IPU ``destination`` (popxl ``ops.ipu_copy``); the output is named
    ``<t.name>_c<destination>``. ``source`` defaults to the IPU of ``t``'s producer; a tensor
    without a producer needs it (ValueError otherwise)."""
    destination = _check_ipu(destination, "ipu_copy destination")
    if source is None:
        # popxl infers the source from the tensor's virtual graph (producer, else consumers)
        try:
            source = tensor_ipu(t)
        except UndefinedValue:
            raise ValueError(f'Could not infer the ipu for Tensor to be copied "{t}" . '
                             "Please specify `source` when copying for this tensor.") from None
    source = _check_ipu(source, "ipu_copy source")
    op = add_op("IpuCopy", "ipucopy", [t], [(t.name + f"_c{destination}", t.shape, t.dtype, t.meta_shape)],
                attrs={"source": source, "destination": destination})
    # the copy belongs to its destination's virtual graph (PopART IpuCopyOp)
    if destination:
        op.attrs["ipu"] = destination
    else:
        op.attrs.pop("ipu", None)
    return op.outputs[0]


def io_tile_copy(t: Tensor) -> Tensor:
    """Copy ``t`` between the compute and I/O tiles of its IPU (popxl ``ops.io_tile_copy``): the
    output is on the other tile set than ``t``; named ``<t.name>_iotilecopy``."""
    ipu = tensor_ipu(t, default=current_ipu())
    to_io = tensor_tile_set(t) != "io"
    op = add_op("IoTileCopy", "iotilecopy", [t], [(t.name + "_iotilecopy", t.shape, t.dtype, t.meta_shape)])
    if ipu:
        op.attrs["ipu"] = ipu
    else:
        op.attrs.pop("ipu", None)
    if to_io:
        op.attrs["tile_set"] = "io"
    else:
        op.attrs.pop("tile_set", None)
    return op.outputs[0]


def current_ipu() -> int:
    """The IPU new ops go to (popxl context ``ipu_id``)."""
    return get_current_context().ipu_id


@_kernel("IpuCopy", "IoTileCopy")
def _copy_kernel(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    s = cg.slot[op.inputs[0]]
    o = cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        env[o] = np.array(env[s])
    return run


__all__ = ["UndefinedValue", "io_tile_copy", "ipu_copy", "ipus_per_replica", "op_ipu", "op_tile_set",
           "tensor_ipu", "tensor_tile_set"]


class PbIr:
    """``ir._pb_ir``: the internal PopART Ir, reduced to its session options, its graphs (ops by
    PopART class) and the pre-alias patterns; anything else is refused in one line naming it."""

    __slots__ = ("_options", "_ir")

    def __init__(self, ir: Ir) -> None:
        self._options = ir._session_options
        self._ir = ir

    def setPatterns(self, patterns: Any) -> None:  # noqa: N802 - PopART's name
        """Choose the pattern set (``popart._internal.ir.patterns.Patterns``) later applied."""
        from profcompare.emulator.popart._internal.ir.patterns import Patterns

        if not isinstance(patterns, Patterns):
            raise TypeError(f"setPatterns needs popart._internal.ir.patterns.Patterns, got {type(patterns).__name__}")
        self._ir._pb_patterns = patterns  # on the Ir: each ``ir._pb_ir`` is a new view of it

    def applyPreAliasPatterns(self, graph: Any) -> None:  # noqa: N802 - PopART's name
        """Apply the chosen pre-alias patterns to ``graph`` (one of ``getAllGraphs()``): as
        popxl-addons' ``apply_pre_alias_patterns``, the level is recorded (the simulator's ops are
        already those PopART's patterns lower to)."""
        patterns = getattr(self._ir, "_pb_patterns", None)
        if patterns is None:
            raise RuntimeError("applyPreAliasPatterns: no patterns set; call setPatterns first")
        self._ir._pre_alias_patterns = patterns.level.value

    def getAllGraphs(self) -> list[object]:  # noqa: N802 - PopART's name
        """Every graph of the Ir, the main graph first, as PopART's C++ graphs read (each a
        graph's ``_pb_graph``: its ops by PopART class)."""
        return [graph._pb_graph for graph in self._ir._graphs.values()]

    def getSessionOptions(self) -> SessionOptions:  # noqa: N802 - PopART's name
        """The Ir's session options (session_options.py), the same object on every call."""
        return self._options

    def __getattr__(self, name: str) -> object:
        from .errors import SimulatorNotImplementedError, not_implemented_message
        raise SimulatorNotImplementedError(not_implemented_message(f"popxl.Ir._pb_ir.{name}"))
