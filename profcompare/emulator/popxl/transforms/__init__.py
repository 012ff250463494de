"""popxl.transforms for the simulated subset: ``autodiff``, ``merge_exchange``, ``io_tile_exchange``
and ``decompose_sum``."""

from __future__ import annotations

from ..context import merge_exchange
from ..errors import module_getattr
from .autodiff import (
    ExpectedConnection,
    ExpectedConnectionType,
    GradGraphInfo,
    autodiff,
)
from .decompose_sum import decompose_sum
from .io_tile_exchange import io_tile_exchange

__getattr__ = module_getattr("popxl.transforms")

__all__ = ["ExpectedConnection", "ExpectedConnectionType", "GradGraphInfo", "autodiff", "decompose_sum",
           "io_tile_exchange", "merge_exchange"]
