"""Embedding: a table lookup, optionally sharded over the vocabulary."""

from __future__ import annotations

from functools import partial
from math import ceil
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.layers._init import truncated_normal
from profcompare.emulator.popxl_addons.module import Module

__all__ = ["Embedding", "MULTISLICE_MAGIC_NUMBER"]

#: the vocabulary shard is rounded up to a multiple of this (as popxl-addons does for multislice)
MULTISLICE_MAGIC_NUMBER = 16


class Embedding(Module):
    """``ops.gather`` of a ``(vocab shard, hidden_size)`` weight (truncated normal, scale 0.02)
    along ``axis``. With a ``replica_grouping`` of more than one group the vocabulary is
    sharded over the groups: indices must be offset per shard (``get_offsets``) and
    out-of-range indices give zeros."""

    def __init__(self, dtype: Any, vocab_size: int, hidden_size: int, axis: int = 0,
                 replica_grouping: Any = None) -> None:
        super().__init__()
        self.dtype = dtype
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.axis = axis
        self.replica_grouping = replica_grouping
        self.n_shards = replica_grouping.num_groups if replica_grouping else 1
        self.vocab_shard_size = self.get_vocab_shard_size(vocab_size, self.n_shards)
        self.offsets = self.get_offsets(vocab_size, self.n_shards)

    @staticmethod
    def get_vocab_shard_size(vocab_size: int, n_shards: int) -> int:
        """Return the rows per shard: ``ceil(vocab_size / n_shards)`` rounded up to a multiple of
        MULTISLICE_MAGIC_NUMBER."""
        per_shard = ceil(vocab_size / n_shards)
        return MULTISLICE_MAGIC_NUMBER * ceil(per_shard / MULTISLICE_MAGIC_NUMBER)

    @staticmethod
    def get_offsets(vocab_size: int, n_shards: int) -> np.ndarray:
        """Return the first vocabulary index of every shard."""
        size = Embedding.get_vocab_shard_size(vocab_size, n_shards)
        return np.arange(0, n_shards * size, size)

    def build(self, indices: popxl.Tensor) -> popxl.Tensor:
        self.weight = self.add_variable_input(
            "weight", partial(truncated_normal, (self.vocab_shard_size, self.hidden_size)), self.dtype,
            replica_grouping=self.replica_grouping)
        return ops.gather(self.weight, indices, axis=self.axis, zero_OOR=self.n_shards > 1)
