"""seed_variable (``popxl_addons.seed_variable``, new after popxl-addons 3.0): a random seed
held in a remote variable with a replica grouping, plus the on-chip seed tensor loaded from it.

The on-chip tensor is filled from entry 0 of the variable's buffer by the WeightsFromHost
program and written back by WeightsToHost, like the shard of ``popxl.replica_sharded_variable``
(the emulator's popxl keeps such tensors in ``Ir._replica_shards``; popxl-addons reaches into
PopART's execution contexts for the same effect).
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import not_supported, popxl

__all__ = ["seed_variable"]


def seed_variable(seed: int, replica_grouping: Any = None) -> tuple[Any, Any]:
    """Return ``(variable, seed tensor)``: a ``random_seed`` uint32 (2,) remote variable with
    one seed per group of ``replica_grouping`` (default: every replica its own, group size 1)
    from ``popxl.create_seeds(seed, replicas=num_groups)``, and the main-graph tensor holding it
    on chip (pass it to random ops; use the variable with the Session's get/write methods)."""
    create_seeds = getattr(popxl, "create_seeds", None)
    if create_seeds is None:
        raise not_supported("seed_variable", "the emulator's popxl has no create_seeds")
    from profcompare.emulator.popxl.tensor import _ReplicaShard

    ir = popxl.gcg().ir
    grouping = replica_grouping or ir.replica_grouping(group_size=1)
    buffer = popxl.remote_buffer((2,), popxl.uint32)
    var = popxl.remote_variable(create_seeds(seed, replicas=grouping.num_groups), buffer,
                                replica_grouping=grouping, name="random_seed")
    main = ir.main_graph
    seed_t = _ReplicaShard._create(main, main._create_tensor_id("random_seed_h2d"), (2,), popxl.uint32, ())
    seed_t._full = var
    ir._replica_shards.append(seed_t)
    return var, seed_t
