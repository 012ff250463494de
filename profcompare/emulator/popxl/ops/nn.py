"""popxl.ops neural-network family: normalisation, convolution and pooling (popxl 3.4 signatures,
defaults, dtype rules and errors).

- ``group_norm`` (op ``GroupNormalization``) has PopART's three outputs: the normalised tensor,
  and the mean and inverse standard deviation per (sample, group), shaped ``(N * num_groups,)``;
  popxl returns the first. Channels are dimension 1 and a group is a contiguous run of channels
  (PopART's default ``groupNormStridedChannelGrouping=False``); the variance is the biased one.
  ``layer_norm`` is ``group_norm`` with one group, as in popxl.
- ``batch_norm_inference`` (op ``BatchNormalization``) needs rank >= 3 and per-channel
  ``scale``/``bias``/``mean``/``var`` of shape ``(C,)``; it has no gradient (PopART's gradient
  needs the training form, which popxl does not expose).
- ``conv`` / ``conv_transpose`` / ``average_pool`` / ``max_pool`` follow PopART's receptive-field
  shape rules (explicit pads ``[begins..., ends...]``, ``same_upper`` / ``same_lower`` / ``valid``
  auto-padding, ``ceil_mode`` for pools). Average pooling excludes padding from the count, as
  PopART (which refuses ``count_include_pad``). Cases whose PopART shape rules and Poplar
  arithmetic disagree (auto-padding with dilation, negative auto-padding) and the transforms the
  simulator does not compute (pool dilations, input dilations, output pads) are refused with one
  line naming the API.

The lowering counts convolution FLOPs as 2 x multiply-accumulates (the ``flops`` attribute
recorded here). Numeric kernels are in ``popxl/kernels_nn.py``; gradients in
``transforms/grad_rules_nn.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from .. import dtypes
from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..tensor import Tensor
from ._util import add_op, out, same_dtype, single

PadType = Literal["not_set", "same_upper", "same_lower", "valid"]
_PAD_TYPES = ("not_set", "same_upper", "same_lower", "valid")


def _check_tensor(api: str, **tensors: Tensor) -> None:
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{api}: {name} must be a popxl Tensor, got {type(t).__name__}")


def _float_input(api: str, t: Tensor) -> None:
    if t.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"{api}: {t.id} has dtype {t.dtype}; {api} takes float16 or float32 tensors")


def _nelms(shape: Sequence[int]) -> int:
    return int(math.prod(shape)) if shape else 1


# --- normalisation ---------------------------------------------------------------------------
def group_norm(t: Tensor, weight: Tensor, bias: Tensor, num_groups: int, eps: float = 1e-5) -> Tensor:
    """Group normalisation of ``t`` (N, C, ...): each sample's channels split into ``num_groups``
    contiguous groups, each normalised to zero mean and unit (biased) variance, then scaled by
    ``weight`` (C,) and shifted by ``bias`` (C,). Returns a tensor of t's shape and dtype."""
    api = "popxl.ops.group_norm"
    _check_tensor(api, t=t, weight=weight, bias=bias)
    _float_input(api, t)
    same_dtype("GroupNormalization", t, weight, bias)
    if t.rank < 2:
        raise ValueError(f"{api}: {t.id} has shape {t.shape}; it needs (N, C, ...) with rank >= 2")
    groups = int(num_groups)
    c = t.shape[1]
    if groups < 1 or c % groups:
        raise ValueError(f"{api}: {c} channels of {t.id} cannot be split into num_groups={num_groups} groups")
    for name, p in (("weight", weight), ("bias", bias)):
        if p.shape != (c,):
            raise ValueError(f"{api}: {name} {p.id} has shape {p.shape}; expected ({c},) for the channels of {t.id}")
    stats = (t.shape[0] * groups,)
    op = add_op("GroupNormalization", "group_norm", [t, weight, bias],
                [out("group_norm_out", t.shape, t.dtype), out("group_norm_mean", stats, t.dtype),
                 out("group_norm_inv_std_dev", stats, t.dtype)],
                {"num_groups": groups, "epsilon": float(eps)})
    return single(op)


def layer_norm(t: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """Layer normalisation: :func:`group_norm` with one group (every dimension after the first
    normalised together; ``weight``/``bias`` are per channel, dimension 1)."""
    return group_norm(t, weight=weight, bias=bias, num_groups=1, eps=eps)


def batch_norm_inference(t: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor,
                         epsilon: float = 1e-5, momentum: float = 0.9) -> Tensor:
    """(t - mean) / sqrt(var + epsilon) * scale + bias per channel (dimension 1) of ``t``
    (N, C, D1, ...); ``momentum`` is recorded but unused in inference. Returns t's shape and dtype."""
    api = "popxl.ops.batch_norm_inference"
    _check_tensor(api, t=t, scale=scale, bias=bias, mean=mean, var=var)
    _float_input(api, t)
    same_dtype("BatchNormalization", t, scale, bias, mean, var)
    if t.rank < 3:
        raise ValueError(f"{api}: batch norm requires {t.id} to have rank >= 3, it has rank {t.rank}")
    c = t.shape[1]
    for name, p in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
        if p.shape != (c,):
            raise ValueError(f"{api}: {name} {p.id} has shape {p.shape}; expected ({c},) to match dimension 1 "
                             f"of {t.id} {t.shape}")
    return single(add_op("BatchNormalization", "batch_norm", [t, scale, bias, mean, var],
                         [out("batch_norm_out", t.shape, t.dtype)],
                         {"epsilon": float(epsilon), "momentum": float(momentum), "spatial": 1}))


# --- receptive-field geometry ----------------------------------------------------------------
def _ints(api: str, name: str, values: Sequence[int] | None) -> tuple[int, ...]:
    if values is None:
        return ()
    try:
        return tuple(int(v) for v in values)
    except TypeError:
        raise TypeError(f"{api}: {name} must be a sequence of ints, got {values!r}") from None


def _resized(values: tuple[int, ...], n: int, fill: int) -> tuple[int, ...]:
    """PopART's std::vector::resize: truncate, or extend with ``fill``."""
    return values[:n] + (fill,) * max(0, n - len(values))


def _geometry(api: str, spatial: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
              pads: tuple[int, ...], dilations: tuple[int, ...], pad_type: str,
              ceil_mode: bool = False) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Output spatial shape and the lower / upper pads actually applied, by PopART's receptive-field rules."""
    if pad_type not in _PAD_TYPES:
        raise ValueError(f"pad type {pad_type} is not valid, must be not_set, same_upper, same_lower or valid")
    n = len(spatial)
    lower, upper, outs = list(pads[:n]), list(pads[n:]), []
    for i, (d, k, s, dil) in enumerate(zip(spatial, kernel, strides, dilations)):
        if s < 1 or dil < 1:
            raise ValueError(f"{api}: strides and dilations must be >= 1, got stride {s}, dilation {dil}")
        if pad_type != "not_set" and dil != 1:
            raise SimulatorNotImplementedError(not_implemented_message(f"{api}(pad_type/auto_pad={pad_type!r}) with dilation"))
        if pad_type == "valid":
            if lower[i] or upper[i]:
                raise SimulatorNotImplementedError(not_implemented_message(
                    f"{api}(pad_type/auto_pad='valid') with explicit padding"))
            o = -(-(d - (k - 1)) // s)
        elif pad_type in ("same_upper", "same_lower"):
            o = -(-d // s)
            total = (o - 1) * s + k - d
            if total < 0:
                raise SimulatorNotImplementedError(not_implemented_message(
                    f"{api}(pad_type/auto_pad={pad_type!r}) with a stride larger than the kernel (negative padding)"))
            small, big = total // 2, total - total // 2
            lower[i], upper[i] = (small, big) if pad_type == "same_upper" else (big, small)
        else:
            span = d + lower[i] + upper[i] - 1 - dil * (k - 1)
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode:
                upper[i] = (o - 1) * s + k - d - lower[i]
        if o < 1:
            raise ValueError(f"{api}: kernel {kernel} (dilation {dilations}) does not fit the input's spatial shape "
                             f"{spatial} with pads {tuple(lower) + tuple(upper)}")
        outs.append(o)
    return tuple(outs), tuple(lower), tuple(upper)


def _conv_params(api: str, t: Tensor, stride: Sequence[int] | None, padding: Sequence[int] | None,
                 dilation: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    n = t.rank - 2
    s, p, d = _ints(api, "stride", stride), _ints(api, "padding", padding), _ints(api, "dilation", dilation)
    if s and len(s) != n:
        raise ValueError(f"{api}: unexpected number of stride parameters {s} for {n} spatial dimensions")
    if p and len(p) != 2 * n:
        raise ValueError(f"{api}: unexpected number of pad parameters {p} for {n} spatial dimensions")
    if d and len(d) != n:
        raise ValueError(f"{api}: unexpected number of dilation parameters {d} for {n} spatial dimensions")
    return s or (1,) * n, p or (0,) * (2 * n), d or (1,) * n


# --- convolution -----------------------------------------------------------------------------
def conv(t: Tensor, weight: Tensor, stride: Sequence[int] | None = (1, 1),
         padding: Sequence[int] | None = (0, 0, 0, 0), dilation: Sequence[int] | None = (1, 1),
         groups: int | None = 1, pad_type: PadType | None = "not_set",
         available_memory_proportions: list[float] | None = None, partials_types: list[str] | None = None,
         enable_conv_dithering: list[int] | None = None) -> Tensor:
    """Convolution of ``t`` (N, C, *spatial) with ``weight`` (M, C / groups, *kernel); returns
    (N, M, *out_spatial) in t's dtype. The planning options are recorded, not modelled."""
    api = "popxl.ops.conv"
    _check_tensor(api, t=t, weight=weight)
    _float_input(api, t)
    same_dtype("Conv", t, weight)
    shape, attrs = conv_geometry(api, t, weight, stride, padding, dilation, groups, pad_type,
                                 available_memory_proportions, partials_types, enable_conv_dithering)
    return single(add_op("Conv", "conv", [t, weight], [out("conv_out", shape, t.dtype)], attrs))


def conv_geometry(api: str, t: Tensor, weight: Tensor, stride: Sequence[int] | None,
                  padding: Sequence[int] | None, dilation: Sequence[int] | None, groups: int | None,
                  pad_type: PadType | None, available_memory_proportions: list[float] | None,
                  partials_types: list[str] | None,
                  enable_conv_dithering: list[int] | None) -> tuple[tuple[int, ...], dict]:
    """PopART's shape rules of a convolution (dtypes not checked): returns the output shape
    (N, M, *out_spatial) and the op attributes of ``Conv`` (pads applied, FLOPs, planning options)."""
    if t.rank < 3 or weight.rank != t.rank:
        raise ValueError(f"{api}: input {t.id} {t.shape} and weight {weight.id} {weight.shape} must both be "
                         "(N, C, *spatial) / (M, C/groups, *kernel) with at least one spatial dimension")
    g = int(groups or 1)
    if g < 1:
        raise ValueError(f"{api}: groups must be >= 1, got {groups}")
    n_, c = t.shape[:2]
    m, cg = weight.shape[:2]
    if cg * g != c or m % g:
        raise ValueError(f"{api}: weight {weight.id} {weight.shape} with groups={g} does not match the {c} channels "
                         f"of {t.id} {t.shape} (needs weight dim 1 x groups = channels, out channels divisible by groups)")
    if partials_types is not None and any(p not in ("half", "float") for p in partials_types):
        raise ValueError(f"{api}: partials_types must be 'half' or 'float', got {partials_types}")
    if available_memory_proportions is not None and any(not 0 < a <= 1 for a in available_memory_proportions):
        raise ValueError(f"{api}: available_memory_proportions must be in (0, 1], got {available_memory_proportions}")
    s, p, d = _conv_params(api, t, stride, padding, dilation)
    kernel = weight.shape[2:]
    osp, lower, upper = _geometry(api, t.shape[2:], kernel, s, p, d, pad_type or "not_set")
    shape = (n_, m, *osp)
    macs = _nelms(shape) * cg * _nelms(kernel)
    attrs = {"strides": s, "lower_pads": lower, "upper_pads": upper, "dilations": d, "groups": g,
             "pad_type": pad_type or "not_set", "flops": 2 * macs,
             "available_memory_proportions": tuple(available_memory_proportions or ()),
             "partials_types": tuple(partials_types or ()), "enable_conv_dithering": tuple(enable_conv_dithering or ())}
    return shape, attrs


def conv_transpose(t: Tensor, weight: Tensor, stride: Sequence[int] | None = (1, 1),
                   padding: Sequence[int] | None = (0, 0, 0, 0), dilation: Sequence[int] | None = (1, 1),
                   groups: int | None = 1, pad_type: PadType | None = "not_set",
                   output_padding: Sequence[int] | None = (), output_shape: Sequence[int] | None = (),
                   available_memory_proportions: list[float] | None = None,
                   partials_types: list[str] | None = None,
                   enable_conv_dithering: list[int] | None = None) -> Tensor:
    """Transposed convolution of ``t`` (N, C, *spatial) with ``weight`` (C, M / groups, *kernel):
    the gradient of :func:`conv` with respect to its input. Output (N, M, *out) with
    out = stride * (in - 1) + output_padding + kernel - pad_begin - pad_end, or ``output_shape``
    when given (pads then derived as PopART does; ``pad_type`` only matters then)."""
    api = "popxl.ops.conv_transpose"
    _check_tensor(api, t=t, weight=weight)
    _float_input(api, t)
    same_dtype("ConvTranspose", t, weight)
    shape, attrs = conv_transpose_geometry(api, t, weight, stride, padding, dilation, groups, pad_type,
                                           output_padding, output_shape, available_memory_proportions,
                                           partials_types, enable_conv_dithering)
    return single(add_op("ConvTranspose", "conv_transpose", [t, weight], [out("convtranspose_out", shape, t.dtype)],
                         attrs))


def conv_transpose_geometry(api: str, t: Tensor, weight: Tensor, stride: Sequence[int] | None,
                            padding: Sequence[int] | None, dilation: Sequence[int] | None, groups: int | None,
                            pad_type: PadType | None, output_padding: Sequence[int] | None,
                            output_shape: Sequence[int] | None, available_memory_proportions: list[float] | None,
                            partials_types: list[str] | None,
                            enable_conv_dithering: list[int] | None) -> tuple[tuple[int, ...], dict]:
    """PopART's shape rules of a transposed convolution (dtypes not checked): returns the output
    shape (N, M, *out_spatial) and the op attributes of ``ConvTranspose`` (crop, FLOPs, options)."""
    if t.rank < 3 or weight.rank != t.rank:
        raise ValueError(f"{api}: input {t.id} {t.shape} and weight {weight.id} {weight.shape} must both be "
                         "(N, C, *spatial) / (C, M/groups, *kernel)")
    g = int(groups or 1)
    if g < 1:
        raise ValueError(f"group attribute in {api} must be greater than zero")
    if t.shape[1] != weight.shape[0] or weight.shape[0] % g:
        raise ValueError(f"{api}: unexpected number of channels in the input tensor {t.id} {t.shape}: the weight "
                         f"{weight.id} {weight.shape} expects {weight.shape[0]} channels (divisible by groups={g})")
    n = t.rank - 2
    s = _resized(_ints(api, "stride", stride), n, 1)
    p = _resized(_ints(api, "padding", padding), 2 * n, 0)
    d = _resized(_ints(api, "dilation", dilation), n, 1)
    op_ = _resized(_ints(api, "output_padding", output_padding), n, 0)
    if any(x != 1 for x in d):
        raise ValueError(f"{api}: non default value for dilations is not supported")
    kernel = weight.shape[2:]
    spatial = t.shape[2:]
    want = _ints(api, "output_shape", output_shape)
    pt = pad_type or "not_set"
    if pt not in _PAD_TYPES:
        raise ValueError(f"pad type {pt} is not valid, must be not_set, same_upper, same_lower or valid")
    if not want:
        osp = tuple(s[i] * (spatial[i] - 1) + op_[i] + kernel[i] - p[i] - p[n + i] for i in range(n))
        crop = tuple(p[:n])
    else:
        if len(want) == n:
            osp = want
        elif len(want) == n + 2:
            osp = want[2:]
        else:
            raise ValueError(f"{api}: output_shape {want} must give the {n} spatial sizes")
        if pt == "valid":
            raise ValueError(f"{api}: 'valid' pad_type cannot be used if the output_shape is also set")
        if any(op_):
            raise SimulatorNotImplementedError(not_implemented_message(f"{api}(output_shape=...) with output_padding"))
        crops = []
        for i in range(n):
            total = s[i] * (spatial[i] - 1) + kernel[i] - osp[i]
            half = int(total / 2)  # C++ division, towards zero
            # the first output is this many positions into the full transposed convolution (PopART's pads)
            crops.append(half + (1 if total > 0 and total % 2 == 1 else 0) if pt == "same_upper" else total - int((total + 1) / 2))
        crop = tuple(crops)
    if any(o < 1 for o in osp):
        raise ValueError(f"{api}: output spatial shape {osp} is empty")
    m = weight.shape[1] * g
    shape = (t.shape[0], m, *osp)
    macs = _nelms(t.shape) * weight.shape[1] * _nelms(kernel)
    attrs = {"strides": s, "crop": crop, "groups": g, "pad_type": pt, "flops": 2 * macs,
             "output_padding": op_, "available_memory_proportions": tuple(available_memory_proportions or ()),
             "partials_types": tuple(partials_types or ()), "enable_conv_dithering": tuple(enable_conv_dithering or ())}
    return shape, attrs


# --- pooling ---------------------------------------------------------------------------------
def _pool(api: str, op_type: str, name: str, t: Tensor, kernel_size: Sequence[int], stride: Sequence[int] | None,
          padding: Sequence[int] | None, out_pads: Sequence[int] | None, dilation: Sequence[int] | None,
          in_dilations: Sequence[int] | None, auto_pad: str | None, ceil_mode: bool, extra: dict) -> Tensor:
    _check_tensor(api, t=t)
    _float_input(api, t)
    if t.rank < 3:
        raise ValueError(f"{api}: {t.id} has shape {t.shape}; pooling needs (N, C, *spatial)")
    n = t.rank - 2
    kernel = _ints(api, "kernel_size", kernel_size)
    if len(kernel) != n:
        raise ValueError(f"{api}: invalid kernel_size {kernel}, not the same rank as the {n} spatial dimensions of {t.id}")
    for arg, values, default in (("dilation", dilation, 1), ("in_dilations", in_dilations, 1), ("out_pads", out_pads, 0)):
        if any(v != default for v in _ints(api, arg, values)):
            raise SimulatorNotImplementedError(not_implemented_message(f"{api}({arg}=...)"))
    s = _resized(_ints(api, "stride", stride), n, 1)
    p = _resized(_ints(api, "padding", padding), 2 * n, 0)
    osp, lower, upper = _geometry(api, t.shape[2:], kernel, s, p, (1,) * n, auto_pad or "not_set", bool(ceil_mode))
    shape = (*t.shape[:2], *osp)
    attrs = {"kernel": kernel, "strides": s, "lower_pads": lower, "upper_pads": upper,
             "flops": _nelms(shape) * _nelms(kernel), **extra}
    return single(add_op(op_type, name, [t], [out(f"{name}_out", shape, t.dtype)], attrs))


def average_pool(t: Tensor, kernel_size: Sequence[int], stride: Sequence[int] | None = None,
                 padding: Sequence[int] | None = None, out_pads: Sequence[int] | None = None,
                 dilation: Sequence[int] | None = None, in_dilations: Sequence[int] | None = None,
                 auto_pad: PadType | None = "not_set", ceil_mode: bool = False) -> Tensor:
    """Mean over each ``kernel_size`` window of ``t`` (N, C, *spatial); padded positions are not
    counted. Returns (N, C, *out_spatial)."""
    return _pool("popxl.ops.average_pool", "AveragePool", "averagepool", t, kernel_size, stride, padding, out_pads,
                 dilation, in_dilations, auto_pad, ceil_mode, {})


def max_pool(t: Tensor, kernel_size: Sequence[int], stride: Sequence[int] | None = None,
             padding: Sequence[int] | None = None, out_pads: Sequence[int] | None = None,
             dilation: Sequence[int] | None = None, in_dilations: Sequence[int] | None = None,
             auto_pad: PadType | None = "not_set", ceil_mode: bool = False,
             storage_order: Literal["row", "column"] = "row") -> Tensor:
    """Maximum over each ``kernel_size`` window of ``t`` (N, C, *spatial); padding never wins.
    ``storage_order`` only concerns an indices output popxl does not return."""
    if storage_order not in ("row", "column"):
        raise ValueError(f"popxl.ops.max_pool: storage_order must be 'row' or 'column', got {storage_order!r}")
    return _pool("popxl.ops.max_pool", "MaxPool", "maxpool", t, kernel_size, stride, padding, out_pads,
                 dilation, in_dilations, auto_pad, ceil_mode, {"storage_order": storage_order})


__all__ = ["PadType", "average_pool", "batch_norm_inference", "conv", "conv_transpose", "group_norm", "layer_norm",
           "max_pool"]
