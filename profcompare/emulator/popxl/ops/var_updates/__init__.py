"""In-place variable updates (popxl.ops.var_updates). Each returns an alias of the updated ``t``.

Factors ``f`` may be floats or scalar tensors. Moving averages cast X to t's dtype first, so a
float16 first moment is computed in float16.
"""

from __future__ import annotations

from typing import Any

from ... import dtypes
from ...errors import module_getattr
from ...tensor import Tensor
from .._util import add_op, factor, out, single


def _update(op_type: str, prefix: str, t: Tensor, others: list[Tensor], attrs: dict[str, Any],
            f: Any = None, f_name: str = "f") -> Tensor:
    inputs = [t, *others]
    if f is not None:
        fv, ft = factor(f, t.dtype, f_name)
        attrs = {**attrs, f_name: fv, f"{f_name}_tensor": ft is not None}
        if ft is not None:
            inputs.append(ft)
    return single(add_op(op_type, prefix.rstrip("_"), inputs, [out(prefix + t.name, t.shape, t.dtype, t.meta_shape)],
                         attrs, modified=[t]))


def _same_shape(api: str, t: Tensor, X: Tensor) -> None:
    if t.shape != X.shape:
        raise ValueError(f"{api}: {X.id} shape {X.shape} must equal {t.id} shape {t.shape}")


def accumulate_(t: Tensor, X: Tensor, f: Any = None) -> Tensor:
    """t += X, or t += f*X when f is given."""
    _same_shape("accumulate_", t, X)
    if f is None:
        return _update("Accumulate", "accumulate__", t, [X], {"f": None, "f_tensor": False})
    return _update("Accumulate", "accumulate__", t, [X], {}, f)


def accumulate_square_(t: Tensor, X: Tensor, f: Any = 1.0) -> Tensor:
    """t += f * X^2."""
    _same_shape("accumulate_square_", t, X)
    return _update("AccumulateSquare", "accumulate_square__", t, [X], {}, f)


def accumulate_mean_(t: Tensor, X: Tensor, step: Any) -> Tensor:
    """t = (step/(step+1)) t + X/(step+1); ``step`` counts the values already accumulated."""
    _same_shape("accumulate_mean_", t, X)
    return _update("AccumulateMean", "accumulate_mean__", t, [X], {}, step, "step")


def accumulate_moving_average_(t: Tensor, X: Tensor, f: Any) -> Tensor:
    """t = f t + (1 - f) X, X cast to t's dtype first."""
    _same_shape("accumulate_moving_average_", t, X)
    return _update("AccumulateMovingAverage", "accumulate_moving_avg__", t, [X], {}, f)


def accumulate_moving_average_square_(t: Tensor, X: Tensor, f: Any) -> Tensor:
    """t = f t + (1 - f) X^2, X cast to t's dtype first."""
    _same_shape("accumulate_moving_average_square_", t, X)
    return _update("AccumulateMovingAverageSquare", "accumulate_moving_avg_square__", t, [X], {}, f)


def accumulator_scale_(t: Tensor, f: Any) -> Tensor:
    """t *= f (a constant f of 0 zeroes t, NaNs included)."""
    return _update("AccumulatorScale", "accumulator_scale__", t, [], {}, f)


def accumulator_zero_(t: Tensor) -> Tensor:
    """t = 0 (``accumulator_scale_(t, 0.0)``)."""
    return accumulator_scale_(t, 0.0)


def copy_var_update_(t: Tensor, X: Tensor) -> Tensor:
    """t <- X (shapes must match)."""
    _same_shape("copy_var_update_", t, X)
    return single(add_op("CopyVarUpdate", "copy_var_update", [t, X],
                         [out("updated__" + t.name, t.shape, t.dtype, t.meta_shape)], {}, modified=[t]))


def _updater(api: str, mode: str, m: Tensor, v: Tensor, weight: Tensor | None, time_step: Tensor | None,
             weight_decay: Any, beta1: Any, beta2: Any, epsilon: Any) -> Tensor:
    """An AdamUpdater op in ``mode`` ('adam', 'adam_no_bias', 'lamb', 'lamb_no_bias', 'adamax')."""
    if m.shape != v.shape:
        raise ValueError(f"{api}: first order {m.shape} and second order {v.shape} shapes differ")
    inputs = [m, v]
    attrs: dict[str, Any] = {"mode": mode}
    wd_connected = isinstance(weight_decay, Tensor) or (weight_decay is not None and float(weight_decay) != 0.0)
    if wd_connected:
        if weight is None:
            raise ValueError("Weight decay requires weight to not be None.")
        if weight.shape != m.shape:
            raise ValueError(f"{api}: weight shape {weight.shape} differs from the state shape {m.shape}")
        inputs.append(weight)
    attrs["weight"] = wd_connected
    for key, value in (("weight_decay", weight_decay if wd_connected else None), ("beta1", beta1),
                       ("beta2", beta2), ("epsilon", epsilon)):
        if value is None:
            attrs[key] = None
            attrs[f"{key}_tensor"] = False
            continue
        fv, ft = factor(value, m.dtype, key)
        attrs[key] = fv
        attrs[f"{key}_tensor"] = ft is not None
        if ft is not None:
            inputs.append(ft)
    modified = []
    if mode in BIAS_CORRECTED:
        assert time_step is not None
        if time_step.nelms != 1:
            raise ValueError(f"{api}: time_step must be a scalar, got {time_step.shape}")
        inputs.append(time_step)
        modified.append(time_step)
    out_dtype = weight.dtype if wd_connected and weight is not None else m.dtype
    return single(add_op("AdamUpdater", "adamupdater", inputs, [out("Updater", m.shape, out_dtype, m.meta_shape)],
                         attrs, modified=modified))


#: AdamUpdater modes that take the time step (incremented in place) for bias correction
BIAS_CORRECTED = ("adam", "lamb", "adamax")


def _bias_mode(name: str, time_step: Tensor | None, beta1: Any, beta2: Any) -> str:
    if time_step is not None and (beta1 is None or beta2 is None):
        raise ValueError("Bias correction requires both beta1 and beta2 to not be None.")
    return name if time_step is not None else f"{name}_no_bias"


def adam_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Tensor | None = None,
                 time_step: Tensor | None = None, weight_decay: Any = None, beta1: Any = None,
                 beta2: Any = None, epsilon: Any = 1e-07) -> Tensor:
    """Adam / AdamNoBias updater term.

    With ``time_step`` and both betas: time_step += 1 in place first, then
    ``cast(m / (1 - beta1^t), v.dtype) / (sqrt(v / (1 - beta2^t)) + eps)`` (+ wd * w). Without
    time_step: no bias correction. The weight is connected only for a non-zero or tensor
    weight_decay; the output dtype is the weight's then, else m's."""
    mode = _bias_mode("adam", time_step, beta1, beta2)
    return _updater("adam_updater", mode, acc_first_order, acc_second_order, weight, time_step, weight_decay,
                    beta1, beta2, epsilon)


def lamb_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Tensor | None = None,
                 time_step: Tensor | None = None, weight_decay: Any = None, beta1: Any = None,
                 beta2: Any = None, epsilon: Any = 1e-07) -> Tensor:
    """LAMB updater term: PopART computes it exactly as :func:`adam_updater` (modes Lamb /
    LambNoBias); LAMB's trust ratio is applied by :func:`adam_var_update`."""
    mode = _bias_mode("lamb", time_step, beta1, beta2)
    return _updater("lamb_updater", mode, acc_first_order, acc_second_order, weight, time_step, weight_decay,
                    beta1, beta2, epsilon)


def adamax_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Tensor | None = None,
                   time_step: Tensor | None = None, weight_decay: Any = None, beta1: Any = 0.9,
                   epsilon: Any = 1e-07) -> Tensor:
    """AdaMax updater term: time_step += 1 in place, then
    ``cast(m / (1 - beta1^t), v.dtype) / (v + eps)`` (+ wd * w); v (the infinity norm) is not
    bias corrected. ``time_step`` is required."""
    if time_step is None:
        raise ValueError("AdaMax requires time_step to not be None.")
    return _updater("adamax_updater", "adamax", acc_first_order, acc_second_order, weight, time_step,
                    weight_decay, beta1, None, epsilon)


def adam_var_update(t: Tensor, x: Tensor, r1: Tensor, r2: Tensor, learning_rate: Any = None,
                    max_weight_norm: Any = None) -> Tensor:
    """Adam / LAMB weight update in place: ``t -= lr * ratio * x`` with the LAMB trust ratio
    ``ratio = min(sqrt(r1), max_weight_norm) / sqrt(r2)``, 1 when r1 or r2 is 0 (or a tensor
    max_weight_norm is 0). ``r1`` / ``r2`` are the squared norms of the weight and of the
    updater (:func:`popxl.ops.lamb_square`). Returns t's alias.

    PopART's lowering needs ``learning_rate`` and ``max_weight_norm`` (a float or a scalar
    tensor; a constant max_weight_norm must not be 0): ``None`` leaves an input it reads
    unconnected, so those calls are refused here when the op is built."""
    api = "adam_var_update"
    _same_shape(api, t, x)
    for name, r in (("r1", r1), ("r2", r2)):
        if not isinstance(r, Tensor) or r.nelms != 1:
            raise ValueError(f"{api}: {name} must be a scalar tensor (a squared norm)")
    if learning_rate is None or max_weight_norm is None:
        raise ValueError(f"{api}: PopART reads a learning_rate and a max_weight_norm input; pass floats or scalar "
                         "tensors (None leaves the input unconnected and the session fails to compile)")
    if not isinstance(max_weight_norm, Tensor) and float(max_weight_norm) == 0.0:
        raise ValueError(f"{api}: a constant zero max_weight_norm cannot be lowered with r1 / r2 inputs "
                         "(PopART's AdamVarUpdatex refuses it)")
    inputs = [t, x, r1, r2]
    attrs: dict[str, Any] = {"flops": 3 * t.nelms}
    for key, value in (("learning_rate", learning_rate), ("max_weight_norm", max_weight_norm)):
        fv, ft = factor(value, dtypes.float32, key)
        attrs[key], attrs[f"{key}_tensor"] = fv, ft is not None
        if ft is not None:
            inputs.append(ft)
    return single(add_op("AdamVarUpdate", "adam_var_update", inputs,
                         [out("adam_var_update_out", t.shape, t.dtype, t.meta_shape)], attrs, modified=[t]))


def sparse_accumulate_(t: Tensor, X: Tensor, indices: Tensor, axis: int = 0, f: Any = None,
                       W: Tensor | None = None) -> Tensor:
    """``t[indices[i]] += f * X[i]`` along ``axis`` (repeated indices add up; indices outside
    the axis are skipped, as popops' multiUpdateAdd does): X has t's shape with ``axis``
    replaced by ``indices``' shape (the shape of the gather it is the gradient of). ``f``
    (float or scalar tensor) defaults to 1. ``W`` only guides the tile mapping on the IPU.
    Returns t's alias."""
    api = "sparse_accumulate_"
    if not indices.dtype.is_int:
        raise TypeError(f"{api}: indices {indices.id} must have an integer dtype, got {indices.dtype.name}")
    if not 0 <= int(axis) < max(t.rank, 1):
        raise ValueError(f"{api}: axis {axis} is out of range for {t.id} of rank {t.rank}")
    ax = int(axis)
    expected = t.shape[:ax] + indices.shape + t.shape[ax + 1:]
    if X.shape != expected:
        raise ValueError(f"{api}: X {X.shape} must have t's shape with axis {ax} replaced by the indices' shape: "
                         f"{expected}")
    others = [X, indices] + ([W] if W is not None else [])
    attrs: dict[str, Any] = {"axis": ax, "W": W is not None, "flops": 2 * X.nelms}
    return _update("SparseAccumulate", "sparse_accumulate__", t, others, attrs, 1.0 if f is None else f)


__getattr__ = module_getattr("popxl.ops.var_updates")

__all__ = [
    "accumulate_",
    "accumulate_mean_",
    "accumulate_moving_average_",
    "accumulate_moving_average_square_",
    "accumulate_square_",
    "accumulator_scale_",
    "accumulator_zero_",
    "adam_updater",
    "adam_var_update",
    "adamax_updater",
    "copy_var_update_",
    "lamb_updater",
    "sparse_accumulate_",
]
