"""popxl.ops image resampling (popxl 3.4 signatures): ``interpolate`` (PopART ``Resize``) and
``roi_align`` (``RoiAlign``, lowered to popnn's ROIAlign). Kernels: ``popxl/kernels_image.py``.

``interpolate`` follows PopART's ResizeOpx: each dimension's output size is
``floor(size * scale)`` (float32); a dimension whose scale is 1 is left alone; the others map
output index ``i`` to the input coordinate of ``coordinate_transformation_mode``
(``half_pixel``: ``(i + 0.5) / scale - 0.5``; ``pytorch_half_pixel``: the same when
``size * scale > 1`` else 0; ``align_corners``: ``i * (size - 1) / (size * scale - 1)``, 0 when
``size * scale == 1``; ``asymmetric``: ``i / scale``). Then:

- ``nearest``: rounding by ``nearest_mode`` (``round_prefer_floor`` rounds .5 down,
  ``round_prefer_ceil`` half away from zero), index clamped into the input;
- ``linear``: the floor and ceil neighbours (clamped) weighted by the fraction of
  ``max(x, 0)``, one dimension after another;
- ``cubic``: Keys' cubic convolution (A = -0.75) over the 4 neighbours ``floor(x) - 1 .. + 2``
  (clamped to the edges), dimensions from the last to the first.

``tf_crop_and_resize`` is refused, as PopART's lowering refuses it. Float tensors are
interpolated in float32 and rounded back to their dtype; integer tensors can be resized by
``nearest`` only (the simulator does not model Poplar's integer arithmetic for the others).

Gradients, as PopART's ResizeGradOpx: ``nearest`` ignores the forward's rounding and coordinate
modes: a dimension grown by the forward sums the gradient of output ``i`` into input
``floor(i / scale)``; a shrunk one places gradient ``i`` at input ``floor(i / scale)``, zero
elsewhere. ``linear`` cannot be trained (PopART refuses it when the session compiles).
``cubic`` is the transpose of the forward interpolation with ``half_pixel`` coordinates
(the gradient op's own mode), whatever the forward used.

``roi_align`` (aligned = False in popnn): each region ``[x1, y1, x2, y2] * spatial_scale`` (at
least 1 x 1) is cut into ``output_size`` bins, each sampled at ``sampling_ratio`` x
``sampling_ratio`` evenly spaced points averaged; a point beyond the bottom / right edge of the
feature map contributes 0, others are clamped to >= 0 and read bilinearly (a point on the last
row or column reads it). Its gradient (for ``t`` only) is the transpose of that average.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from .. import dtypes
from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..graph import check_in_graph
from ..tensor import Tensor
from ._util import add_op, gcg, out, single

InterpolateType = Literal["nearest", "linear", "cubic"]
InterpolateNearestType = Literal["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
InterpolateCoordinateTransformationType = Literal[
    "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"]
_MODES = ("nearest", "linear", "cubic")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
#: FLOPs per output element: nearest copies, linear blends 2 neighbours, cubic 4 (per resized dimension)
_FLOPS_PER_DIM = {"nearest": 0, "linear": 3, "cubic": 8}


def interpolate(t: Tensor, scale_factor: Sequence[float] | None = (1.0, 1.0, 1.0, 1.0),
                mode: InterpolateType | None = "nearest",
                nearest_mode: InterpolateNearestType | None = "round_prefer_floor",
                coordinate_transformation_mode: InterpolateCoordinateTransformationType | None = "half_pixel",
                ) -> Tensor:
    """``t`` resampled by ``scale_factor`` (one per dimension) as the module docstring says; the
    output has t's dtype and ``floor(size * scale)`` per dimension."""
    check_in_graph(gcg(), t=t)
    if mode not in _MODES:
        raise ValueError(f"interpolate type {mode} is not valid, must be nearest, linear or cubic.")
    if nearest_mode not in _NEAREST:
        raise ValueError(f"interpolate type {nearest_mode} is not valid, must be round_prefer_floor, "
                         "round_prefer_ceil, floor or ceil.")
    if coordinate_transformation_mode not in _COORDINATES:
        raise ValueError(f"interpolate type {coordinate_transformation_mode} is not valid, must be half_pixel, "
                         "pytorch_half_pixel, align_corners, asymmetric or tf_crop_and_resize.")
    if coordinate_transformation_mode == "tf_crop_and_resize":
        raise ValueError("interpolate: PopART's Resize lowering does not support coordinate_transformation_mode "
                         "'tf_crop_and_resize' (Unsupported coordinate transformation mode)")
    if mode != "nearest" and not t.dtype.is_floating_point:
        raise SimulatorNotImplementedError(not_implemented_message(
            f"popxl.ops.interpolate(mode={mode!r}) of an integer tensor ({t.dtype.name})"))
    scales = tuple(float(np.float32(s)) for s in (scale_factor or ()))
    if len(scales) != t.rank:
        raise ValueError(f"The number of dimensions of the resize op scales ({len(scales)}) must match the number "
                         f"of dimensions of the input ({t.rank})")
    shape = tuple(int(math.floor(np.float32(d) * np.float32(s))) for d, s in zip(t.shape, scales))
    if any(d <= 0 for d in shape):
        raise ValueError(f"interpolate: scale_factor {scales} gives the empty shape {shape} for {t.id} {t.shape}")
    resized = sum(1 for s in scales if s != 1.0)
    attrs = {"scales": scales, "mode": mode, "nearest_mode": nearest_mode,
             "coordinate_transformation_mode": coordinate_transformation_mode,
             "flops": int(np.prod(shape, dtype=np.int64)) * _FLOPS_PER_DIM[mode] * resized}
    return single(add_op("Resize", "interpolate", [t], [out("interpolate_out", shape, t.dtype)], attrs))


def roi_align(t: Tensor, rois: Tensor, batch_index: Tensor, output_size: tuple[int], spatial_scale: float,
              sampling_ratio: int) -> Tensor:
    """Average-pooled bilinear samples of ``t`` (N, C, H, W) over each region of ``rois``
    (num_rois, 4) taken from image ``batch_index`` (num_rois,): shape (num_rois, C,
    output_size[0], output_size[1]) in t's dtype (see the module docstring)."""
    check_in_graph(gcg(), t=t, rois=rois, batch_index=batch_index)
    if t.rank != 4:
        raise ValueError("The size of input data must be 4")
    if rois.rank != 2:
        raise ValueError("The size of input rois must be 2")
    if batch_index.rank != 1:
        raise ValueError("The size of input batch_index must be 1")
    if rois.shape[1] != 4 or batch_index.shape[0] != rois.shape[0]:
        raise ValueError(f"roi_align: rois {rois.shape} must be (num_rois, 4) and batch_index {batch_index.shape} "
                         "(num_rois,)")
    if t.dtype not in (dtypes.float16, dtypes.float32) or rois.dtype != t.dtype:
        raise TypeError(f"roi_align: t ({t.dtype.name}) and rois ({rois.dtype.name}) must share a float16 or float32 "
                        "dtype")
    if not batch_index.dtype.is_int:
        raise TypeError(f"roi_align: batch_index must be an integer tensor, got {batch_index.dtype.name}")
    if int(sampling_ratio) <= 0:
        raise ValueError("roi_align: samplingRatio must be greater than 0 (popnn's ROIAlign)")
    height, width = int(output_size[0]), int(output_size[1])
    if height <= 0 or width <= 0:
        raise ValueError(f"roi_align: output_size {tuple(output_size)} must be positive")
    shape = (rois.shape[0], t.shape[1], height, width)
    s = int(sampling_ratio)
    attrs = {"spatial_scale": float(spatial_scale), "sampling_ratio": s, "aligned_height": height,
             "aligned_width": width, "flops": int(np.prod(shape, dtype=np.int64)) * s * s * 8}
    return single(add_op("RoiAlign", "roi_align", [t, rois, batch_index], [out("roi_align_out", shape, t.dtype)],
                         attrs))


__all__ = ["InterpolateCoordinateTransformationType", "InterpolateNearestType", "InterpolateType", "interpolate",
           "roi_align"]
