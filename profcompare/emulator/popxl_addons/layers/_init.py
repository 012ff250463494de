"""Shared pieces of the layers: the truncated-normal initialiser and torch weight conversion."""

from __future__ import annotations

from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl


def truncated_normal(size: tuple[int, ...], scale: float = 0.02, bound: float = 2.0) -> np.ndarray:
    """Return samples of N(0, scale^2) truncated to ``[-bound * scale, bound * scale]`` (the
    layers' weight initialiser; popxl-addons draws it with scipy's truncnorm, the emulator by
    resampling out-of-range draws with numpy's global generator)."""
    out = np.random.standard_normal(size)
    bad = np.abs(out) > bound
    while bad.any():
        out[bad] = np.random.standard_normal(int(bad.sum()))
        bad = np.abs(out) > bound
    return out * scale


def to_numpy(data: Any, dtype: Any = popxl.float32) -> np.ndarray:
    """Return torch tensors, numpy arrays or sequences as a numpy array of the popxl ``dtype``."""
    if hasattr(data, "detach"):
        data = data.detach().cpu().numpy()
    return np.asarray(data).astype(dtype.as_numpy())
