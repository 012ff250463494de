"""Tensor-to-tile mapping, following PopLibs' linear mapping (shared/reference/ipu_facts.md 2.2).

``poputil::mapTensorLinearly`` splits the flattened tensor into grains of the device's vector
width (2 x fp32 or 4 x fp16 on a 64-bit datapath), with at least 128 bytes per tile, and hands
grain ranges to consecutive tiles (``splitRegionsAux``):

    numGrains   = ceil(N / grain)
    perTile     = ceil(numGrains / numTiles)
    minGrains   = ceil(ceil(128 / itemsize) / grain)
    perTile     = max(perTile, ceil(numGrains / max(1, numGrains // minGrains)))
    tilesUsed   = ceil(numGrains / perTile)
    tile i gets grains [i*numGrains // tilesUsed, (i+1)*numGrains // tilesUsed)

The start tile is then rotated: by a stable hash of the tensor's shape and type, like PopLibs'
``chooseMappingOffset``, or where PopART's LinearMapper or a clone's source puts it
(start_tiles.py), so that many small tensors do not all land on tile 0. The model maps
every tensor this way, including matmul operands (which the real planner lays out itself).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinearSplit:
    """How one tensor is split by the linear mapping (before rotation)."""

    nelms: int
    grain: int
    num_grains: int
    tiles_used: int

    def elements_per_tile(self) -> np.ndarray:
        """Elements on each used tile, in tile order starting at the (unrotated) first tile."""
        i = np.arange(self.tiles_used, dtype=np.int64)
        begin = i * self.num_grains // self.tiles_used
        end = (i + 1) * self.num_grains // self.tiles_used
        return np.minimum(end * self.grain, self.nelms) - begin * self.grain


def grain_size(itemsize: int, datapath_bytes: int = 8) -> int:
    """The vector width in elements for an element of ``itemsize`` bytes (facts 2.2)."""
    return max(1, datapath_bytes // max(1, itemsize))


def linear_split(nelms: int, itemsize: int, num_tiles: int, *, datapath_bytes: int = 8,
                 min_bytes_per_tile: int = 128) -> LinearSplit:
    """The PopLibs linear split of ``nelms`` elements of ``itemsize`` bytes over ``num_tiles``.

    Returns a :class:`LinearSplit` (grain, number of grains, tiles used).
    """
    grain = grain_size(itemsize, datapath_bytes)
    if nelms <= 0:
        return LinearSplit(0, grain, 0, 0)
    num_grains = -(-nelms // grain)
    per_tile = -(-num_grains // num_tiles)
    min_elements = -(-min_bytes_per_tile // itemsize)
    min_grains = -(-min_elements // grain)
    max_partitions = max(1, num_grains // min_grains)
    per_tile = max(per_tile, -(-num_grains // max_partitions))
    return LinearSplit(nelms, grain, num_grains, -(-num_grains // per_tile))


def mapping_offset(shape: Sequence[int], dtype: str, num_tiles: int) -> int:
    """Stable start tile for a tensor of ``shape`` and ``dtype`` (a CRC-32 of both, mod tiles)."""
    key = f"{tuple(int(d) for d in shape)}|{dtype}".encode()
    return zlib.crc32(key) % num_tiles


def tile_bytes_matrix(nelms: np.ndarray, itemsize: np.ndarray, offsets: np.ndarray, num_tiles: int, *,
                      datapath_bytes: int = 8, min_bytes_per_tile: int = 128) -> np.ndarray:
    """Bytes per tile of many tensors at once.

    Returns an int64 array of shape (len(nelms), num_tiles): row k holds the bytes tensor k
    places on each tile under the rotated linear mapping. Vectorised over tensors and tiles;
    identical (nelms, itemsize, offset) rows are computed once.
    """
    nelms = np.asarray(nelms, dtype=np.int64)
    itemsize = np.asarray(itemsize, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64) % num_tiles
    n = len(nelms)
    if n == 0:
        return np.zeros((0, num_tiles), dtype=np.int64)
    keys = np.stack([nelms, itemsize, offsets], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    rows = _unique_rows(uniq[:, 0], uniq[:, 1], uniq[:, 2], num_tiles, datapath_bytes, min_bytes_per_tile)
    return rows[np.asarray(inverse).reshape(-1)]


def _unique_rows(nelms: np.ndarray, itemsize: np.ndarray, offsets: np.ndarray, num_tiles: int,
                 datapath_bytes: int, min_bytes_per_tile: int) -> np.ndarray:
    n = len(nelms)
    grain = np.maximum(1, datapath_bytes // np.maximum(1, itemsize))
    safe_n = np.maximum(nelms, 1)
    num_grains = -(-safe_n // grain)
    per_tile = -(-num_grains // num_tiles)
    min_elements = -(-min_bytes_per_tile // itemsize)
    min_grains = -(-min_elements // grain)
    max_partitions = np.maximum(1, num_grains // min_grains)
    per_tile = np.maximum(per_tile, -(-num_grains // max_partitions))
    used = -(-num_grains // per_tile)
    i = np.arange(num_tiles + 1, dtype=np.int64)[None, :]
    # first grain of each tile; tiles at or beyond `used` all start at num_grains
    begin = np.minimum(i, used[:, None]) * num_grains[:, None] // used[:, None]
    elements = np.diff(begin, axis=1) * grain[:, None]
    # the last used tile holds the partial grain, if any
    last = used - 1
    r = np.arange(n)
    elements[r, last] -= num_grains * grain - safe_n
    elements[nelms <= 0] = 0
    elements *= itemsize[:, None]
    j = np.arange(num_tiles, dtype=np.int64)[None, :]
    src = (j - offsets[:, None]) % num_tiles
    return np.take_along_axis(elements, src, axis=1)
