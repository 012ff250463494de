"""Tile mapping against worked examples of the PopLibs linear-mapping rules (facts 2.2)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.emulator.compile.mapping import (
    linear_split,
    mapping_offset,
    tile_bytes_matrix,
)


def test_30_float32_elements_fit_on_one_tile():
    # 15 grains of 2; the 128-byte minimum (32 floats) keeps all 30 elements on one tile
    split = linear_split(30, 4, 1472)
    assert (split.grain, split.num_grains, split.tiles_used) == (2, 15, 1)
    assert split.elements_per_tile().tolist() == [30]


def test_1000_float16_elements_use_15_tiles_of_at_least_128_bytes():
    # 250 grains of 4 halves; at least 64 halves (16 grains) per tile -> 15 tiles of 16-17 grains
    split = linear_split(1000, 2, 1472)
    assert (split.grain, split.num_grains, split.tiles_used) == (4, 250, 15)
    per_tile = split.elements_per_tile()
    assert sorted(set(per_tile.tolist())) == [64, 68]
    assert (per_tile == 68).sum() == 10 and (per_tile == 64).sum() == 5
    assert per_tile.sum() == 1000 and (per_tile * 2 >= 128).all()


def test_fc1_weight_401408_float32_over_1472_tiles():
    # 200,704 grains; ceil(200704/1472) = 137 grains per tile -> 1465 tiles, one with 136
    split = linear_split(401_408, 4, 1472)
    assert (split.num_grains, split.tiles_used) == (200_704, 1465)
    per_tile_bytes = split.elements_per_tile() * 4
    assert (per_tile_bytes == 1096).sum() == 1464
    assert (per_tile_bytes == 1088).sum() == 1
    assert per_tile_bytes.sum() == 401_408 * 4


def test_matrix_rotates_start_tile_by_stable_hash():
    off = mapping_offset((30,), "float32", 1472)
    assert off == mapping_offset((30,), "float32", 1472)  # stable across calls/processes (CRC-32)
    row = tile_bytes_matrix(np.array([30]), np.array([4]), np.array([off]), 1472)[0]
    assert row[off] == 120 and row.sum() == 120
    wrapped = tile_bytes_matrix(np.array([1000]), np.array([2]), np.array([1470]), 1472)[0]
    assert np.nonzero(wrapped)[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1470, 1471]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2_000_000), st.sampled_from([1, 2, 4]), st.integers(0, 1471), st.sampled_from([1216, 1472]))
def test_matrix_agrees_with_scalar_split(nelms, itemsize, offset, tiles):
    row = tile_bytes_matrix(np.array([nelms]), np.array([itemsize]), np.array([offset % tiles]), tiles)[0]
    split = linear_split(nelms, itemsize, tiles)
    assert row.sum() == nelms * itemsize
    assert int((row > 0).sum()) == split.tiles_used
    assert sorted(row[row > 0].tolist()) == sorted((split.elements_per_tile() * itemsize).tolist())
