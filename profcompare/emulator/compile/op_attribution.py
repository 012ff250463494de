"""Which parameter each op of the simulated program acts on, and what of it the op serves.

The simulator lowers every op itself, so the link is exact: it reads the attribution of the
tensor instances the op reads, writes and modifies (attribution.py's :class:`Provenance`), never
the op's name. Per op and call path:

- a RemoteLoad / RemoteStore serves what its remote buffer holds: (the buffer's parameter, the
  buffer's role) -- the load of fc1.weight's Adam state is (fc1.weight, optimizer_state);
- otherwise the parameters of the instances it touches decide: none -> the op moves no
  parameter's data (``activation``: activations, the loss, host streams); several -> ``shared``
  (a call of the whole model); one, P -> the op is P's, and its role is, in this order of
  precedence, the first that P's instances it touches have: ``optimizer_state``, ``accumulator``,
  ``gradient``, ``weight``, ``kv_cache``, else ``other``. An instance's form counts as what it
  holds: a weight copy, a gathered weight or a shard is ``weight``; remote staging is the role
  of the variables staged in it. So the moment updates and AdamUpdater of fc1.weight are
  (fc1.weight, optimizer_state), the ``scaled_add`` that applies the update to the weight is
  (fc1.weight, weight), the gradient accumulation (fc1.weight, accumulator), a forward matmul
  (its weight, weight), the backward matmul making a weight's gradient (that weight, gradient);
- collectives serve by what they do: a reduction (all-reduce, reduce-scatter of a sum or mean)
  of a parameter's accumulator or gradient is (P, gradient); an all-gather, or the local
  reduce-scatter that shards a weight, is (P, weight).

An op run under several call paths (a subgraph called per layer or per micro-batch) joins its
paths: one parameter -> that one (role by the precedence above); several -> their family
(``decoder.*.weight``, :func:`~profcompare.readers.parameter_names.family`) when they have one,
else ``shared``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from profcompare.emulator.compile.attribution import Attribution, Key, Provenance
from profcompare.emulator.program import LoweredProgram, OpInfo
from profcompare.readers.parameter_names import family

#: The roles an op may serve for its parameter, most specific first (the precedence above).
SERVED_ROLES: tuple[str, ...] = ("optimizer_state", "accumulator", "gradient", "weight", "kv_cache", "other")
#: ``role`` of an op moving no parameter's data, and of one moving several parameters' data.
NO_PARAMETER, SEVERAL_PARAMETERS = "activation", "shared"

#: what a tensor instance's role (ROLES) means for the op that touches it
_SERVED = {"weight": "weight", "weight_copy": "weight", "gathered_weight": "weight", "shard": "weight",
           "gradient": "gradient", "accumulator": "accumulator", "optimizer_state": "optimizer_state",
           "kv_cache": "kv_cache"}
_KIND_ROLE = {"weight": "weight", "accumulator": "accumulator", "optimizer_state": "optimizer_state",
              "kv_cache": "kv_cache"}


def first_role(roles: Iterable[str]) -> str:
    """The role of ``roles`` first in :data:`SERVED_ROLES` (``other`` when none is)."""
    present = set(roles)
    return next((r for r in SERVED_ROLES if r in present), "other")


def _served_role(key: Key, attribution: Attribution, provenance: Provenance) -> str:
    """What the instance ``key`` is, for an op touching it: its role's meaning, and for remote
    staging the role of the variables staged in it."""
    if attribution.role == "remote_staging":
        tensors = provenance.program.tensors
        held = provenance.held_ever.get(key, frozenset())
        return first_role(_KIND_ROLE.get(tensors[v].kind, "other") for v in held if v in tensors)
    return _SERVED.get(attribution.role, "other")


def _collective_role(op: OpInfo, roles: set[str]) -> str:
    """The role a collective serves on its parameter's data ``roles`` (module docstring)."""
    local = op.type.startswith("ReplicatedReduceScatter") and str(op.attrs.get("op", "")) == "local"
    if "AllGather" in op.type or local:
        return "weight" if "weight" in roles else first_role(roles)
    if roles & {"accumulator", "gradient"} and "optimizer_state" not in roles:
        return "gradient"
    return first_role(roles)


def _path_attribution(op: OpInfo, keys: Iterable[Key], op_class: str, provenance: Provenance) -> Attribution:
    """(parameter, role) of one op under one call path (module docstring)."""
    if op_class in ("remote_load", "remote_store"):
        buffer = provenance.buffers.get(op.attrs.get("remote_buffer"))  # type: ignore[arg-type]
        if buffer is not None and buffer.parameter:
            return Attribution(buffer.parameter, _SERVED.get(buffer.role, "other"))
    roles: dict[str, set[str]] = {}
    for key in keys:
        found = provenance.instances.get(key)
        if found is not None and found.parameter:
            roles.setdefault(found.parameter, set()).add(_served_role(key, found, provenance))
    if not roles:
        return Attribution("", NO_PARAMETER)
    if len(roles) > 1:
        return Attribution("", SEVERAL_PARAMETERS)
    parameter, its_roles = next(iter(roles.items()))
    role = _collective_role(op, its_roles) if op_class == "collective" else first_role(its_roles)
    return Attribution(parameter, role)


def _join_paths(found: list[Attribution]) -> Attribution:
    """One op's attribution over its call paths (module docstring)."""
    parameters = {a.parameter for a in found if a.parameter}
    if not parameters:
        several = any(a.role == SEVERAL_PARAMETERS for a in found)
        return Attribution("", SEVERAL_PARAMETERS if several else NO_PARAMETER)
    joined = next(iter(parameters)) if len(parameters) == 1 else family(sorted(parameters))
    if not joined:
        return Attribution("", SEVERAL_PARAMETERS)
    return Attribution(joined, first_role(a.role for a in found if a.parameter))


def op_attributions(program: LoweredProgram, provenance: Provenance,
                    op_class: Mapping[str, str]) -> dict[str, Attribution]:
    """Per op id of ``program`` that ran, its (parameter, role) (module docstring): ``role`` one
    of :data:`SERVED_ROLES` with a parameter, else :data:`NO_PARAMETER` or
    :data:`SEVERAL_PARAMETERS` (``which`` is always "")."""
    per_op: dict[str, list[Attribution]] = {}
    for (op_id, _path), keys in provenance.op_keys.items():
        op = program.ops.get(op_id)
        if op is None:
            continue
        per_op.setdefault(op_id, []).append(_path_attribution(op, keys, op_class.get(op_id, ""), provenance))
    return {op_id: _join_paths(found) for op_id, found in per_op.items()}


__all__ = ["NO_PARAMETER", "SERVED_ROLES", "SEVERAL_PARAMETERS", "first_role", "op_attributions"]
