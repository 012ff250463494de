"""Gradient rules of popxl's neural-network and random ops, merged into
:data:`.grad_rules.GRAD_RULES` (same rule signature).

As in PopART, each forward op gets dedicated gradient ops (``GroupNormalizationGrad``,
``ConvDataGrad`` / ``ConvWeightsGrad``, ``MaxPoolGrad`` ...) whose kernels are in
``popxl/kernels_nn.py``. Dropout's gradient regenerates the forward mask from the same seed
tensor. Losses, statistics and image ops: ``NllGrad``, ``ReduceMedianGrad`` (the gradient goes
to the median's element), a ``PrintTensor`` of the gradient, ``ResizeGrad`` and
``RoiAlignGrad`` (kernels in ``kernels_losses.py``, ``kernels_stats.py``, ``kernels_image.py``);
histogram, lamb_square and increment_mod pass no gradient, as PopART defines none for them.
``batch_norm_inference`` has no gradient: autodiff refuses it, as PopART does for the
one-output (inference) batch norm, and refuses the float8 scaled convolutions, as PopART does.
"""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Op, add_op
from ..ops._util import out
from ..tensor import Tensor

Fwd = Callable[[Tensor], Tensor]


def _like(name: str, t: Tensor) -> tuple:
    return out(name, t.shape, t.dtype)


def _group_norm(op: Op, grads: list, fwd: Fwd) -> list:
    x, w, b = op.inputs
    _y, mean, inv = op.outputs
    g = add_op("GroupNormalizationGrad", "group_norm_grad", [grads[0], fwd(x), fwd(w), fwd(mean), fwd(inv)],
               [_like("group_norm_x_grad", x), _like("group_norm_weight_grad", w), _like("group_norm_bias_grad", b)],
               {"num_groups": op.attrs["num_groups"], "epsilon": op.attrs["epsilon"]})
    return list(g.outputs)


def _batch_norm(op: Op, grads: list, fwd: Fwd) -> list:
    raise RuntimeError(f"autodiff of batch_norm_inference ({op.name}): an inference batch norm (one output) has "
                       "no gradient in popxl; detach its inputs or keep it out of the differentiated graph")


def _conv(op: Op, grads: list, fwd: Fwd) -> list:
    x, w = op.inputs
    dx = add_op("ConvDataGrad", "conv_data_grad", [grads[0], fwd(w)], [_like("conv_x_grad", x)], dict(op.attrs))
    dw = add_op("ConvWeightsGrad", "conv_weights_grad", [grads[0], fwd(x)], [_like("conv_weight_grad", w)],
                dict(op.attrs))
    return [dx.outputs[0], dw.outputs[0]]


def _conv_transpose(op: Op, grads: list, fwd: Fwd) -> list:
    x, w = op.inputs
    dx = add_op("ConvTransposeDataGrad", "conv_transpose_data_grad", [grads[0], fwd(w)],
                [_like("convtranspose_x_grad", x)], dict(op.attrs))
    dw = add_op("ConvTransposeWeightsGrad", "conv_transpose_weights_grad", [grads[0], fwd(x)],
                [_like("convtranspose_weight_grad", w)], dict(op.attrs))
    return [dx.outputs[0], dw.outputs[0]]


def _max_pool(op: Op, grads: list, fwd: Fwd) -> list:
    x = op.inputs[0]
    g = add_op("MaxPoolGrad", "maxpool_grad", [grads[0], fwd(x), fwd(op.outputs[0])], [_like("maxpool_x_grad", x)],
               dict(op.attrs))
    return [g.outputs[0]]


def _average_pool(op: Op, grads: list, fwd: Fwd) -> list:
    x = op.inputs[0]
    g = add_op("AveragePoolGrad", "averagepool_grad", [grads[0]], [_like("averagepool_x_grad", x)], dict(op.attrs))
    return [g.outputs[0]]


def _dropout_like(grad_type: str) -> Callable[[Op, list, Fwd], list]:
    def rule(op: Op, grads: list, fwd: Fwd) -> list:
        x, seed = op.inputs
        g = add_op(grad_type, grad_type.lower(), [grads[0], fwd(seed)], [_like(f"{grad_type.lower()}_out", x)],
                   dict(op.attrs))
        return [g.outputs[0], None]
    return rule


def _scaled_conv(op: Op, grads: list, fwd: Fwd) -> list:
    raise RuntimeError(f"autodiff of {op.name}: PopART does not support a float8 scaled convolution in a "
                       "backward pass")


def _no_grad(op: Op, grads: list, fwd: Fwd) -> list:
    return [None] * len(op.inputs)


def _nll(op: Op, grads: list, fwd: Fwd) -> list:
    probs, labels = op.inputs
    g = add_op("NllGrad", "nll_grad", [grads[0], fwd(probs), fwd(labels)], [_like("nll_probs_grad", probs)],
               {k: op.attrs[k] for k in ("reduction", "ignore_index", "log_prob")})
    return [g.outputs[0], None]


def _median(op: Op, grads: list, fwd: Fwd) -> list:
    x = op.inputs[0]
    g = add_op("ReduceMedianGrad", "ReduceMedianGrad", [grads[0], fwd(op.outputs[1])], [_like("median_x_grad", x)],
               {"axes": op.attrs["axes"], "keepdims": op.attrs["keepdims"]})
    return [g.outputs[0]]


def _print_tensor(op: Op, grads: list, fwd: Fwd) -> list:
    # PopART's grad op prints the gradient (titled <title>_gradient) only when print_gradient is set
    attrs = {**op.attrs, "title": op.attrs["title"] + "_gradient", "print_self": op.attrs["print_gradient"]}
    g = add_op("PrintTensor", "print_tensor_grad", [grads[0]], [_like("print_out", grads[0])], attrs)
    return [g.outputs[0]]


def _resize(op: Op, grads: list, fwd: Fwd) -> list:
    x = op.inputs[0]
    g = add_op("ResizeGrad", "interpolate_grad", [grads[0]], [_like("interpolate_x_grad", x)], dict(op.attrs))
    return [g.outputs[0]]


def _roi_align(op: Op, grads: list, fwd: Fwd) -> list:
    t, rois, batch_index = op.inputs
    g = add_op("RoiAlignGrad", "roi_align_grad", [grads[0], fwd(rois), fwd(batch_index), fwd(t)],
               [_like("roi_align_t_grad", t)], dict(op.attrs))
    return [g.outputs[0], None, None]


GRAD_RULES_NN: dict[str, Callable[[Op, list, Fwd], list]] = {
    "GroupNormalization": _group_norm,
    "BatchNormalization": _batch_norm,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "ConvPow2Scaled": _scaled_conv, "ConvTransposePow2Scaled": _scaled_conv,
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "Dropout": _dropout_like("DropoutGrad"),
    "ShapedDropout": _dropout_like("ShapedDropoutGrad"),
    # random samples and seeds carry no gradient
    "RandomUniform": _no_grad, "RandomNormal": _no_grad, "ModifyRandomSeed": _no_grad,
    "Nll": _nll,
    "ReduceMedian": _median,
    "PrintTensor": _print_tensor,
    "Resize": _resize,
    "RoiAlign": _roi_align,
    # PopART defines no gradient ops for these: nothing flows back through them
    "Histogram": _no_grad, "LambSquare": _no_grad, "IncrementMod": _no_grad, "IncrementModInplace": _no_grad,
}

__all__ = ["GRAD_RULES_NN"]
