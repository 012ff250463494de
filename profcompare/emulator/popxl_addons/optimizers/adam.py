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
        scale: Any = 1
        if loss_scaling != 1:
            scale = scale / loss_scaling
        if global_norm is not None:
            assert global_norm_max is not None, "global_norm_max must be specified along with global_norm"
            if not isinstance(global_norm_max, popxl.Tensor):
                global_norm_max = popxl.constant(global_norm_max, popxl.float32)
            scale = (scale * global_norm_max) / ops.maximum(global_norm, global_norm_max)
        if isinstance(scale, popxl.Tensor) or scale != 1:
            grad = ops.cast(grad, popxl.float32) * scale

        first_order = self._state_input("first_order", var, first_order_dtype, replica_grouping)
        second_order = self._state_input("second_order", var, popxl.float32, replica_grouping)
        ops.var_updates.accumulate_moving_average_(first_order, grad, f=beta1)
        ops.var_updates.accumulate_moving_average_square_(second_order, grad, f=beta2)

        step = None
        if bias_correction:
            step = self.add_variable_input("step", partial(np.zeros, ()), popxl.float32, by_ref=True)
        updater = ops.var_updates.adam_updater(
            first_order, second_order, weight=var, weight_decay=weight_decay, time_step=step,
            beta1=beta1, beta2=beta2, epsilon=eps,
        )
        # a scaled add, as popxl-addons does, so that float16 weights get PopART's rounding
        ops.scaled_add_(var, updater, b=-lr)

    def _state_input(self, name: str, var: popxl.Tensor, dtype: Any, replica_grouping: Any) -> popxl.Tensor:
        """A zero-initialised by-reference variable input shaped like ``var`` (sharded like it)."""
        if current() == "3.0":
            replica_grouping = replica_grouping or popxl.gcg().ir.replica_grouping()
        if not var.meta_shape:
            return self.add_variable_input(name, partial(np.zeros, var.shape), dtype,
                                           replica_grouping=replica_grouping, by_ref=True)
        data = partial(np.zeros, var.meta_shape)
        if current() == "3.0":
            return self.add_replica_sharded_variable_input(
                name, data, dtype, replica_grouping=replica_grouping, by_ref=True)
        shard_over = int(np.prod(var.meta_shape)) // int(np.prod(var.shape))
        return self.add_replica_sharded_variable_input(name, data, dtype, replica_grouping=replica_grouping,
                                                       shard_over=shard_over, by_ref=True)
