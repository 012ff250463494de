"""popxl-addons 3.4's ``LayerNormDistributed`` layer (``popxl_addons.layers.layer_norm_distributed``;
not in 3.0): :func:`..ops.layer_norm_distributed.layer_norm_distributed` with a weight (ones)
and a bias (zeros) of the input's last-axis size, each a variable over the transpose of the
layer's replica grouping (so each replica of a group holds its own shard)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.layers.layer_norm_distributed")

from profcompare.emulator.popxl_addons.ops.layer_norm_distributed import layer_norm_distributed  # noqa: E402

__all__ = ["LayerNormDistributed"]


class LayerNormDistributed(Module):
    """Layer norm of ``(N, H / group_size)`` inputs whose hidden axis is sharded over the replicas
    of ``replica_grouping``."""

    def __init__(self, replica_grouping: Any = None) -> None:
        super().__init__()
        self.replica_grouping = replica_grouping

    def build(self, x: popxl.Tensor, eps: float = 1e-5) -> popxl.Tensor:
        """Return ``x`` normalised over the sharded hidden axis (see the module docstring)."""
        w = self.add_variable_input("weight", partial(np.ones, x.shape[-1]), x.dtype,
                                    replica_grouping=self.replica_grouping.transpose())
        b = self.add_variable_input("bias", partial(np.zeros, x.shape[-1]), x.dtype,
                                    replica_grouping=self.replica_grouping.transpose())
        return layer_norm_distributed(x, w, b, epsilon=eps, group=self.replica_grouping)
