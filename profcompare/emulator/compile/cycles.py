"""Cycle estimates per program step, by phase (docs/ipu-model.md "Cycles").

The simulator has no hardware counters: every figure here is the model's estimate from the
device data in ``targets.py`` (each constant sourced there):

- compute: a matmul's Convolve is PopLibs' own cycle estimate of its AMP vertex on the busiest
  tile of the matmul's partition (amp.py: channels padded to the AMP's groups, per-call,
  per-group and per-worker costs); its rearrangement copy moves the operands poplin rearranges,
  region by region on the busiest tile (conv_rearrange.py); other ops run on the vector unit
  (``datapath_bytes`` per cycle per tile) over the worst tile's share of the op's largest
  tensor; plus a fixed per-compute-set cost.
- exchange: a DoExchange, and the exchange a matmul's Convolve or reduction stage opens with, is
  a small exchange (exchange_cost.py: the latency, the reach to its receiving tiles, the worst
  receiving tile's bytes / exchange bytes per cycle per tile); a reduction's final step, a
  broadcast and the two DoExchanges of a copy-path input gradient (its ``preRegroup`` copy and its
  copy to the plan's layout) still receive their bytes after the trace's median fixed cost
  (``exchange_overhead_cycles``), not yet costed by what they move. A compute set that reads data of
  other tiles receives it in its own step (programs.EXCHANGE_INSIDE_ROLES), so that step has
  exchange and compute cycles.
- sync: each Sync step (internal), and the end of a remote transfer (external).
- host_io: a host transfer is a control copy (Begin, Mid, End) then the data copy, as a real
  trace shows them; the Begin step holds the control copy and the data copy's Begin (the host's
  wait), Mid = a fixed cost + bytes of all the gateway's IPUs over the one shared host link, End
  the data copy's End (all measured, targets.py). A run that makes host transfers opens with two
  control copies and the host's start-of-run wait (:func:`run_opening_cycles`).
- streaming_memory: a fixed (fitted) cost per remote exchange (remote_exchange.py), then the bytes of all IPUs that
  transfer at once over the one shared gateway path.
- collective: rings over IPU-Links (facts 2.7): per ring step an external sync and the step's
  bytes over a bidirectional ring pair, plus the reduction of reducing steps.
- runtime (host time of one session.run, outside the device) is added per run by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from profcompare.emulator.compile.amp import AmpPartition, plan_partition
from profcompare.emulator.compile.conv_rearrange import (
    Layout,
    LayoutTracer,
    RearrangeCopy,
    copy_cost,
    rearranged_operands,
)
from profcompare.emulator.compile.conv_reduce import reduce_stage_cycles
from profcompare.emulator.compile.exchange_cost import small_exchange_cycles
from profcompare.emulator.compile.fc_weight_transpose import uses_copy_path
from profcompare.emulator.compile.mapping import linear_split
from profcompare.emulator.compile.popops_map import adam_element_ops, element_cycles, map_tile_cycles, worker_grain
from profcompare.emulator.compile.popops_slice import dynamic_slice_cycles
from profcompare.emulator.compile.programs import ProgramSteps, StaticStep
from profcompare.emulator.program import LoweredProgram, OpInfo, TensorInfo
from profcompare.emulator.targets import DeviceSpec
from profcompare.model import PHASES

PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}


@dataclass(frozen=True)
class TensorStats:
    """How a tensor spreads over tiles under the linear mapping."""

    nbytes: int
    nelms: int
    itemsize: int
    tiles_used: int
    max_tile_elements: int


@dataclass(frozen=True)
class MatmulPlan:
    """The model's stand-in for the PopLibs matmul planner (an ASSUMPTION, see docs)."""

    tiles: int
    flops: int
    dtype: str
    kept_operand: str  # operand already laid out for the matmul (the larger one)
    copied_bytes: int  # total bytes of the smaller operand's copies (broadcast to the plan)
    exchange_bytes_per_tile: int
    contraction_splits: int  # ways the contraction dimension is split (partials per output)
    partial_bytes: int  # fp32 partials, total
    partial_exchange_bytes_per_tile: int
    reduce_elements_per_tile: int


@dataclass(frozen=True)
class Ring:
    """A collective as a ring over IPU-Links."""

    group_size: int
    ring_steps: int
    link_bytes: int  # bytes each IPU sends over its links
    reduce_elements: int  # element additions per replica


class CostModel:
    """Per-op costs for one program on one device (cached per tensor and per op)."""

    def __init__(self, program: LoweredProgram, device: DeviceSpec, num_tiles: int) -> None:
        self.program = program
        self.device = device
        self.num_tiles = num_tiles
        self._stats: dict[str, TensorStats] = {}
        self._plans: dict[str, MatmulPlan] = {}
        self._partitions: dict[str, AmpPartition] = {}
        self._copy_path: dict[str, bool] = {}
        self._forward_partitions: dict[str, tuple[AmpPartition, int, int]] = {}
        self._rearrange: dict[str, RearrangeCopy] = {}
        self._layouts: LayoutTracer | None = None

    # -- tensors -------------------------------------------------------------------------
    def stats(self, tid: str) -> TensorStats:
        """Mapping statistics of tensor ``tid`` (per replica)."""
        s = self._stats.get(tid)
        if s is None:
            info = self.program.tensors[tid]
            # a tensor on I/O tiles spreads over the I/O tiles of its IPU (compile/placement.py)
            tiles = self.program.num_io_tiles if info.tile_set == "io" and self.program.num_io_tiles else self.num_tiles
            s = _stats(info.nelms, info.itemsize, tiles, self.device.datapath_bytes,
                       self.device.min_bytes_per_tile)
            self._stats[tid] = s
        return s

    def largest(self, tids: tuple[str, ...]) -> str | None:
        """The tensor of ``tids`` with the most bytes (None if none is known)."""
        known = [t for t in tids if t in self.program.tensors]
        if not known:
            return None
        return max(known, key=lambda t: (self.program.tensors[t].nbytes, t))

    # -- matmul --------------------------------------------------------------------------
    def matmul_plan(self, op: OpInfo) -> MatmulPlan:
        """The matmul plan of ``op`` (tiles, operand copies, partials; see docs)."""
        plan = self._plans.get(op.id)
        if plan is not None:
            return plan
        tensors = self.program.tensors
        lhs, rhs, k = self._matmul_operands(op)
        out = tensors[op.outputs[0]] if op.outputs else lhs
        flops = int(op.flops) if op.flops else 2 * out.nelms * k
        used = [self.stats(t).tiles_used for t in (op.inputs[:2] + op.outputs[:1]) if t in tensors]
        tiles = max(1, min(self.num_tiles, max(used or [1])))
        kept, other = (lhs, rhs) if lhs.nbytes >= rhs.nbytes else (rhs, lhs)
        replicas_of_copy = min(tiles, math.ceil(math.sqrt(tiles)))
        copied = other.nbytes * replicas_of_copy if op.inputs[0] != (op.inputs[1] if len(op.inputs) > 1 else None) else 0
        # the contraction is split only as far as needed to use the tiles the output cannot fill
        out_tiles = max(1, self.stats(out.id).tiles_used) if out.id in tensors else 1
        splits = max(1, min(k, -(-tiles // out_tiles)))
        partial = out.nelms * self._partial_bytes(op) * splits if splits > 1 else 0
        # PopLibs plans a matmul's temporaries within availableMemoryProportion of each tile's
        # memory: temporaries beyond it are produced and used in serial pieces, so only one
        # piece is live (facts §2.2: the planner's temporaries are bounded by it, default 0.6;
        # ASSUMPTION: as serial pieces, with the same exchanged bytes and FLOPs; docs section 7)
        budget = self._available_memory_proportion(op) * self.device.bytes_per_tile * tiles
        pieces = max(1, math.ceil((copied + partial) / budget)) if budget > 0 else 1
        plan = MatmulPlan(
            tiles=tiles,
            flops=flops,
            dtype=lhs.dtype,
            kept_operand=kept.id,
            copied_bytes=-(-int(copied) // pieces),
            exchange_bytes_per_tile=-(-int(copied) // tiles),
            contraction_splits=splits,
            partial_bytes=-(-int(partial) // pieces),
            partial_exchange_bytes_per_tile=-(-int(partial) // tiles),
            reduce_elements_per_tile=-(-out.nelms * splits // tiles) if splits > 1 else 0,
        )
        self._plans[op.id] = plan
        return plan

    def reduce_compute_sets(self, op: OpInfo) -> int:
        """Compute sets the matmul ``op`` reduces its partials in: poplin's stages
        (conv_reduce.py) when its partition splits the input channels, one when only the
        model's plan splits the contraction, none otherwise."""
        if self.matmul_plan(op).contraction_splits <= 1:
            return 0
        return max(1, len(reduce_stage_cycles(self.amp_partition(op), self.device, self.num_tiles)))

    def amp_partition(self, op: OpInfo) -> AmpPartition:
        """The Convolve's partition over the IPU's tiles (amp.py): the matmul as PopLibs' 1x1
        convolution, output channels the LHS rows, input channels the contraction, field the
        RHS columns, conv groups the batch of a batched matmul."""
        part = self._partitions.get(op.id)
        if part is not None:
            return part
        lhs, rhs, k = self._matmul_operands(op)
        n = int(rhs.shape[-1]) if len(rhs.shape) >= 2 else 1
        groups = math.prod(int(d) for d in rhs.shape[:-2]) if len(rhs.shape) > 2 else 1
        m = max(1, lhs.nelms // max(1, k * groups))
        part = plan_partition(m, k, n, groups, int(lhs.itemsize), self._partial_bytes(op) == 4, self.num_tiles,
                              self.device)
        self._partitions[op.id] = part
        return part

    def rearrange_copy(self, op: OpInfo) -> RearrangeCopy:
        """The matmul ``op``'s rearrangement copy: the operands poplin copies to its plan's layout
        and the copy's cycles on the busiest tile (conv_rearrange.py)."""
        hit = self._rearrange.get(op.id)
        if hit is not None:
            return hit
        if self._layouts is None:
            self._layouts = LayoutTracer(self.program, self._matmul_output_layout)
        weight_update = (op.attrs.get("phase") == "BwdRHS"
                         and op.attrs.get("fully_connected_pass", True) is not False)
        operands = rearranged_operands(self.program, op, self.amp_partition(op), weight_update,
                                       self._layouts.layout)
        copy = copy_cost(operands, self.device.vertex_overhead_cycles, self.device.exchange_bytes_per_cycle)
        self._rearrange[op.id] = copy
        return copy

    def _matmul_output_layout(self, op: OpInfo) -> Layout:
        """A matmul's output as poplin's reduction leaves it: its output channels innermost, in
        groups of the plan's output channels (``partialReduceOut``, lib/poplin/ConvReduce.cpp): the
        LHS rows unless the plan swaps the operands, then the RHS columns."""
        part = self.amp_partition(op)
        out = self.program.tensors.get(op.outputs[0]) if op.outputs else None
        shape = out.shape if out is not None and len(out.shape) >= 2 else (1, 1)
        axis = -1 if part.swapped else -2
        return Layout(axis, max(1, min(int(shape[axis]), part.unit.out_chans)))

    def weights_by_copy(self, op: OpInfo) -> bool:
        """True for an input-gradient matmul whose transposed weights take PopLibs' copy path
        (fc_weight_transpose.py): a MatMul of phase BwdLHS under the fully connected pass (PopART's
        default) whose RHS is a 2-D weight transposed, ``W[K, N]^T``, and whose forward plan
        (``[M, K] @ [K, N]``, the plan that laid ``W`` out) and backward plan make PopLibs'
        ``fullyConnectedWeightTranspose`` fall back to copies."""
        hit = self._copy_path.get(op.id)
        if hit is not None:
            return hit
        result = False
        if (op.type == "MatMul" and op.attrs.get("phase") == "BwdLHS" and len(op.inputs) > 1
                and op.attrs.get("fully_connected_pass", True) is not False
                and len(self._matmul_operands(op)[1].shape) == 2):
            fwd, rows, cols = self._forward_partition(op)
            result = uses_copy_path(fwd, self.amp_partition(op), rows, cols)
        self._copy_path[op.id] = result
        return result

    def _forward_partition(self, op: OpInfo) -> tuple[AmpPartition, int, int]:
        """For an input-gradient matmul ``dY[M, N] @ W[K, N]^T``: the partition of its forward
        matmul ``[M, K] @ [K, N]`` (the plan that laid ``W`` out), K and N; planned once per op."""
        hit = self._forward_partitions.get(op.id)
        if hit is not None:
            return hit
        lhs, rhs, k = self._matmul_operands(op)
        rows, cols = int(rhs.shape[1]), int(rhs.shape[0])
        m = max(1, lhs.nelms // max(1, k))
        fwd = plan_partition(m, rows, cols, 1, int(lhs.itemsize), self._partial_bytes(op) == 4, self.num_tiles,
                             self.device)
        self._forward_partitions[op.id] = (fwd, rows, cols)
        return fwd, rows, cols

    def _regroup_tile_elements(self, op: OpInfo, bwd: AmpPartition) -> int:
        """Elements of the copy path's preRegroup variable on its fullest tile: the weights
        ``W[K, N]`` in whole transpositions spread evenly over the IPU's tiles (popops
        ``regroupTensorInternal``), each of (forward group x backward group) elements: the forward
        plan's input channels per group along K, along N the greatest divisor of N in the backward
        plan's group (``regroupTensor`` needs each group to divide its dimension; the real trace's
        preRegroup copy reads the weights alone, unpadded)."""
        fwd, rows, cols = self._forward_partition(op)
        per = max(1, fwd.unit.in_chans * math.gcd(bwd.unit.in_chans, max(1, cols)))
        transpositions = -(-(rows * cols) // per)
        return -(-transpositions // max(1, self.num_tiles)) * per

    def _matmul_operands(self, op: OpInfo) -> tuple[TensorInfo, TensorInfo, int]:
        """A matmul's left and right operands (the left twice for a single input) and its
        contraction length (the left's last dimension)."""
        tensors = self.program.tensors
        lhs = tensors[op.inputs[0]]
        rhs = tensors[op.inputs[1]] if len(op.inputs) > 1 else lhs
        return lhs, rhs, int(lhs.shape[-1]) if lhs.shape else 1

    def _available_memory_proportion(self, op: OpInfo) -> float:
        """The share of tile memory a matmul's temporaries may use: the op's own
        ``available_memory_proportion``, else the session's
        ``matmulOptions["availableMemoryProportion"]``, else PopLibs' default 0.6."""
        own = op.attrs.get("available_memory_proportion")
        if isinstance(own, (int, float)) and not isinstance(own, bool) and own > 0:
            return float(own)
        return self.program.matmul_available_memory_proportion

    def _partial_bytes(self, op: OpInfo) -> int:
        """Bytes per partial of a matmul: the op's own ``partials_type`` when it has one, else
        the session's ``partialsTypeMatMuls`` (PopART: the per-op type overrides the global one)."""
        own = op.attrs.get("partials_type")
        if own:
            return 2 if str(own) in ("float16", "half") else 4
        return self.program.matmul_partials_bytes

    # -- collectives ---------------------------------------------------------------------
    def ring(self, op: OpInfo) -> Ring:
        """The ring a collective op runs (group size, ring steps, bytes over the links)."""
        n = int(op.attrs.get("group_size") or self.program.replicas or 1)
        kind = str(op.attrs.get("op", "add")).lower()
        tid = op.inputs[0] if op.inputs else (op.modified[0] if op.modified else None)
        if tid is None or tid not in self.program.tensors:
            return Ring(n, 0, 0, 0)
        info = self.program.tensors[tid]
        t = op.type
        if n <= 1 or kind == "local" or "Slice" in t:
            return Ring(n, 0, 0, 0)
        if "AllReduce" in t:
            return Ring(n, 2 * (n - 1), int(2 * (n - 1) * info.nbytes // n), (n - 1) * info.nelms // n)
        if "ReduceScatter" in t:
            return Ring(n, n - 1, int((n - 1) * info.nbytes // n), (n - 1) * info.nelms // n)
        if "AllGather" in t:
            return Ring(n, n - 1, int((n - 1) * info.nbytes), 0)
        return Ring(n, 2 * (n - 1), int(2 * (n - 1) * info.nbytes // n), 0)

    # -- costs ---------------------------------------------------------------------------
    def _worst_tile_bytes(self, tids: tuple[str, ...]) -> int:
        total = 0
        for t in tids:
            if t in self.program.tensors:
                s = self.stats(t)
                total += s.max_tile_elements * s.itemsize
        return total

    def sharing(self) -> int:
        """IPUs transferring through one gateway at once: every replica runs the same program in
        step, so all of a gateway's IPUs transfer together (at most ``ipus_per_gateway``)."""
        ipus = max(1, int(self.program.replicas or 1))
        return max(1, min(ipus, self.device.ipus_per_gateway))

    def _transfer_bytes(self, op: OpInfo, op_class: str) -> int:
        tid = (op.outputs[0] if op_class in ("host_load", "remote_load") and op.outputs
               else (op.inputs[0] if op.inputs else ""))
        return self.program.tensors[tid].nbytes if tid in self.program.tensors else 0

    def step_cycles(self, step: StaticStep, position: int, op_class: str) -> np.ndarray:
        """Cycles of one static step by phase (int64 array indexed like model.PHASES).

        The step's ``role`` (programs.templates) decides the cost; docs/ipu-model.md "Cycles".
        """
        d = self.device
        out = np.zeros(len(PHASES), dtype=np.int64)
        clock = d.clock_hz
        role = step.role

        def add(phase: str, cycles: float) -> None:
            out[PHASE_INDEX[phase]] += math.ceil(cycles)

        if not step.op or role in ("write_undef", "call"):
            return out  # WeightsFromHost runs once per engine, not per run; markers run nothing
        op = self.program.ops[step.op]
        if role == "sync_internal":
            add("sync", d.internal_sync_cycles)
        elif role == "host_begin":
            # the control copy that precedes every host transfer, then the data copy's Begin
            add("host_io", host_sync_cycles(d) + d.stream_copy_begin_cycles)
        elif role == "host_mid":
            add("host_io", d.stream_copy_mid_cycles
                + self._transfer_bytes(op, op_class) * self.sharing() / d.host_bytes_per_s * clock)
        elif role == "host_end":
            add("host_io", d.stream_copy_end_cycles)
        elif role == "remote_begin":
            add("streaming_memory", d.remote_transfer_seconds * clock)
        elif role == "remote_mid":
            add("streaming_memory", self._transfer_bytes(op, op_class) * self.sharing() / d.gateway_bytes_per_s * clock)
        elif role == "remote_end":
            add("sync", d.global_sync_cycles)
        elif role in ("collective_pre", "sync_external", "ring_exchange", "ring_reduce"):
            ring = self.ring(op)
            tid = op.inputs[0] if op.inputs else ""
            if role == "collective_pre":
                add("collective", self._small_exchange((tid,)))
            elif role == "sync_external":
                add("collective", d.global_sync_cycles)
            elif role == "ring_exchange":
                per_step = ring.link_bytes / max(1, ring.ring_steps)
                add("collective", per_step / (2.0 * d.ipu_link_bytes_per_s) * clock)
            else:
                s = self.stats(tid) if tid in self.program.tensors else TensorStats(0, 0, 4, 1, 0)
                reducing = max(1, ring.ring_steps // 2 if "AllReduce" in op.type else ring.ring_steps)
                per_tile = -(-ring.reduce_elements // (max(1, s.tiles_used) * reducing))
                add("collective", per_tile / d.vector_width(s.itemsize) + d.vertex_overhead_cycles)
        elif role == "ipu_copy_sync":
            add("sync", d.global_sync_cycles)
        elif role == "ipu_copy":
            # the tensor's bytes over the IPU-Links between the two IPUs, one direction (docs)
            tid = op.inputs[0] if op.inputs else ""
            nbytes = self.program.tensors[tid].nbytes if tid in self.program.tensors else 0
            add("exchange", nbytes / d.ipu_link_bytes_per_s * clock + d.exchange_overhead_cycles)
        elif role == "pipeline_iterator":
            # the loop iterator (one scalar) moved into the loop body, one tile to one tile
            add("exchange", small_exchange_cycles(d, 4, 1, self.num_tiles))
        elif role in ("ipu_copy_pre", "ipu_copy_post", "ipu_copy_buffer"):
            # the copied tensor's worst tile moved on chip, to the sending tiles or from the receiving ones
            tid = (op.inputs[0] if role in ("ipu_copy_pre", "ipu_copy_buffer") and op.inputs
                   else (op.outputs[0] if op.outputs else ""))
            add("exchange", self._small_exchange((tid,)))
        elif role == "io_tile_copy":
            tid = op.outputs[0] if op.outputs else ""
            add("exchange", self._small_exchange((tid,)))
        elif role == "local_copy":
            tid = op.inputs[0] if op.inputs else ""
            add("compute", self._worst_tile_bytes((tid,)) / d.datapath_bytes + d.vertex_overhead_cycles)
        elif role in ("copy_in", "copy_out"):
            # on-tile copies: one 64-bit store per cycle (facts 1.1 tile memory bandwidth row, D)
            add("compute", self._worst_tile_bytes((step.tensor,)) / d.datapath_bytes + d.vertex_overhead_cycles)
        elif role in ("onehot_fill", "onehot_copy"):
            # the one-hot labels (the probabilities' shape): written on tile, then copied between tiles
            tid = op.outputs[-1] if op.outputs else ""
            if role == "onehot_fill":
                s = self.stats(tid) if tid in self.program.tensors else TensorStats(0, 0, 4, 1, 0)
                add("compute", s.max_tile_elements / d.vector_width(s.itemsize) + d.vertex_overhead_cycles)
            else:
                add("exchange", self._small_exchange((tid,)))
        elif role == "scalar_update":
            # one scalar on one tile: a mean accumulation's factors, a stash counter's increment
            add("compute", 1 / d.vector_width(4) + d.vertex_overhead_cycles)
        elif role.startswith("mm_"):
            part = self.amp_partition(op)
            if role == "mm_rearrange":
                # the operands poplin copies to the plan's layout: the busiest tile receives its
                # slice, then copies it into place region by region (conv_rearrange.py); a plan that
                # rearranges nothing keeps the step's fixed cost (ASSUMPTION, docs section 7)
                copy = self.rearrange_copy(op)
                add("exchange", copy.exchange_cycles)
                add("compute", copy.on_tile_cycles if copy.operands else d.vertex_overhead_cycles)
            elif role in ("mm_preregroup", "mm_regroup"):
                # the transposed weights' copy path (fc_weight_transpose.py): the weights cut into
                # transpositions spread over the tiles; copied there, then transposed on each tile
                # (vector unit)
                per_tile = self._regroup_tile_elements(op, part)
                itemsize = self._matmul_operands(op)[1].itemsize
                if role == "mm_preregroup":
                    add("exchange", per_tile * itemsize / d.exchange_bytes_per_cycle + d.exchange_overhead_cycles)
                else:
                    add("compute", per_tile / d.vector_width(itemsize) + d.vertex_overhead_cycles)
            elif role == "mm_rearrange_exchange":
                # the regrouped weights copied to the plan's layout: each tile receives its slice of
                # the field operand (the other operand's slices reach the Convolve in its own
                # exchange, as for every matmul of the model)
                field_bytes = (part.field_per_tile * part.groups_per_tile * part.in_groups_per_tile
                               * part.unit.in_chans * part.unit.itemsize)
                add("exchange", field_bytes / d.exchange_bytes_per_cycle + d.exchange_overhead_cycles)
            elif role == "mm_convolve":
                # the Convolve receives the weights slices from the tiles the rearrangement wrote
                # them on (its own exchange, programs.EXCHANGE_INSIDE_ROLES), then runs the AMP
                # vertex: PopLibs' estimate for the busiest tile (amp.py)
                add("exchange", self.convolve_exchange_cycles(op))
                add("compute", part.convolve_cycles)
            elif part.in_splits > 1:
                # the partition's partials reduced in poplin's stages, each receiving its partials
                # then adding them (conv_reduce.py): stage ``position`` in this compute set (the
                # last compute set takes any stages left)
                stages = reduce_stage_cycles(part, d, self.num_tiles)
                for exchange, compute in (stages[position:] if position == self.reduce_compute_sets(op) - 1
                                          else stages[position:position + 1]):
                    add("exchange", exchange)
                    add("compute", compute)
            else:
                # the Reduce receives the partials of the other tiles, then adds them
                plan = self.matmul_plan(op)
                add("exchange", small_exchange_cycles(d, plan.partial_exchange_bytes_per_tile, plan.tiles,
                                                      self.num_tiles))
                add("compute", plan.reduce_elements_per_tile / d.vector_width(4) + d.vertex_overhead_cycles)
        else:
            tids = tuple(op.outputs) or tuple(op.modified) or tuple(op.inputs)
            big = self.largest(tids)
            s = self.stats(big) if big is not None else TensorStats(0, 0, 4, 1, 0)
            if role == "reduce_final":
                # the final reduction receives the partials of the other tiles first
                src = self.largest(tuple(op.inputs))
                in_bytes = self.program.tensors[src].nbytes if src else 0
                add("exchange", -(-in_bytes // max(1, s.tiles_used)) / d.exchange_bytes_per_cycle
                    + d.exchange_overhead_cycles)
            elif role == "broadcast_compute":
                # the compute set receives the broadcast input's elements its tiles lack
                add("exchange", self._broadcast_bytes(op, s) / d.exchange_bytes_per_cycle + d.exchange_overhead_cycles)
            if op.type in ("PipelineStash", "PipelineRestore") and role == "compute":
                # the stash's dynamic update or slice: PopLibs' DynamicSlice1D estimate over the
                # worst tile's region of the stashed tensor (popops_slice.py)
                sliced = (op.inputs[2] if op.type == "PipelineStash" and len(op.inputs) > 2
                          else (op.outputs[0] if op.outputs else ""))
                ss = self.stats(sliced) if sliced in self.program.tensors else s
                add("compute", dynamic_slice_cycles(ss.max_tile_elements, d.vector_width(ss.itemsize),
                                                    d.worker_contexts))
                return out
            if op.type == "AdamUpdater" and role == "compute":
                # one popops map expression, PopLibs' generated codelet (popops_map.py)
                add("compute", self._adam_updater_cycles(op, s))
                return out
            src = self.largest(tuple(op.inputs)) if role == "reduce_partials" else big
            ss = self.stats(src) if src is not None else s
            # FLOPs per element of the tensor whose worst tile is costed (a reduce's partials
            # step works through its input: one addition per input element, not per output)
            per_element = max(1.0, float(op.flops) / max(1, ss.nelms)) if op.flops else 1.0
            if op_class == "init":
                per_element = 1.0
            add("compute", ss.max_tile_elements * per_element / d.vector_width(ss.itemsize)
                + d.vertex_overhead_cycles)
        return out

    def _small_exchange(self, tids: tuple[str, ...]) -> int:
        """A DoExchange moving ``tids`` to their tiles: the worst tile's bytes, received by every
        tile the largest of them uses (exchange_cost.py)."""
        big = self.largest(tids)
        receivers = self.stats(big).tiles_used if big is not None else 1
        return small_exchange_cycles(self.device, self._worst_tile_bytes(tids), receivers, self.num_tiles)

    def convolve_exchange_cycles(self, op: OpInfo) -> int:
        """The exchange the matmul ``op``'s Convolve opens with (the program tree's
        ``<Convolve>/ExchangePre``): each tile of the partition receives its slice of the weights
        from the tiles the rearrangement wrote them on (exchange_cost.py)."""
        part = self.amp_partition(op)
        return small_exchange_cycles(self.device, part.weights_bytes_per_tile, part.tiles, self.num_tiles)

    def _adam_updater_cycles(self, op: OpInfo, out: TensorStats) -> int:
        """PopART's updater as PopLibs' generated map codelet over the worst tile of its output:
        scalar (not vectorised) when the expression casts between the state types, the per-element
        operations at PopLibs' cycles each, the compute set's fixed cost (popops_map.py)."""
        d = self.device
        tensors = self.program.tensors
        first = tensors[op.inputs[0]] if op.inputs and op.inputs[0] in tensors else None
        second = tensors[op.inputs[1]] if len(op.inputs) > 1 and op.inputs[1] in tensors else first
        first_size = int(first.itemsize) if first is not None else out.itemsize
        second_size = int(second.itemsize) if second is not None else out.itemsize
        ops = adam_element_ops(str(op.attrs.get("mode", "adam")), first_size, second_size,
                               bool(op.attrs.get("weight")))
        vectorised = first_size == second_size == out.itemsize  # no Cast in the expression
        width = d.vector_width(first_size)
        grain = worker_grain(vectorised, width, out.itemsize)
        return map_tile_cycles(out.max_tile_elements, element_cycles(ops), vectorised, width, grain,
                               d.worker_contexts, d.vertex_overhead_cycles)

    def _broadcast_bytes(self, op: OpInfo, out: TensorStats) -> int:
        total = 0
        for t in op.inputs:
            info = self.program.tensors.get(t)
            if info is not None and 1 < info.nelms < out.nelms:
                total += min(info.nbytes, out.max_tile_elements * info.itemsize)
        return total


def host_sync_cycles(device: DeviceSpec) -> int:
    """Cycles of the control copy before each host transfer: its Begin, Mid and End (measured)."""
    return device.host_sync_begin_cycles + device.stream_copy_mid_cycles + device.host_sync_end_cycles


#: Bytes of the program Switch's control value (an unsigned int, the index of the case to run).
SWITCH_CONTROL_BYTES = 4


@dataclass(frozen=True)
class BroadcastPart:
    """One block of the program Switch's control broadcast on one IPU (:func:`switch_broadcast_parts`)."""

    type: str  # Graph Analyser block type
    label: str  # block name after the broadcast's own ("switchControlBroadcast/<label>")
    cycles: int
    phase: str  # model.PHASES entry the cycles are booked in


def switch_broadcast_parts(device: DeviceSpec, ipus: int, ipu: int) -> tuple[BroadcastPart, ...]:
    """The program Switch's control broadcast on ``ipu`` of a replica of ``ipus`` IPUs, in order.

    Every run's steps sit inside a Switch (the program tree's "Unknown" step under the main
    Sequence, shared/reference/popvision_screenshots/program_tree.png), whose control value Poplar
    broadcasts to every tile before the run's first transfer (the tree's
    ``copyN_switchControlBroadcastN/ExchangePre``). Over several IPUs the real trace in shared/data
    shows it as: on the IPU holding the value (IPU 0) an on-tile copy into the sending buffer
    (``GlobalPre/Copy/OnTileCopy-0``), then on every IPU an external sync, a global exchange over
    the IPU-Links (``GlobalPre/GlobalExchange``), two internal syncs and the on-chip exchange to
    every tile (``ExchangePre``); the other IPUs wait in their external sync while IPU 0 copies.
    On one IPU: an internal sync and the on-chip exchange (ASSUMPTION: the tree shows the
    DoExchange; the sync before an exchange as every exchange has). Each part costs what the model
    charges its kind of step for the 4-byte value (targets.py sources each constant)."""
    d = device
    exchange = small_exchange_cycles(d, SWITCH_CONTROL_BYTES, d.tiles_per_ipu, d.tiles_per_ipu)
    internal = BroadcastPart("InternalSync", "Internal Sync", d.internal_sync_cycles, "sync")
    last = BroadcastPart("DoExchange", "ExchangePre", exchange, "exchange")
    if ipus <= 1:
        return internal, last
    copy = math.ceil(SWITCH_CONTROL_BYTES / d.datapath_bytes + d.vertex_overhead_cycles)
    link = math.ceil(SWITCH_CONTROL_BYTES / d.ipu_link_bytes_per_s * d.clock_hz + d.exchange_overhead_cycles)
    head = ((BroadcastPart("OnTileExecute", "GlobalPre/Copy/OnTileCopy", copy, "compute"),
             BroadcastPart("ExternalSync", "External Sync", d.global_sync_cycles, "sync")) if ipu == 0 else
            (BroadcastPart("ExternalSync", "External Sync", copy + d.global_sync_cycles, "sync"),))
    return (*head, BroadcastPart("GlobalExchange", "GlobalPre/GlobalExchange", link, "exchange"),
            internal, internal, last)


def switch_broadcast_cycles(device: DeviceSpec, ipus: int) -> dict[str, int]:
    """Cycles by phase of the Switch's control broadcast (:func:`switch_broadcast_parts`, IPU 0's
    parts: every IPU ends it at the same cycle)."""
    out: dict[str, int] = {}
    for part in switch_broadcast_parts(device, ipus, 0):
        out[part.phase] = out.get(part.phase, 0) + part.cycles
    return out


class RunOpening(NamedTuple):
    """What a run spends before its first host transfer (:func:`run_opening`), added to that
    transfer's Begin step: its executed index, the cycles, and the cycles by phase."""

    step: int
    cycles: int
    phases: tuple[tuple[str, int], ...]

    def add_to(self, cycles: np.ndarray) -> np.ndarray:
        """``cycles`` (one step's, by phase) with the opening's added (a copy)."""
        out = np.array(cycles, dtype=np.int64, copy=True)
        for phase, value in self.phases:
            out[PHASE_INDEX[phase]] += value
        return out


def run_opening(device: DeviceSpec, step: int, ipus: int = 1) -> RunOpening:
    """The :class:`RunOpening` at executed step ``step`` of a replica of ``ipus`` IPUs: the opening
    control copies and the host's wait (host_io), the Switch's broadcast by its parts' phases."""
    phases = {"host_io": 2 * host_sync_cycles(device) + device.run_start_wait_cycles}
    for phase, value in switch_broadcast_cycles(device, ipus).items():
        phases[phase] = phases.get(phase, 0) + value
    return RunOpening(int(step), sum(phases.values()), tuple(phases.items()))


def run_opening_cycles(device: DeviceSpec, ipus: int = 1) -> int:
    """Cycles a run that makes host transfers spends before its first one: two control copies, the
    second waiting ``run_start_wait_cycles`` for the host (docs/ipu-model.md section 12), then the
    program Switch's control broadcast (:func:`switch_broadcast_parts`)."""
    return (2 * host_sync_cycles(device) + device.run_start_wait_cycles
            + sum(switch_broadcast_cycles(device, ipus).values()))


def first_host_transfer(steps: ProgramSteps) -> int | None:
    """The executed index of the run's first host transfer's Begin step (None without one)."""
    roles = np.array([s.role == "host_begin" for s in steps.static], dtype=bool)
    if not len(roles):
        return None
    hits = np.flatnonzero(roles[steps.exec_static[steps.setup_steps:]])
    return int(hits[0]) + steps.setup_steps if len(hits) else None


@lru_cache(maxsize=65536)
def _stats(nelms: int, itemsize: int, num_tiles: int, datapath: int, min_bytes: int) -> TensorStats:
    split = linear_split(nelms, itemsize, num_tiles, datapath_bytes=datapath, min_bytes_per_tile=min_bytes)
    if split.tiles_used == 0:
        return TensorStats(0, 0, itemsize, 0, 0)
    max_grains = -(-split.num_grains // split.tiles_used)
    return TensorStats(nelms * itemsize, nelms, itemsize, split.tiles_used, min(nelms, max_grains * split.grain))


def static_cycles(steps: ProgramSteps, costs: CostModel, loaded_code_bytes: Mapping[str, int]) -> np.ndarray:
    """Cycles by phase of every static step: int64 array (static steps, len(model.PHASES)).

    ``loaded_code_bytes`` maps each graph loaded by ``remote_code_load`` to the bytes of its code
    in Streaming Memory per replica (loaded_code.LoadedCode.streaming_memory_bytes); pass ``{}``
    for a program without code loads. A load's data step moves them as a remote buffer load
    moves its data: bytes x IPUs sharing the gateway / ``gateway_bytes_per_s``; its Begin and
    End steps cost what a remote load's do. Raises ValueError when a loaded graph is missing from
    the map (its load would otherwise cost nothing).
    """
    out = np.zeros((len(steps.static), len(PHASES)), dtype=np.int64)
    position: dict[tuple[str, str], int] = {}
    d = costs.device
    for st in steps.static:
        # a matmul's reduction compute sets are numbered among themselves (their stage)
        key = (st.op, st.phase + ("/mm_reduce" if st.role == "mm_reduce" else ""))
        k = position.get(key, 0)
        position[key] = k + 1
        if st.role == "code_load":
            graph = str(costs.program.ops[st.op].attrs.get("code_graph"))
            if graph not in loaded_code_bytes:
                raise ValueError(f"static_cycles: op {st.op} loads the code of graph {graph!r}, which has no entry "
                               f"in loaded_code_bytes (graphs with code sizes: {sorted(loaded_code_bytes)})")
            nbytes = loaded_code_bytes[graph]
            out[st.index, PHASE_INDEX["streaming_memory"]] = math.ceil(
                nbytes * costs.sharing() / d.gateway_bytes_per_s * d.clock_hz)
            continue
        out[st.index] = costs.step_cycles(st, k, steps.op_class.get(st.op, ""))
    return out


def static_bytes(steps: ProgramSteps, costs: CostModel, loaded_code_bytes: Mapping[str, int]) -> np.ndarray:
    """Bytes each static step moves per replica, in plus out (what pva's ``dataIn + dataOut``
    summed over a step's IPUs holds), -1 where the step moves none: exact, the shape x dtype of
    what the lowering moves. A host transfer's data step (StreamCopyMid) and a remote load's or
    store's data step: the tensor it loads or stores (one direction); a code load: the code's
    Streaming Memory bytes; a collective's ring step (GlobalExchange): each IPU's link bytes
    over the ring's steps (:meth:`CostModel.ring`, the remainder on the first steps), sent and
    received, so twice that; an inter-IPU copy: the tensor, out of one IPU and into the other,
    so twice its bytes. int64 array (static steps,)."""
    out = np.full(len(steps.static), -1, dtype=np.int64)
    ring_step: dict[str, int] = {}
    for st in steps.static:
        if not st.op or st.role not in ("host_mid", "remote_mid", "code_load", "ring_exchange", "ipu_copy"):
            continue
        op = costs.program.ops[st.op]
        op_class = steps.op_class.get(st.op, "")
        if st.role in ("host_mid", "remote_mid"):
            out[st.index] = costs._transfer_bytes(op, op_class)
        elif st.role == "code_load":
            out[st.index] = int(loaded_code_bytes.get(str(op.attrs.get("code_graph")), 0))
        elif st.role == "ipu_copy":
            tid = op.inputs[0] if op.inputs else ""
            out[st.index] = 2 * (costs.program.tensors[tid].nbytes if tid in costs.program.tensors else 0)
        else:
            ring = costs.ring(op)
            k = ring_step.get(st.op, 0)
            ring_step[st.op] = k + 1
            n = max(1, ring.ring_steps)
            out[st.index] = 2 * (ring.link_bytes // n + (1 if k % n < ring.link_bytes % n else 0))
    return out


__all__ = ["PHASE_INDEX", "SWITCH_CONTROL_BYTES", "BroadcastPart", "CostModel", "RunOpening", "MatmulPlan", "Ring", "TensorStats", "first_host_transfer", "host_sync_cycles",
           "run_opening", "run_opening_cycles", "static_bytes", "static_cycles", "switch_broadcast_cycles", "switch_broadcast_parts"]

