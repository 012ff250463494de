"""In-place variable updates (popxl.ops.var_updates). Each returns an alias of the updated ``t``.

Factors ``f`` may be floats or scalar tensors. Moving averages cast X to t's dtype first, so a
float16 first moment is computed in float16.
"""

from __future__ import annotations

from typing import Any

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


def adam_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Tensor | None = None,
                 time_step: Tensor | None = None, weight_decay: Any = None, beta1: Any = None,
                 beta2: Any = None, epsilon: Any = 1e-07) -> Tensor:
    """Adam / AdamNoBias updater term.

    With ``time_step`` and both betas: time_step += 1 in place first, then
    ``cast(m / (1 - beta1^t), v.dtype) / (sqrt(v / (1 - beta2^t)) + eps)`` (+ wd * w). Without
    time_step: no bias correction. The weight is connected only for a non-zero or tensor
    weight_decay; the output dtype is the weight's then, else m's."""
    m, v = acc_first_order, acc_second_order
    if m.shape != v.shape:
        raise ValueError(f"adam_updater: first order {m.shape} and second order {v.shape} shapes differ")
    if time_step is not None and (beta1 is None or beta2 is None):
        raise ValueError("adam_updater: time_step requires beta1 and beta2 (bias correction)")
    mode = "adam" if time_step is not None else "adam_no_bias"
    inputs = [m, v]
    attrs: dict[str, Any] = {"mode": mode}
    wd_connected = isinstance(weight_decay, Tensor) or (weight_decay is not None and float(weight_decay) != 0.0)
    if wd_connected:
        if weight is None:
            raise ValueError("adam_updater: weight decay needs the weight")
        if weight.shape != m.shape:
            raise ValueError(f"adam_updater: weight shape {weight.shape} differs from the state shape {m.shape}")
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
    if time_step is not None:
        if time_step.nelms != 1:
            raise ValueError(f"adam_updater: time_step must be a scalar, got {time_step.shape}")
        inputs.append(time_step)
        modified.append(time_step)
    out_dtype = weight.dtype if wd_connected and weight is not None else m.dtype
    return single(add_op("AdamUpdater", "adamupdater", inputs, [out("Updater", m.shape, out_dtype, m.meta_shape)],
                         attrs, modified=modified))


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
    "copy_var_update_",
]
