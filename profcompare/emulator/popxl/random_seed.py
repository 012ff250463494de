"""popxl.create_seeds: host-side seed values for the random ops' uint32 (2,) seed tensors.

This is host numpy, so the values are the real popxl's: 64-bit draws of
``numpy.random.default_rng(seed + offset)`` (the whole uint64 range), each split into its high
and low 32-bit words.
"""

from __future__ import annotations

import numpy as np


def create_seeds(seed: int, offset: int = 0, batches_per_step: int = 1, gradient_accumulation_factor: int = 1,
                 replicas: int = 1) -> np.ndarray:
    """uint32 seed pairs shaped (batches_per_step, gradient_accumulation_factor, replicas, 2)
    with the axes of size 1 squeezed away (a single seed is shape (2,))."""
    count = batches_per_step * gradient_accumulation_factor * replicas
    draws = np.random.default_rng(seed + offset).integers(0, np.iinfo(np.uint64).max, endpoint=True,
                                                          dtype=np.uint64, size=count)
    words = np.stack([draws >> np.uint64(32), draws & np.uint64(0xFFFFFFFF)], axis=-1).astype(np.uint32)
    return np.squeeze(words.reshape(batches_per_step, gradient_accumulation_factor, replicas, 2))


__all__ = ["create_seeds"]
