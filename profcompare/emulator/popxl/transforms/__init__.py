"""popxl.transforms for the simulated subset: ``autodiff`` and ``merge_exchange``."""

from __future__ import annotations

from ..context import merge_exchange
from ..errors import module_getattr
from .autodiff import (
    ExpectedConnection,
    ExpectedConnectionType,
    GradGraphInfo,
    autodiff,
)

__getattr__ = module_getattr("popxl.transforms")

__all__ = ["ExpectedConnection", "ExpectedConnectionType", "GradGraphInfo", "autodiff", "merge_exchange"]
