"""Bytes per tile of every storage row, held once per distinct mapping.

A row's bytes per tile depend only on its element count, item size, start tile and region
(mapping.py, placement.py), and a large program has many rows but few distinct mappings: every
layer of a transformer repeats the same shapes. :class:`TileBytes` keeps one ``patterns`` row
(tiles wide) per distinct mapping and the pattern of each storage row, so its memory is
O(patterns x tiles + rows) instead of O(rows x tiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TileBytes:
    """Bytes per tile of ``len(pattern_of)`` rows: row ``r`` is ``patterns[pattern_of[r]]``."""

    patterns: np.ndarray  # (distinct mappings, tiles) int64
    pattern_of: np.ndarray  # (rows,) int64 index into patterns

    @classmethod
    def from_keys(cls, keys: np.ndarray, dense_of_unique: Any) -> TileBytes:
        """Build from one key row per storage row (equal keys = equal mapping):
        ``dense_of_unique(unique_keys, first_row_of_each)`` returns the (unique, tiles) matrix."""
        keys = np.asarray(keys, dtype=np.int64)
        if keys.ndim == 1:
            keys = keys.reshape(-1, 1)
        if not len(keys):
            patterns = dense_of_unique(keys, np.zeros(0, dtype=np.int64))
            return cls(np.asarray(patterns, dtype=np.int64), np.zeros(0, dtype=np.int64))
        uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        patterns = np.asarray(dense_of_unique(uniq, first), dtype=np.int64)
        return cls(patterns, np.asarray(inverse, dtype=np.int64).reshape(-1))

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> TileBytes:
        """Compress a dense (rows, tiles) matrix."""
        matrix = np.asarray(matrix, dtype=np.int64)
        if not len(matrix):
            return cls(matrix.reshape(0, matrix.shape[1] if matrix.ndim == 2 else 0), np.zeros(0, dtype=np.int64))
        patterns, inverse = np.unique(matrix, axis=0, return_inverse=True)
        return cls(patterns, np.asarray(inverse, dtype=np.int64).reshape(-1))

    @property
    def num_tiles(self) -> int:
        return int(self.patterns.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, tiles), as the dense matrix would have."""
        return (len(self.pattern_of), self.num_tiles)

    def __len__(self) -> int:
        return len(self.pattern_of)

    def __getitem__(self, rows: Any) -> np.ndarray:
        """Bytes per tile of one row (1-D) or of several (2-D, dense: keep selections small)."""
        return self.patterns[self.pattern_of[rows]]

    def row_sums(self) -> np.ndarray:
        """Bytes of each row summed over tiles (int64, one per row)."""
        return self.patterns.sum(axis=1)[self.pattern_of]

    def tiles_used(self) -> np.ndarray:
        """How many tiles hold some of each row (int64, one per row)."""
        return (self.patterns > 0).sum(axis=1)[self.pattern_of]

    def sum_rows(self, mask: np.ndarray) -> np.ndarray:
        """Sum over the rows selected by ``mask`` (bool per row), per tile (int64, one per tile)."""
        counts = np.bincount(self.pattern_of[np.asarray(mask, dtype=bool)], minlength=len(self.patterns))
        out = np.zeros(self.num_tiles, dtype=np.int64)
        for p in np.nonzero(counts)[0]:
            out += int(counts[p]) * self.patterns[p]
        return out

    def append(self, rows: np.ndarray) -> TileBytes:
        """These rows followed by the dense ``rows`` (each its own pattern)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, self.num_tiles)
        start = len(self.patterns)
        return TileBytes(np.concatenate([self.patterns, rows]),
                         np.concatenate([self.pattern_of, np.arange(start, start + len(rows), dtype=np.int64)]))

    def dense(self) -> np.ndarray:
        """The (rows, tiles) matrix (for tests and small programs only)."""
        return self.patterns[self.pattern_of]


__all__ = ["TileBytes"]
