"""Cycles of a fused popops map expression: PopART's Adam/LAMB updater (docs/ipu-model.md section 7).

PopART grows an ``AdamUpdater`` as one ``popops::map`` expression over the optimizer state
(graphcore/popart ``AdamUpdaterOpx``; the real trace names its compute set after the generated
codelet, ``popops::map::Cast_DIVIDE..._POWER..._SQRT..._ADD...``). PopLibs generates a codelet for
the expression (graphcore/poplibs ``lib/popops/ExpressionGenerator.cpp``):

- an expression with a Cast is not vectorised (``vectorizationIsSupported = false`` on a Cast):
  the generated loop works one element at a time. The Adam expression has casts whenever the
  first-order state and the second-order state (or the updater) differ in type, as in the
  popxl-addons Adam (fp16 first order, fp32 second order);
- a non-vectorised expression with a 2-byte output (the fp16 updater) has no MultiVertex (a
  worker's store would be narrower than the atomic store granularity, 4 bytes), so each tile's
  elements are split between its workers in grains of max(vector width, 4) elements
  (``splitRegionsBetweenWorkers``), one single-worker vertex each; the tile waits for its slowest
  worker, and each cycle of a worker is ``worker_contexts`` tile cycles (barrel threading);
- each element passes through every per-element operation of the expression. The cycles of one
  operation on one element are PopLibs' own figures for its elementwise vertices
  (``lib/popops/popopsCycleEstimators.hpp``, ``binaryOpPerfInfo`` / ``unaryOpPerfInfo``:
  cycles per loop / elements per loop): DIVIDE 10 per 2 fp32 and 21 per 4 fp16, SQRT 10 per 2 fp32
  and 23 per 4 fp16, ADD / SUBTRACT / MULTIPLY one instruction (1 cycle) per element.

ASSUMPTION: the bias corrections ``1 - beta^t`` depend only on the time step (a scalar) and are
computed once per vertex, not per element (the compiler moves them out of the loop; the real trace's
cycles grow by about 20 per element per tile, the per-element operations alone); their cost (two
POWERs, data dependent) is taken as part of the compute set's fixed cost. The casts' conversions
are single instructions folded into the loads and stores.
"""

from __future__ import annotations

import math

#: PopLibs' worker cycles of one element, (op, itemsize) -> cycles (popopsCycleEstimators.hpp
#: binaryOpPerfInfo / unaryOpPerfInfo, cyclesPerLoop / loopUnrollFactor; one instruction for the
#: natural-vector-width ADD, SUBTRACT and MULTIPLY in scalar code)
ELEMENT_CYCLES: dict[tuple[str, int], float] = {
    ("DIVIDE", 4): 10 / 2, ("DIVIDE", 2): 21 / 4,
    ("SQRT", 4): 10 / 2, ("SQRT", 2): 23 / 4,
    ("ADD", 4): 1.0, ("ADD", 2): 1.0,
    ("MULTIPLY", 4): 1.0, ("MULTIPLY", 2): 1.0,
}

#: the atomic store granularity of a tile, bytes (poplar Target::getAtomicStoreGranularity, Mk1/Mk2)
ATOMIC_STORE_BYTES = 4


def adam_element_ops(mode: str, first_itemsize: int, second_itemsize: int, weight_decay: bool
                     ) -> tuple[tuple[str, int], ...]:
    """The per-element operations of PopART's updater expression, with the type each runs in.

    Bias corrected (``adam``, ``lamb``, ``adamax``): m / (1 - b1^t) in the first order's type,
    v / (1 - b2^t), sqrt, + eps, then the division of the two (fp32); without bias correction the
    first two divisions are absent. Weight decay adds wd x w and its addition.
    """
    ops: list[tuple[str, int]] = []
    if not mode.endswith("_no_bias"):
        ops += [("DIVIDE", first_itemsize), ("DIVIDE", second_itemsize)]
    if not mode.startswith("adamax"):
        ops.append(("SQRT", second_itemsize))
    ops += [("ADD", second_itemsize), ("DIVIDE", 4)]
    if weight_decay:
        ops += [("MULTIPLY", 4), ("ADD", 4)]
    return tuple(ops)


def element_cycles(ops: tuple[tuple[str, int], ...]) -> float:
    """Worker cycles of one element through ``ops`` (PopLibs' per-element figures)."""
    return sum(ELEMENT_CYCLES[op] for op in ops)


def worker_grain(vectorised: bool, vector_width: int, out_itemsize: int) -> int:
    """Elements a worker takes at a time (ExpressionGenerator.cpp ``executeCodelet``): a MultiVertex
    (a vectorised loop, or a scalar loop whose stores are at least the atomic store granularity)
    interleaves its workers by the loop's width; otherwise the tile's elements are split between
    single-worker vertices in grains of max(vector width, atomic store granularity)."""
    if vectorised:
        return vector_width
    if out_itemsize >= ATOMIC_STORE_BYTES:
        return 1
    return max(vector_width, ATOMIC_STORE_BYTES)


def map_tile_cycles(tile_elements: int, per_element: float, vectorised: bool, vector_width: int, grain: int,
                    workers: int, fixed_cycles: int) -> int:
    """Tile cycles of a map expression over a tile's ``tile_elements``: the slowest worker's elements
    (``grain`` at a time) x ``per_element`` worker cycles (÷ the vector width when the loop is
    vectorised) x the worker contexts, plus the compute set's ``fixed_cycles``."""
    if tile_elements <= 0:
        return fixed_cycles
    grains = -(-tile_elements // grain)
    slowest = min(tile_elements, -(-grains // workers) * grain)
    loop = slowest * per_element / (vector_width if vectorised else 1)
    return fixed_cycles + math.ceil(workers * loop)


__all__ = ["ATOMIC_STORE_BYTES", "ELEMENT_CYCLES", "adam_element_ops", "element_cycles", "map_tile_cycles", "worker_grain"]
