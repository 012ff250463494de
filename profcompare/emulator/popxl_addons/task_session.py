"""popxl-addons ``task_session``: ``write_variables_pb`` (3.0 and 3.4). ``TaskSession`` is outside
the emulated subset.

popxl-addons hands the arrays to PopART (``writeWeights``: each array replaces the host copy of
the weight with that id; ids that are no weight of the session are ignored), then, when the
session is attached, sends *every* host copy to the device (``weightsFromHost``). The simulator
writes through ``Session.write_variables_data``, which does the same for variables whose host
layout is the device's. It refuses, naming the case, what it cannot reproduce: variables with
several replica groups (PopART takes the groups in host order, popxl's write reorders them),
and ``retrieval_mode="all_replicas"`` variables. As in PopART, a write while attached after runs
sends the host's (older) copies of the other variables to the device too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import not_supported, popxl

__all__ = ["write_variables_pb"]


def write_variables_pb(session: popxl.Session, weights: Mapping[popxl.Tensor, np.ndarray]) -> None:
    """Write ``weights`` (variable -> host array of its host shape and dtype) into ``session``'s
    host copies, and to the device when attached (see the module docstring for what is refused)."""
    variables: dict[Any, np.ndarray] = {}
    for tensor, data in weights.items():
        if not isinstance(tensor, popxl.Variable) or tensor.ir is not session.ir:
            continue  # PopART ignores ids that are no weight of the session
        if tensor.retrieval_mode == "all_replicas":
            raise not_supported("write_variables_pb", f"variable {tensor.id} with retrieval_mode='all_replicas'")
        if tensor.replica_grouping.num_groups > 1:
            raise not_supported("write_variables_pb", f"variable {tensor.id} with "
                                f"{tensor.replica_grouping.num_groups} replica groups")
        variables[tensor] = data
    if session.is_attached:
        # PopART replaces the host copies without reading the device first, then sends every host
        # copy: clearing the session's "device is newer" mark makes write_variables_data do the same
        session._host_stale = False
        session.write_variables_data(variables)
        session.weights_from_host()
    else:
        session.write_variables_data(variables)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise not_supported(f"task_session.{name}")
