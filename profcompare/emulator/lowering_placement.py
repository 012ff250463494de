"""The placement part of the lowering: which IPU and tile set each tensor is on, and the
``pipelined_execution`` blocks of the main graph (see popxl/ipu_placement.py and
popxl_addons/transforms/pipelining.py for the semantics).

Rules (docs/ipu-model.md "More than one IPU per replica"):

- a tensor is on its producer's IPU and tile set (an ``IpuCopy`` output on its destination, an
  ``IoTileCopy`` output on the other tile set); a tensor without a producer takes its first
  consumer's (the source IPU of an ``IpuCopy``), else IPU 0 on compute tiles; a call's output
  is where its called graph produces it, and a tensor first read by a call is where the called
  graph reads it (the call's own IPU does not decide);
- I/O tiles hold only what the program puts there: ops created inside ``popxl.io_tiles()``
  (popxl-addons' ``use_io_tiles=True`` builds them that way) and the destination of an
  ``io_tile_copy``. A host or remote load lands on the tile set of its own op settings, as
  popxl builds it (``ctx._get_op_settings`` in popxl's ``ops/host_load.py`` and
  ``ops/remote_load.py``: compute tiles outside ``io_tiles()``), whether or not the Ir has I/O
  tiles; ``numIOTiles`` only takes those tiles away from the compute layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.emulator.program import PipelineInfo

if TYPE_CHECKING:
    from profcompare.emulator.popxl.graph import Op
    from profcompare.emulator.popxl.ir import Ir
    from profcompare.emulator.popxl.tensor import Tensor

#: op records that exist only for the simulator's execution, not in the compiled program
NOT_LOWERED = frozenset({"PipelineRepeat"})


def _ipu(op: Op) -> int:
    return int(op.attrs.get("ipu", 0))


def _io(op: Op) -> bool:
    return op.attrs.get("tile_set") == "io"


def is_placed(ir: Ir) -> bool:
    """True when any op is off IPU 0 or on I/O tiles, or the Ir has I/O tiles: the program needs
    placement (single-IPU programs without I/O tiles lower exactly as before)."""
    if getattr(ir, "num_io_tiles", 0):
        return True
    return any(_ipu(op) or _io(op) or op.type in ("IpuCopy", "IoTileCopy")
               for g in ir._graphs.values() for op in g._ops)


def ipus_per_replica(ir: Ir) -> int:
    """Highest IPU used by any op + 1."""
    top = 0
    for g in ir._graphs.values():
        for op in g._ops:
            top = max(top, _ipu(op))
            if op.type == "IpuCopy":
                top = max(top, int(op.attrs["source"]), int(op.attrs["destination"]))
    return top + 1


def tensor_placement(ir: Ir) -> dict[Tensor, tuple[int, str]]:
    """(IPU, tile set) of every tensor of every graph, called graphs before their callers.

    A call's IPU is not its own but its called graph's, per input and output (PopART
    ``SubgraphOp::getIntrospectionIn/OutVirtualGraphId``: the called graph's input tensor, placed
    by its consumers there, and output tensor, placed by its producer): an output of a call is
    where the called graph produces it, and a tensor first read by a call is where the called
    graph reads it. So a graph made outside any ``popxl.ipu`` that calls graphs built on IPU 1
    (popxl-addons' ``recompute_graph``) runs on IPU 1, as Poplar runs it."""
    out: dict[Tensor, tuple[int, str]] = {}
    done: set[int] = set()

    def called(op: Op):
        g = op.attrs.get("called_graph") if op.type in ("Call", "Loop") else None
        return g if g is not None and hasattr(g, "_ops") else None

    def place(g) -> None:
        if id(g) in done:
            return
        done.add(id(g))
        for op in g._ops:
            callee = called(op)
            if callee is not None:
                place(callee)
        for op in g._ops:
            if op.type in NOT_LOWERED:
                continue
            ipu, io = _ipu(op), _io(op)
            own = (ipu, "io" if io else "compute")
            callee = called(op)
            inner_in = dict(zip(op.inputs, callee._inputs)) if callee is not None else {}
            inner_out = dict(zip(op.outputs, callee._outputs)) if callee is not None else {}
            for t in op.outputs:
                out[t] = out.get(inner_out[t], own) if t in inner_out else own
            for t in (*op.inputs, *op.modified):
                if t in out or t._producer is not None:
                    continue
                if op.type == "IpuCopy":
                    out[t] = (int(op.attrs["source"]), "compute")
                elif op.type == "IoTileCopy":
                    out[t] = (ipu, "compute" if io else "io")
                elif t in inner_in:
                    out[t] = out.get(inner_in[t], own)
                else:
                    out[t] = own
        for t in g._tensors.values():
            out.setdefault(t, (0, "compute"))

    for g in ir._graphs.values():
        place(g)
    return out


def pipelines(ir: Ir) -> tuple[PipelineInfo, ...]:
    """The ``pipelined_execution`` blocks of the main graph, from their PipelineRepeat records."""
    found: list[PipelineInfo] = []
    ops = ir.main_graph._ops
    for rec in ops:
        if rec.type != "PipelineRepeat":
            continue
        pid = rec.attrs["pipeline"]
        ids = set(rec.attrs["ops"])
        stages: dict[int, list[str]] = {}
        stage_ipus: dict[int, dict[int, int]] = {}  # stage -> IPU -> ops there
        copies: list[str] = []
        for op in ops:
            if op.id not in ids:
                continue
            if op.type == "IpuCopy":
                copies.append(op.id)
                continue
            s = int(op.attrs["pipeline_stage"])
            stages.setdefault(s, []).append(op.id)
            counts = stage_ipus.setdefault(s, {})
            counts[_ipu(op)] = counts.get(_ipu(op), 0) + 1
        found.append(PipelineInfo(
            id=int(pid), steps=int(rec.attrs["steps"]),
            stages=tuple((s, tuple(v)) for s, v in sorted(stages.items())),
            copies=tuple(copies),
            # a stage runs on the IPU most of its ops are on
            stage_ipus=tuple((s, max(c, key=lambda i: (c[i], -i))) for s, c in sorted(stage_ipus.items()))))
    return tuple(found)


__all__ = ["NOT_LOWERED", "ipus_per_replica", "is_placed", "pipelines", "tensor_placement"]
