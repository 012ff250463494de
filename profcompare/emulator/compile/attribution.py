"""Which model parameter every piece of tile memory and Streaming Memory belongs to, and as what.

Attribution on the simulator is exact: it follows the lowered program's provenance, never names.
One run of the main program is walked in schedule order (``LoweredProgram.schedule``), keeping
for every tensor *instance* -- a storage root (``ProgramSteps.alias_root``) under one call path,
as liveness counts them -- the model variables whose data it holds and in what form:

- a model variable (storage ``variable`` or ``remote``) holds itself; its base role follows its
  kind (``weight``, ``accumulator``, ``optimizer_state``, else ``other``);
- a called graph's input at a call site (``attrs["inputs"]``: graph input -> parent tensor)
  holds what the parent holds: a weight (or its shard / gathered copy) becomes a
  ``weight_copy``; anything else keeps its role. A graph output copies back to its parent;
- views and in-place outputs share their root's storage (one instance, nothing to trace);
- a RemoteLoad fills its placeholder with the variables stored at (buffer, entry) -- the entry
  from ``attrs["offset"]``, every variable of the buffer when the offset is computed at run
  time -- as ``remote_staging``;
- collectives: a ``local`` reduce-scatter (replica-sharded slice) of a weight is a ``shard``; a
  mean/sum reduction (all-reduce, reduce-scatter) of an accumulator or gradient is a
  ``gradient``; an all-gather of a shard is a ``gathered_weight``; otherwise the role is kept.

Which parameter a non-weight variable (optimizer state, accumulator) belongs to also follows the
data: the walk tracks, per instance, which non-weight variables' data went into it (through any
op, and into a tensor an op modifies in place). An op that modifies an instance holding a weight
is an *update* of that weight, and every non-weight variable whose data reached the update
belongs to that weight. A variable that reaches the updates of several weights (a gradient
accumulation counter shared by all of them) belongs to none: its parameter stays empty.

Tensors that hold no variable's data (activations, gradients computed by autodiff, an
optimizer's update term) take the parameter of the update they feed: an input of an update of
parameter P is P's (one hop), and so is whatever was copied into it (call inputs and outputs,
collectives), traced back. Everything else has an empty parameter and a role from its kind.
Op temporaries (``Storage.temp_rows``) are ``partials``, with the parameter of their op when
every tensor the op reads or writes belongs to that one parameter.

``which`` (first_order, second_order, step) comes from how the optimizer uses the state: the
accumulated input of AccumulateMovingAverage is the first moment, of
AccumulateMovingAverageSquare the second, the modified time-step input of AdamUpdater the step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from profcompare.emulator.compile.liveness import Instances
from profcompare.emulator.compile.memory import Storage
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram, OpInfo

Key = tuple[str, tuple[str, ...]]  # (storage root tensor id, call path)

#: base role of a model variable by its kind
_BASE_ROLE = {"weight": "weight", "accumulator": "accumulator", "optimizer_state": "optimizer_state"}
#: role of a tensor instance holding no variable's data, by its kind
_ROLE_OF_KIND = {
    "activation": "activation",
    "gradient": "gradient",
    "remote_staging": "remote_staging",
    "weight": "weight_copy",
    "optimizer_state": "optimizer_state",
    "accumulator": "accumulator",
}
_WEIGHT_LIKE = frozenset({"weight", "weight_copy", "shard", "gathered_weight"})
#: ops whose first input is an optimizer moment: type -> which
_MOMENT_OPS = {"AccumulateMovingAverage": "first_order", "AccumulateMovingAverageSquare": "second_order"}
_NO_TRACE_CLASSES = frozenset({"host_load", "host_store", "write_undef", "view"})


@dataclass(frozen=True)
class Attribution:
    """The parameter, role and which of one row (see :data:`profcompare.model.ROLES`)."""

    parameter: str = ""
    role: str = "other"
    which: str = ""


@dataclass
class _Trace:
    """What the walk learns (mutable while walking; read through :class:`Provenance`)."""

    holds: dict[Key, frozenset[str]] = field(default_factory=dict)  # variable ids held
    role: dict[Key, str] = field(default_factory=dict)
    taint: dict[Key, frozenset[str]] = field(default_factory=dict)  # non-weight variables whose data reached it
    owners: dict[str, set[str]] = field(default_factory=dict)  # non-weight variable -> weights it updates
    which: dict[str, str] = field(default_factory=dict)  # variable -> first_order | second_order | step
    feeds: dict[Key, set[str]] = field(default_factory=dict)  # instance -> variables whose update it feeds
    copies: list[tuple[Key, Key]] = field(default_factory=list)  # (source, destination) in schedule order
    op_keys: dict[tuple[str, tuple[str, ...]], tuple[Key, ...]] = field(default_factory=dict)
    buffer_stores: dict[int, set[str]] = field(default_factory=dict)  # buffer -> variables stored into it


@dataclass(frozen=True)
class Provenance:
    """The attribution of every tensor instance and remote buffer of one program."""

    program: LoweredProgram
    parameter_of_variable: Mapping[str, str]  # model variable id -> parameter name ("" if shared)
    instances: Mapping[Key, Attribution]
    buffers: Mapping[int, Attribution]
    op_parameter: Mapping[tuple[str, tuple[str, ...]], str]  # (op id, call path) -> parameter or ""

    def of_instance(self, root: str, path: tuple[str, ...]) -> Attribution:
        """The attribution of the tensor instance (storage root, call path)."""
        found = self.instances.get((root, path))
        if found is not None:
            return found
        info = self.program.tensors.get(root)
        return Attribution("", _ROLE_OF_KIND.get(info.kind, "other") if info is not None else "other", "")


def trace(program: LoweredProgram, steps: ProgramSteps) -> Provenance:
    """Walk one run of ``program`` and attribute every tensor instance and remote buffer.

    Returns a :class:`Provenance` (module docstring: the rules)."""
    root_map = steps.alias_root
    tensors = program.tensors
    variables = {t: info for t, info in tensors.items() if info.storage in ("variable", "remote")}
    weights = {t for t, info in variables.items() if info.kind == "weight"}
    by_entry: dict[tuple[int, int], set[str]] = {}
    by_buffer: dict[int, set[str]] = {}
    for t, info in variables.items():
        if info.remote_buffer is not None:
            by_buffer.setdefault(info.remote_buffer, set()).add(t)
            by_entry.setdefault((info.remote_buffer, info.remote_offset or 0), set()).add(t)
    tr = _Trace()
    for t, info in variables.items():
        key = (root_map.get(t, t), ())
        tr.holds[key] = frozenset({t})
        tr.role[key] = _BASE_ROLE.get(info.kind, "other")

    owner = {tid: info.graph for tid, info in tensors.items()}
    called = {op.id: str(op.attrs.get("called_graph")) for op in program.ops.values() if op.type == "Call"}
    main = program.main_graph

    def root(tid: str) -> str:
        return root_map.get(tid, tid)

    instances: dict[tuple[str, tuple[str, ...]], Key] = {}

    def instance(tid: str, path: tuple[str, ...]) -> Key:
        """The instance a tensor touched under ``path`` belongs to: its storage root under the
        call path of the graph owning that root (a zero-copy graph input is its caller's)."""
        hit = instances.get((tid, path))
        if hit is not None:
            return hit
        r = root(tid)
        graph = owner.get(r, main)
        found: Key = (r, path)
        if graph == main:
            found = (r, ())
        else:
            for depth in range(len(path), 0, -1):
                if called.get(path[depth - 1]) == graph:
                    found = (r, path[:depth])
                    break
        instances[(tid, path)] = found
        return found

    def contribution(key: Key) -> frozenset[str]:
        """The non-weight variables whose data an instance carries (weights carry none)."""
        held = tr.holds.get(key, frozenset())
        if held & weights:
            return frozenset()
        return held | tr.taint.get(key, frozenset())

    def copy(src: Key, dst: Key, role_change: str | None = None) -> None:
        if src == dst:
            return  # shared storage (a zero-copy input): nothing is copied
        if src in tr.holds:
            tr.holds[dst] = tr.holds[src]
            role = tr.role[src]
            if role_change == "call" and role in _WEIGHT_LIKE:
                role = "weight_copy"
            tr.role[dst] = role
        if src in tr.taint:
            tr.taint[dst] = tr.taint[src]
        tr.copies.append((src, dst))

    for entry in program.schedule:
        op = program.ops[entry.op]
        path = tuple(entry.call_path)
        klass = steps.op_class.get(op.id, "")
        tr.op_keys[(op.id, path)] = tuple(instance(t, path) for t in (*op.inputs, *op.outputs, *op.modified))
        if klass == "call":
            inner = path + (op.id,)
            if entry.phase == "exit":
                for g_out, parent in dict(op.attrs.get("outputs", {})).items():
                    copy(instance(g_out, inner), instance(parent, path))
                for g_in, parent in dict(op.attrs.get("inputs", {})).items():
                    if parent in op.modified:
                        src, dst = instance(g_in, inner), instance(parent, path)
                        added = tr.taint.get(src, frozenset())
                        if added:
                            tr.taint[dst] = tr.taint.get(dst, frozenset()) | added
                        tr.copies.append((src, dst))
            else:
                for g_in, parent in dict(op.attrs.get("inputs", {})).items():
                    copy(instance(parent, path), instance(g_in, inner), "call")
            continue
        if klass in _NO_TRACE_CLASSES:
            continue
        if klass == "remote_load":
            buffer = op.attrs.get("remote_buffer")
            offset = op.attrs.get("offset")
            if not isinstance(offset, int) and len(op.inputs) > 1:
                offset = _entry_from_call_site(program, op.inputs[1], path)
            held = by_entry.get((buffer, offset), set()) if isinstance(offset, int) else by_buffer.get(buffer, set())
            for out in op.outputs:
                key = instance(out, path)
                tr.holds[key] = frozenset(held)
                tr.role[key] = "remote_staging"
            continue
        if klass == "remote_store":
            if op.inputs:
                tr.buffer_stores.setdefault(op.attrs.get("remote_buffer"), set()).update(
                    tr.holds.get(instance(op.inputs[0], path), frozenset()))
            continue
        if klass == "collective":
            if op.inputs:
                _collective(op, path, instance, tr, copy)
            continue
        _compute(op, path, instance, tr, contribution, weights)

    return _resolve(program, tr, weights, variables)


def _entry_from_call_site(program: LoweredProgram, tid: str, path: tuple[str, ...]) -> int | None:
    """The value of the graph input ``tid`` when the calls on ``path`` (innermost last) pass it
    down from an integer constant: the entry a load graph called as ``load.call(3)`` reads."""
    for call_id in reversed(path):
        call = program.ops.get(call_id)
        if call is None:
            return None
        constants = call.attrs.get("constant_inputs") or {}
        if tid in constants:
            return int(constants[tid])
        parent = (call.attrs.get("inputs") or {}).get(tid)
        if parent is None:
            return None
        tid = parent
    return None


def _collective(op: OpInfo, path: tuple[str, ...], instance, tr: _Trace, copy) -> None:
    src = instance(op.inputs[0], path)
    for out in op.outputs:
        dst = instance(out, path)
        if dst == src:
            continue  # in place: the same storage keeps its role
        copy(src, dst)
        if dst not in tr.role:
            continue
        role = tr.role[dst]
        reduction = str(op.attrs.get("op", ""))
        if op.type.startswith("ReplicatedReduceScatter") and reduction == "local":
            tr.role[dst] = "shard" if role in _WEIGHT_LIKE else role
        elif "AllGather" in op.type:
            tr.role[dst] = "gathered_weight" if role in _WEIGHT_LIKE else role
        elif role in ("accumulator", "gradient"):
            tr.role[dst] = "gradient"


def _compute(op: OpInfo, path: tuple[str, ...], instance, tr: _Trace, contribution, weights: set[str]) -> None:
    """An op that computes: updates of weights, moments, taint of its outputs."""
    in_keys = [instance(t, path) for t in op.inputs]
    mod_keys = {instance(t, path) for t in op.modified}
    which = _MOMENT_OPS.get(op.type)
    if which and in_keys:
        for v in tr.holds.get(in_keys[0], ()):
            tr.which.setdefault(v, which)
    if op.type.startswith("AdamUpdater"):
        for key in mod_keys:
            for v in tr.holds.get(key, ()):
                tr.which.setdefault(v, "step")
    for key in mod_keys:
        held = tr.holds.get(key, frozenset())
        others = [k for k in in_keys if k != key]
        reached: set[str] = set()
        for k in others:
            reached |= contribution(k)
        updated = held & weights
        if updated:
            for v in reached:
                tr.owners.setdefault(v, set()).update(updated)
        elif reached:
            tr.taint[key] = tr.taint.get(key, frozenset()) | reached
        target = updated or held
        if target:
            for k in others:
                if not tr.holds.get(k):
                    tr.feeds.setdefault(k, set()).update(target)
    reached_all: set[str] = set()
    for k in in_keys:
        reached_all |= contribution(k)
    if reached_all:
        for out in op.outputs:
            key = instance(out, path)
            if key not in mod_keys and key not in tr.holds:
                tr.taint[key] = tr.taint.get(key, frozenset()) | reached_all


def _resolve(program: LoweredProgram, tr: _Trace, weights: set[str], variables: Mapping) -> Provenance:
    tensors = program.tensors
    parameter_of_variable: dict[str, str] = {}
    for v, info in variables.items():
        if v in weights:
            parameter_of_variable[v] = info.name
        else:
            owners = tr.owners.get(v, set())
            parameter_of_variable[v] = tensors[next(iter(owners))].name if len(owners) == 1 else ""
    # the full variable of popxl.replica_sharded_variable lives only in its buffer; the program
    # uses its on-chip shard, recorded with the same buffer and entry: the two are one parameter's
    for v, info in variables.items():
        if info.storage == "remote" and not parameter_of_variable[v]:
            shards = [s for s, si in variables.items() if si.storage == "variable" and si.remote_buffer is not None
                      and (si.remote_buffer, si.remote_offset) == (info.remote_buffer, info.remote_offset)]
            if len(shards) == 1:
                parameter_of_variable[v] = parameter_of_variable[shards[0]]

    def parameter_of(held: Iterable[str]) -> str:
        params = {parameter_of_variable.get(v, "") for v in held}
        return params.pop() if len(params) == 1 else ""

    # an instance holding nothing takes the parameter of the update it feeds, and so does
    # whatever was copied into it (traced back against the schedule)
    feeds: dict[Key, str] = {}
    for key, targets in tr.feeds.items():
        p = parameter_of(targets)
        if p:
            feeds[key] = p
    for src, dst in reversed(tr.copies):
        if src not in tr.holds and src not in feeds and dst in feeds:
            feeds[src] = feeds[dst]

    instances: dict[Key, Attribution] = {}
    for key in set(tr.holds) | set(feeds):
        held = tr.holds.get(key)
        info = tensors.get(key[0])
        kind = info.kind if info is not None else "other"
        if held:
            whiches = {tr.which.get(v, "") for v in held}
            which = whiches.pop() if len(whiches) == 1 else ""
            role = tr.role.get(key, "other")
            instances[key] = Attribution(parameter_of(held), role, which if _holds_state(held, variables) else "")
        else:
            role = _ROLE_OF_KIND.get(kind, "other")
            if role == "activation":
                role = "other"  # fed into an update: an optimizer's term, not an activation
            instances[key] = Attribution(feeds.get(key, ""), role, "")

    op_parameter: dict[tuple[str, tuple[str, ...]], str] = {}
    for op_key, keys in tr.op_keys.items():
        params = {instances[k].parameter if k in instances else "" for k in keys}
        op_parameter[op_key] = params.pop() if len(params) == 1 else ""

    buffers: dict[int, Attribution] = {}
    for buf in program.remote_buffers:
        held = ({v for v in buf.variables if v in variables}
                or {v for v, info in variables.items() if info.remote_buffer == buf.id}
                or tr.buffer_stores.get(buf.id, set()))
        roles = {_BASE_ROLE.get(variables[v].kind, "other") if v in variables else "other" for v in held}
        whiches = {tr.which.get(v, "") for v in held}
        buffers[buf.id] = Attribution(
            parameter_of(held) if held else "",
            roles.pop() if len(roles) == 1 else "other",
            whiches.pop() if len(whiches) == 1 and _holds_state(held, variables) else "",
        )
    return Provenance(program, parameter_of_variable, instances, buffers, op_parameter)


def _holds_state(held: Iterable[str], variables: Mapping) -> bool:
    return all(v in variables and variables[v].kind == "optimizer_state" for v in held)


def attribute_rows(provenance: Provenance, storage: Storage, inst: Instances) -> tuple[
        list[Attribution], list[Attribution]]:
    """The attribution of every storage row (as always-live, call path ``()``) and of every
    liveness instance (its row under its call path). Returns (per row, per instance)."""
    n_tensors = len(storage.row_of)
    temp_op: dict[int, str] = {}
    for op_id, pairs in storage.temp_rows.items():
        for row, _temp in pairs:
            temp_op[row] = op_id
    # rows after the tensors: op temporaries (partials), then loaded code (loaded_code.py: other)
    per_row = [provenance.of_instance(storage.ids[r], ()) if r < n_tensors
               else Attribution("", "partials" if r in temp_op else "other", "")
               for r in range(len(storage.ids))]
    paths = inst.path if len(inst.path) == len(inst.row) else ((),) * len(inst.row)
    per_instance: list[Attribution] = []
    for row, path in zip(inst.row.tolist(), paths):
        if row < n_tensors:
            per_instance.append(provenance.of_instance(storage.ids[row], tuple(path)))
        elif row in temp_op:
            op_id = temp_op[row]
            per_instance.append(Attribution(provenance.op_parameter.get((op_id, tuple(path)), ""), "partials", ""))
        else:
            per_instance.append(Attribution("", "other", ""))
    return per_row, per_instance


__all__ = ["Attribution", "Provenance", "attribute_rows", "trace"]
