"""``AdamOptimizerStep``: one AdamW step of a variable as a popxl-addons Module (both generations).

The graph scales the gradient (``1 / loss_scaling``, and ``global_norm_max /
max(global_norm, global_norm_max)`` when a global norm is given; the scaled gradient is
float32), updates the moving averages it adds as variable inputs (``first_order`` of
``first_order_dtype``, ``second_order`` float32, both zero-initialised, replica-sharded when
``var`` has a meta_shape) with ``m = beta1 m + (1 - beta1) g`` and ``v = beta2 v + (1 - beta2)
g**2``, and, with ``bias_correction``, a float32 ``step`` counter that PopART's AdamUpdater
increments before correcting ``m / (1 - beta1**step)`` and ``v / (1 - beta2**step)``. The
update is ``var -= lr * (m / (sqrt(v) + eps) + weight_decay * var)``, applied with a scaled
add. The ops are built in sequence.

The two generations differ only in how the sharded state is declared: 3.0 shards it over the
whole replica grouping (``ir.replica_grouping()`` when none is given), 3.4 over
``prod(meta_shape) // prod(shape)`` replicas (``shard_over``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.module import Module

__all__ = ["AdamOptimizerStep"]


def _gradient_multiplier(loss_scaling: Any, global_norm: popxl.Tensor | None, global_norm_max: Any) -> Any:
    """Return the factor the gradient is multiplied by before the moments see it: ``1 /
    loss_scaling``, times ``global_norm_max / max(global_norm, global_norm_max)`` when a global
    norm is given (a Tensor then; ``global_norm_max`` becomes a float32 constant if it is a
    number). The plain number 1 means "leave the gradient as it is"."""
    multiplier: Any = 1 if loss_scaling == 1 else 1 / loss_scaling
    if global_norm is None:
        return multiplier
    if global_norm_max is None:
        raise AssertionError("a global_norm needs its global_norm_max")
    ceiling = global_norm_max if isinstance(global_norm_max, popxl.Tensor) else popxl.constant(global_norm_max,
                                                                                              popxl.float32)
    # clip only when the norm exceeds the ceiling: ceiling / max(norm, ceiling) <= 1
    return (multiplier * ceiling) / ops.maximum(global_norm, ceiling)


def _moment_shapes(var: popxl.Tensor) -> tuple[tuple[int, ...], int | None]:
    """Return the host shape of ``var``'s optimiser state and, for a replica-sharded ``var``,
    over how many replicas 3.4 spreads it (None when ``var`` is not sharded)."""
    if not var.meta_shape:
        return tuple(var.shape), None
    return tuple(var.meta_shape), int(np.prod(var.meta_shape)) // int(np.prod(var.shape))


class AdamOptimizerStep(Module):
    """Module whose graph applies one AdamW step to ``var`` (passed by reference) given
    ``grad``; its variable inputs are the optimiser state (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    @popxl.in_sequence()
    def build(
        self,
        var: popxl.TensorByRef,
        grad: popxl.Tensor,
        replica_grouping: popxl.ReplicaGrouping | None = None,
        *,
        lr: float | popxl.Tensor,
        beta1: float | popxl.Tensor = 0.9,
        beta2: float | popxl.Tensor = 0.999,
        eps: float | popxl.Tensor = 1e-5,
        weight_decay: float | popxl.Tensor = 1e-2,
        first_order_dtype: popxl.dtype = popxl.float16,
        bias_correction: bool = True,
        loss_scaling: float | popxl.Tensor = 1,
        global_norm: popxl.Tensor | None = None,
        global_norm_max: float | popxl.Tensor | None = None,
    ) -> None:
        """Build the update of ``var`` in place; returns nothing."""
        multiplier = _gradient_multiplier(loss_scaling, global_norm, global_norm_max)
        scaled_grad = grad
        if isinstance(multiplier, popxl.Tensor) or multiplier != 1:
            scaled_grad = ops.cast(grad, popxl.float32) * multiplier

        moments = {
            "first_order": self._state_input("first_order", var, first_order_dtype, replica_grouping),
            "second_order": self._state_input("second_order", var, popxl.float32, replica_grouping),
        }
        ops.var_updates.accumulate_moving_average_(moments["first_order"], scaled_grad, f=beta1)
        ops.var_updates.accumulate_moving_average_square_(moments["second_order"], scaled_grad, f=beta2)

        # PopART's AdamUpdater increments the counter itself before using it for bias correction
        step_counter = (self.add_variable_input("step", partial(np.zeros, ()), popxl.float32, by_ref=True)
                        if bias_correction else None)
        direction = ops.var_updates.adam_updater(
            moments["first_order"], moments["second_order"], weight=var, weight_decay=weight_decay,
            time_step=step_counter, beta1=beta1, beta2=beta2, epsilon=eps,
        )
        # var += (-lr) * direction as one ScaledAdd: float16 weights then get PopART's rounding of
        # that op rather than a separate multiply's
        ops.scaled_add_(var, direction, b=-lr)

    def _state_input(self, name: str, var: popxl.Tensor, dtype: Any, replica_grouping: Any) -> popxl.Tensor:
        """A zero-initialised by-reference variable input shaped like ``var`` (sharded like it)."""
        host_shape, shard_over = _moment_shapes(var)
        zeros = partial(np.zeros, host_shape)
        if current() == "3.0":
            # 3.0 shards over (and places in) the whole grouping, defaulting to the IR's
            replica_grouping = replica_grouping or popxl.gcg().ir.replica_grouping()
            sharding: dict[str, Any] = {}
        else:
            sharding = {"shard_over": shard_over}
        if shard_over is None:
            return self.add_variable_input(name, zeros, dtype, replica_grouping=replica_grouping, by_ref=True)
        return self.add_replica_sharded_variable_input(name, zeros, dtype, replica_grouping=replica_grouping,
                                                       by_ref=True, **sharding)
