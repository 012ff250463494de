"""Cycles of a dynamic slice or update: a pipeline stash's write and its restore (docs/ipu-model.md section 7).

popxl-addons stashes a pipeline stage's activation with ``ops.dynamic_update_`` and restores it with
``ops.dynamic_slice`` at a counter (the real trace's ``dynamicupdate_inplace/.../stash/dynamicUpdateU_d0/update``
and ``dynamicslice/.../stash/dynamicSlice_d0/slice`` compute sets). popops lays a sliceable tensor
out so that each tile holds every entry of its region of the slice, and runs one supervisor vertex per
tile over its region (``DynamicSlice1D`` / ``DynamicUpdateSlice1D``). The cycles are PopLibs' own
estimate of that vertex (graphcore/poplibs ``lib/popops/popopsCycleEstimators.cpp``,
``getDynamicSlice1DEstimate``, the update's estimate being the slice's):

- the supervisor: ``basicOpSupervisorOverhead()`` (11, ``lib/popops/PerformanceEstimation.cpp``)
  + 14;
- each of the 6 workers copies its share of the region, ceil(region / workers) elements, as 64-bit
  copies (vector width 2 fp32, 4 fp16): 39 + (24 + 2 x copies) cycles per slice taken;
- the tile: the supervisor + the workers' cycles x the worker contexts.
"""

from __future__ import annotations

#: the supervisor's cycles: basicOpSupervisorOverhead() (11) + 1 + 6 + 1 + 6 (getDynamicSlice1DEstimate)
SUPERVISOR_CYCLES = 11 + 14


def dynamic_slice_cycles(region_elements: int, vector_width: int, workers: int, slices: int = 1) -> int:
    """Tile cycles of PopLibs' DynamicSlice1D / DynamicUpdateSlice1D over a tile's ``region_elements``
    of the slice (``slices`` slices taken at once)."""
    per_worker = -(-max(0, region_elements) // workers)
    copies = per_worker // max(1, vector_width)
    return SUPERVISOR_CYCLES + workers * (39 + (24 + 2 * copies) * slices)


__all__ = ["SUPERVISOR_CYCLES", "dynamic_slice_cycles"]
