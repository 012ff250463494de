"""``popxl.ops.utils``: the checks popxl's op builders (and custom ops' Python wrappers) run on
their inputs before creating an op."""

from __future__ import annotations

from ..graph import check_in_graph
from ..ipu_placement import UndefinedValue, tensor_ipu, tensor_tile_set
from ..tensor import Tensor

__all__ = ["check_in_graph", "check_tensor_ipu_and_tile_set"]


def check_tensor_ipu_and_tile_set(**tensors: Tensor) -> None:
    """ValueError unless every keyword tensor whose IPU is known (it has a producer or a
    consumer) is on the same IPU and the same tile set; tensors with no IPU yet are left out."""
    ipus: dict[str, int] = {}
    tile_sets: dict[str, str] = {}
    for name, t in tensors.items():
        try:
            ipus[name] = tensor_ipu(t)
        except UndefinedValue:
            continue
        tile_sets[name] = tensor_tile_set(t)
    if len(set(ipus.values())) > 1:
        raise ValueError(f"Not all tensors are located on the same IPU: {ipus}")
    if len(set(tile_sets.values())) > 1:
        raise ValueError(f"Not all tensors are located on the same tile set: {tile_sets}")
