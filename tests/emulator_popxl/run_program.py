"""Run a small popxl program on the simulator and read back what it returns (shared by the op tests)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def run(fn: Callable[..., popxl.Tensor | tuple | list], *values: np.ndarray, replicas: int = 1) -> list[np.ndarray]:
    """Build ``fn`` over variables holding ``values``, run once; every output it returns, as numpy."""
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        ys = fn(*[popxl.variable(v) for v in values])
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        streams = []
        for y in ys:
            s = popxl.d2h_stream(y.shape, y.dtype, "y")
            ops.host_store(s, y)
            streams.append(s)
    with popxl.Session(ir, "cpu" if replicas == 1 else "ipu_model") as session:
        out = session.run()
    return [out[s] for s in streams]
