"""NamedTensors: a DotTree of popxl tensors.

``.tensors`` is sorted by tensor *name* (not by key) and ``.named_tensors`` keeps insertion
order, as in popxl-addons; programs pair tensors of two collections through these orders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profcompare.emulator.popxl_addons.dot_tree import DotTree

TensorMap = Mapping[Any, Any]


class NamedTensorData(DotTree[Any]):
    """A DotTree whose leaves are host (numpy) arrays, e.g. variables' values by dotted name."""


class NamedTensors(DotTree[Any]):
    """A DotTree whose leaves are popxl tensors."""

    @property
    def tensors(self) -> tuple[Any, ...]:
        """Return the leaves as a tuple sorted by ``Tensor.name``."""
        return tuple(sorted(self.to_dict().values(), key=lambda t: t.name))

    @property
    def named_tensors(self) -> dict[str, Any]:
        """Return ``{dotted key: tensor}`` in insertion order."""
        return self.to_dict()

    def remap(self, mapping: TensorMap) -> NamedTensors:
        """Return a new NamedTensors with every leaf replaced by ``mapping[leaf]`` (same keys).
        Raises KeyError naming the first key whose tensor the mapping lacks."""
        out = {}
        for key, tensor in self.to_dict().items():
            if tensor not in mapping:
                raise KeyError(f"remap: no mapping for {key!r} ({tensor.name})")
            out[key] = mapping[tensor]
        return NamedTensors.from_dict(out)
