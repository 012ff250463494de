"""Which model parameter every piece of tile memory and Streaming Memory belongs to, and as what.

Attribution on the simulator is exact: it follows the lowered program's provenance, never names.
One run of the main program is walked in schedule order (``LoweredProgram.schedule``), keeping
for every tensor *instance* -- a storage root (``ProgramSteps.alias_root``) under one call path,
as liveness counts them -- the model variables whose data it holds and in what form:

- a model variable (storage ``variable`` or ``remote``) holds itself; its base role follows its
  kind (``weight``, ``accumulator``, ``optimizer_state``, ``kv_cache``, else ``other``); a weight
  and a key/value cache are parameters of their own;
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
collectives), traced back. Beyond one hop the data's *destinations* decide: every op records
where each input's data goes (its outputs and the tensors it modifies, a copy's destination, the
remote buffer entry a RemoteStore writes -- every entry when the offset is computed at run time --
and the host for a HostStore). Walking these edges backwards from what is known (an instance
holding variables is their parameter's, a buffer entry the parameter of its variables, the host
and a buffer of no variable nobody's), a tensor whose destinations all lead to one parameter P
is P's: a weight's gradient accumulated into an accumulator made by ``ops.init`` and stored into
P's gradient buffer, or reduce-scattered and fed to P's optimizer, is P's gradient; an activation
(or data loaded from a buffer of no variable) is P's only when its data gets there other than
through a gradient (an optimizer's term, a stored gradient loaded for the update; not the forward
activations a gradient is computed from). Destinations
leading to different parameters (an activation's gradient feeding a weight's gradient and the
layer below) make it nobody's. A scalar an op makes from a larger input (a norm, a loss) is no
destination of that input: its data does not go there, a summary of it does (so the global-norm
sum of squares every gradient feeds does not make gradients nobody's). Everything else has an empty parameter and a role from its kind.

Parameters of repeated layers: a remote buffer with one entry per layer is read at an offset
computed at run time -- the layer index, an ``ops.repeat``'s loop counter, which the walk follows
through constants, call inputs, ``n + 1`` / ``n - 1`` and the loop-carried copies between
iterations. Each iteration's staged tensor (its own liveness instance) holds that iteration's
layer and is attributed to it (:attr:`Provenance.by_step`); what the body computes is one tensor
of its graph for every layer, and it, a buffer of several layers, and whatever holds several
layers' data belong to the *family* of their parameters: the names with the components in which
they differ -- only integers, such as the layer index -- replaced by ``*``
(``decoder.*.attention.qkv.weight``). Parameters differing otherwise have no family: the
parameter stays empty.
Op temporaries (``Storage.temp_rows``) are ``partials``, with the parameter of their op when
every tensor the op reads or writes belongs to that one parameter.

``which`` (first_order, second_order, step) comes from how the optimizer uses the state: the
accumulated input of AccumulateMovingAverage is the first moment, of
AccumulateMovingAverageSquare the second, the modified time-step input of AdamUpdater the step.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from profcompare.emulator.compile.liveness import Instances
from profcompare.emulator.compile.memory import Storage
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram, OpInfo
from profcompare.readers.parameter_names import family

Key = tuple[str, tuple[str, ...]]  # (storage root tensor id, call path)

#: base role of a model variable by its kind
_BASE_ROLE = {"weight": "weight", "accumulator": "accumulator", "optimizer_state": "optimizer_state",
              "kv_cache": "kv_cache"}
#: role of a tensor instance holding no variable's data, by its kind
_ROLE_OF_KIND = {
    "activation": "activation",
    "gradient": "gradient",
    "remote_staging": "remote_staging",
    "weight": "weight_copy",
    "optimizer_state": "optimizer_state",
    "accumulator": "accumulator",
    "kv_cache": "kv_cache",
}
_WEIGHT_LIKE = frozenset({"weight", "weight_copy", "shard", "gathered_weight"})
#: ops whose first input is an optimizer moment: type -> which
_MOMENT_OPS = {"AccumulateMovingAverage": "first_order", "AccumulateMovingAverageSquare": "second_order"}
#: ops accumulating their second input into their first (modified) input
_ACCUMULATE_OPS = frozenset({"Accumulate", "AccumulateSquare", "AccumulateMean", "SparseAccumulate"})
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

    holds: dict[Key, frozenset[str]] = field(default_factory=dict)  # variable ids held now (this iteration)
    held_ever: dict[Key, frozenset[str]] = field(default_factory=dict)  # ... over the whole run
    timeline: dict[Key, list[tuple[int, frozenset[str]]]] = field(default_factory=dict)  # (step, held)
    now: int = 0  # the executed step the walk is at
    ints: dict[Key, int] = field(default_factory=dict)  # integer scalars known now (loop counters)
    role: dict[Key, str] = field(default_factory=dict)
    taint: dict[Key, frozenset[str]] = field(default_factory=dict)  # non-weight variables whose data reached it
    owners: dict[str, set[str]] = field(default_factory=dict)  # non-weight variable -> weights it updates
    which: dict[str, str] = field(default_factory=dict)  # variable -> first_order | second_order | step
    feeds: dict[Key, set[str]] = field(default_factory=dict)  # instance -> variables whose update it feeds
    copies: list[tuple[Key, Key]] = field(default_factory=list)  # (source, destination) in schedule order
    op_keys: dict[tuple[str, tuple[str, ...]], tuple[Key, ...]] = field(default_factory=dict)
    buffer_stores: dict[int, set[str]] = field(default_factory=dict)  # buffer -> variables stored into it
    flows: dict[Key, set[Key]] = field(default_factory=dict)  # instance -> instances its data goes to
    store_sinks: dict[Key, set[tuple[int, int | None]]] = field(default_factory=dict)  # -> (buffer, entry)
    stored_roles: dict[int, set[str]] = field(default_factory=dict)  # buffer of no variable -> roles stored
    data_role: dict[Key, str] = field(default_factory=dict)  # role of data held by no variable (accumulators)
    host_sinks: set[Key] = field(default_factory=set)  # instances streamed to the host
    hubs: set[Key] = field(default_factory=set)  # every-entry hubs made (_every_entry_hub)


@dataclass(frozen=True)
class Provenance:
    """The attribution of every tensor instance and remote buffer of one program."""

    program: LoweredProgram
    parameter_of_variable: Mapping[str, str]  # model variable id -> parameter name ("" if shared)
    instances: Mapping[Key, Attribution]
    buffers: Mapping[int, Attribution]
    op_parameter: Mapping[tuple[str, tuple[str, ...]], str]  # (op id, call path) -> parameter or ""
    #: instances holding different variables over the run (a repeat's body, one layer per
    #: iteration): the executed steps at which they came to hold them, and the attribution then
    by_step: Mapping[Key, tuple[tuple[int, ...], tuple[Attribution, ...]]] = field(default_factory=dict)
    #: the instances each (op id, call path) reads, writes and modifies (op_attribution.py)
    op_keys: Mapping[tuple[str, tuple[str, ...]], tuple[Key, ...]] = field(default_factory=dict)
    #: the model variables each instance held at some point of the run
    held_ever: Mapping[Key, frozenset[str]] = field(default_factory=dict)

    def of_instance(self, root: str, path: tuple[str, ...], last_step: int | None = None) -> Attribution:
        """The attribution of the tensor instance (storage root, call path); with ``last_step``
        (the last executed step it is live), what it held by then -- one iteration's layer of a
        repeated body rather than the layers' family."""
        timeline = self.by_step.get((root, path)) if last_step is not None else None
        if timeline is not None:
            at = bisect.bisect_right(timeline[0], int(last_step)) - 1
            if at >= 0:
                return timeline[1][at]
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
    entries = {buf.id: max(int(buf.entries), 1) for buf in program.remote_buffers}
    plain_buffers = {b for b in entries if b not in by_buffer
                     and not any(v in variables for v in _buffer_info(program, b).variables)}
    tr = _Trace()
    for t, info in variables.items():
        key = (root_map.get(t, t), ())
        tr.holds[key] = tr.held_ever[key] = frozenset({t})
        tr.role[key] = _BASE_ROLE.get(info.kind, "other")
    origins = set(tr.holds)

    def hold(key: Key, held: frozenset[str] | None) -> None:
        """``key`` holds ``held`` from now on (None: no variable's data; a variable's own storage
        keeps its variable)."""
        if not held:
            if key not in origins:
                tr.holds.pop(key, None)
            return
        tr.holds[key] = held
        tr.held_ever[key] = tr.held_ever.get(key, frozenset()) | held
        tr.timeline.setdefault(key, []).append((tr.now, held))

    owner = {tid: info.graph for tid, info in tensors.items()}
    called = {op.id: str(op.attrs.get("called_graph")) for op in program.ops.values() if op.type == "Call"}
    main = program.main_graph

    def root(tid: str) -> str:
        return root_map.get(tid, tid)

    # per call path, tensor -> its instance (keyed by path first: a path is hashed once per op)
    instances: dict[tuple[str, ...], dict[str, Key]] = {}

    def find_instance(tid: str, path: tuple[str, ...]) -> Key:
        """The instance a tensor touched under ``path`` belongs to: its storage root under the
        call path of the graph owning that root (a zero-copy graph input is its caller's)."""
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
        return found

    def cache_of(path: tuple[str, ...]) -> dict[str, Key]:
        cache = instances.get(path)
        if cache is None:
            cache = instances[path] = {}
        return cache

    def instance(tid: str, path: tuple[str, ...]) -> Key:
        cache = cache_of(path)
        hit = cache.get(tid)
        if hit is None:
            hit = cache[tid] = find_instance(tid, path)
        return hit

    def keys_of(tids: Iterable[str], path: tuple[str, ...], cache: dict[str, Key]) -> list[Key]:
        found = []
        for tid in tids:
            hit = cache.get(tid)
            if hit is None:
                hit = cache[tid] = find_instance(tid, path)
            found.append(hit)
        return found

    sizes: dict[str, int] = {}  # storage root -> elements per replica (0: not a tensor)

    def size_of(tid: str) -> int:
        found = sizes.get(tid)
        if found is None:
            info = tensors.get(tid)
            found = sizes[tid] = info.nelms if info is not None else 0
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
        hold(dst, tr.holds.get(src))
        if src in tr.holds:
            role = tr.role[src]
            if role_change == "call" and role in _WEIGHT_LIKE:
                role = "weight_copy"
            tr.role[dst] = role
        if src in tr.taint:
            tr.taint[dst] = tr.taint[src]
        else:
            tr.taint.pop(dst, None)
        if src in tr.data_role:
            tr.data_role[dst] = tr.data_role[src]
        else:
            tr.data_role.pop(dst, None)
        tr.copies.append((src, dst))
        tr.flows.setdefault(src, set()).add(dst)

    range_starts = steps.exec_ranges[:, 0].tolist()  # Python ints: read once per schedule entry
    for index, entry in enumerate(program.schedule):
        if index < len(range_starts):
            tr.now = range_starts[index]
        op = program.ops[entry.op]
        path = tuple(entry.call_path)
        klass = steps.op_class.get(op.id, "")
        cache = cache_of(path)
        in_keys = keys_of(op.inputs, path, cache)
        out_keys = keys_of(op.outputs, path, cache)
        mod_keys = keys_of(op.modified, path, cache)
        tr.op_keys[(op.id, path)] = (*in_keys, *out_keys, *mod_keys)
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
                        if src != dst:
                            tr.flows.setdefault(src, set()).add(dst)
            else:
                for g_in, parent in dict(op.attrs.get("inputs", {})).items():
                    copy(instance(parent, path), instance(g_in, inner), "call")
                _pass_integers(op, entry.phase, path, inner, instance, tr)
            continue
        if klass == "host_store":
            tr.host_sinks.update(instance(t, path) for t in op.inputs)
            continue
        if klass in _NO_TRACE_CLASSES:
            continue
        if klass == "remote_load":
            buffer = op.attrs.get("remote_buffer")
            offset = _offset(op, path, instance, tr)
            held = by_entry.get((buffer, offset), set()) if offset is not None else by_buffer.get(buffer, set())
            for out in op.outputs:
                key = instance(out, path)
                hold(key, frozenset(held))
                tr.role[key] = "remote_staging"
                if buffer in plain_buffers:  # the data comes from the entry, whatever it is
                    if offset is None:  # every entry's data: through the buffer's loading hub
                        tr.flows.setdefault(_every_entry_hub(buffer, "loaded", entries, tr), set()).add(key)
                    else:
                        tr.flows.setdefault(_entry_nodes(buffer, offset, entries)[0], set()).add(key)
            continue
        if klass == "remote_store":
            if op.inputs:
                buffer = op.attrs.get("remote_buffer")
                source = instance(op.inputs[0], path)
                tr.buffer_stores.setdefault(buffer, set()).update(tr.holds.get(source, frozenset()))
                offset = _offset(op, path, instance, tr)
                if buffer in plain_buffers:  # the entry's data is what goes on from it
                    node = (_every_entry_hub(buffer, "stored", entries, tr) if offset is None
                            else _entry_nodes(buffer, offset, entries)[0])
                    tr.flows.setdefault(source, set()).add(node)
                    tr.stored_roles.setdefault(buffer, set()).add(_data_role(source, tr, tensors))
                else:
                    tr.store_sinks.setdefault(source, set()).add((buffer, offset))
            continue
        if klass == "collective":
            if op.inputs:
                _collective(op, path, instance, tr, copy)
            continue
        _compute(op, in_keys, out_keys, mod_keys, tr, contribution, weights)
        _record_flows(in_keys, out_keys, mod_keys, tr, size_of)
        _integer_arithmetic(op, in_keys, out_keys, mod_keys, tr)

    return _resolve(program, tr, weights, variables, by_entry, by_buffer)


def _buffer_info(program: LoweredProgram, buffer: int):
    return next(b for b in program.remote_buffers if b.id == buffer)


def _entry_nodes(buffer: int, entry: int | None, entries: Mapping[int, int]) -> tuple[Key, ...]:
    """The flow-graph nodes of a remote buffer's entries (every entry when ``entry`` is None)."""
    return _entry_node_keys(buffer, entry, entries.get(buffer, 1))


def _every_entry_hub(buffer: int, how: str, entries: Mapping[int, int], tr: _Trace) -> Key:
    """The flow-graph node standing for every entry of a buffer at once, for a load or store at an
    offset not known (``how``: "loaded" or "stored"). Its edges to (stored) or from (loaded) each
    entry's node are made once, so a transfer of a repeated layer adds one edge, not one per entry;
    the destinations it leads to are those of every entry (the propagation joins through it)."""
    hub: Key = (f"\x00buffer {buffer} every entry {how}", ())
    if hub not in tr.hubs:
        tr.hubs.add(hub)
        nodes = _entry_nodes(buffer, None, entries)
        if how == "stored":
            tr.flows.setdefault(hub, set()).update(nodes)
        else:
            for node in nodes:
                tr.flows.setdefault(node, set()).add(hub)
    return hub


@functools.lru_cache(maxsize=64)
def _entry_node_keys(buffer: int, entry: int | None, count: int) -> tuple[Key, ...]:
    """The nodes of :func:`_entry_nodes`, made once per buffer: a repeated layer loads and stores
    every entry of the same buffer again and again."""
    which = range(count) if entry is None else (entry,)
    return tuple((f"\x00buffer {buffer} entry {e}", ()) for e in which)


def _offset(op: OpInfo, path: tuple[str, ...], instance, tr: _Trace) -> int | None:
    """The buffer entry a remote load or store transfers: its constant offset, or the integer
    its offset tensor holds now (a constant passed down calls, a repeat's loop counter); None
    when not known (every entry)."""
    offset = op.attrs.get("offset")
    if isinstance(offset, int):
        return offset
    if len(op.inputs) > 1:
        return tr.ints.get(instance(op.inputs[1], path))
    return None


def _pass_integers(op: OpInfo, phase: str, path: tuple[str, ...], inner: tuple[str, ...], instance,
                   tr: _Trace) -> None:
    """Integer scalars entering a called graph: constants and known values passed to its inputs
    (``load.call(3)``, a layer index); between two iterations of a repeat, each loop-carried
    output's value becomes its input's."""
    if phase == "iterate":
        values = {g_in: tr.ints.get(instance(g_out, inner)) for g_out, g_in in op.attrs.get("loop_carried") or ()}
    else:
        constants = op.attrs.get("constant_inputs") or {}
        values = {g_in: int(constants[g_in]) if g_in in constants else tr.ints.get(instance(parent, path))
                  for g_in, parent in dict(op.attrs.get("inputs", {})).items()}
    for g_in, value in values.items():
        key = instance(g_in, inner)
        if value is None:
            tr.ints.pop(key, None)
        else:
            tr.ints[key] = value


def _integer_arithmetic(op: OpInfo, in_keys: list[Key], out_keys: list[Key], mod_keys: list[Key],
                        tr: _Trace) -> None:
    """The integer an Add / Sub of known integer scalars makes (a loop counter's ``n + 1``);
    any other op's outputs hold no known integer. ``*_keys``: the instances of the op's inputs,
    outputs and modified tensors."""
    value = None
    if op.type in ("Add", "Sub", "AddLhsInplace") and len(op.inputs) == 2:
        constants = op.attrs.get("constant_inputs") or {}
        a, b = (int(constants[t]) if t in constants else tr.ints.get(k) for t, k in zip(op.inputs, in_keys))
        if a is not None and b is not None:
            value = a - b if op.type == "Sub" else a + b
    ints = tr.ints
    if value is None:
        if ints:
            for key in (*out_keys, *mod_keys):
                ints.pop(key, None)
        return
    for key in (*out_keys, *mod_keys):
        ints[key] = value


def _collective(op: OpInfo, path: tuple[str, ...], instance, tr: _Trace, copy) -> None:
    src = instance(op.inputs[0], path)
    for out in op.outputs:
        dst = instance(out, path)
        if dst == src:
            continue  # in place: the same storage keeps its role
        copy(src, dst)
        reducing = "AllGather" not in op.type and not (
            op.type.startswith("ReplicatedReduceScatter") and str(op.attrs.get("op", "")) == "local")
        if reducing and tr.data_role.get(dst) == "accumulator":
            tr.data_role[dst] = "gradient"  # the reduced sum of an accumulator
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


def _compute(op: OpInfo, in_keys: list[Key], out_keys: list[Key], modified: list[Key], tr: _Trace, contribution,
             weights: set[str]) -> None:
    """An op that computes: updates of weights, moments, taint of its outputs (``*_keys``,
    ``modified``: the instances of its inputs, outputs and modified tensors)."""
    mod_keys = set(modified)
    if op.type in _ACCUMULATE_OPS and in_keys and in_keys[0] in mod_keys and not tr.holds.get(in_keys[0]):
        tr.data_role[in_keys[0]] = "accumulator"  # a tensor of no variable (ops.init) accumulating
    for key in out_keys:
        if key not in mod_keys:
            tr.data_role.pop(key, None)
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
    for key in out_keys:
        if key not in mod_keys and key not in tr.holds:
            # a new value (the previous iteration's taint is overwritten)
            if reached_all:
                tr.taint[key] = frozenset(reached_all)
            else:
                tr.taint.pop(key, None)


def _record_flows(in_keys: list[Key], out_keys: list[Key], mod_keys: list[Key], tr: _Trace, size_of) -> None:
    """Where the data of each input of a computing op goes: its outputs and the tensors it
    modifies, except a scalar made from a larger input (a norm, a loss: a summary of the data
    goes there, not the data). ``*_keys``: the instances of the op's inputs, outputs and
    modified tensors; ``size_of``: elements of a storage root (0 when unknown)."""
    destinations = {*out_keys, *mod_keys}
    if not destinations:
        return
    scalars = {dst for dst in destinations if size_of(dst[0]) == 1}
    for src in in_keys:
        wanted = destinations - scalars if scalars and size_of(src[0]) > 1 else destinations
        if src in wanted:
            wanted = wanted - {src}
        if wanted:
            found = tr.flows.get(src)
            if found is None:
                tr.flows[src] = set(wanted)
            else:
                found.update(wanted)


#: the destination of nobody's data (the host, a buffer holding no variable)
_NOBODY = ""


def _propagate_destinations(tr: _Trace, known: Mapping[Key, str], sinks: Mapping[Key, str],
                            skip: frozenset[Key] = frozenset()) -> dict[Key, str]:
    """The parameter every instance's data goes to, backwards along ``tr.flows`` from ``known``
    (instances whose parameter is settled, "" = nobody's) and ``sinks`` (an instance's other
    destinations: a buffer entry, the host). Returns instance -> parameter ("" = destinations of
    different parameters, or nobody's) for the instances reached; a worklist, each value changes
    at most twice (unknown -> P -> nobody's). Destinations in ``skip`` are left out."""
    flows = {src: {d for d in dsts if d not in skip} for src, dsts in tr.flows.items()} if skip else tr.flows
    sources: dict[Key, set[Key]] = {}
    for src, dsts in flows.items():
        for dst in dsts:
            sources.setdefault(dst, set()).add(src)
    # The values form a flat lattice (unknown < a parameter < nobody's) and an instance's value is
    # the join of its sink's and its destinations': pushing each value change to the sources once
    # (each changes at most twice) reaches the same fixed point as re-joining every destination of
    # an instance whenever one changes, without walking a wide instance's destinations again.
    value: dict[Key, str] = {}
    queue: list[Key] = []
    for key, sink in sinks.items():
        if key not in known:
            value[key] = sink
            queue.append(key)
    queue.extend(known)
    while queue:
        key = queue.pop()
        new = known[key] if key in known else value[key]
        for src in sources.get(key, ()):
            if src in known:
                continue
            old = value.get(src)
            joined = new if old is None else (old if old == new else _NOBODY)
            if joined != old:
                value[src] = joined
                queue.append(src)
    return value


def _resolve(program: LoweredProgram, tr: _Trace, weights: set[str], variables: Mapping,
             by_entry: Mapping[tuple[int, int], set[str]], by_buffer: Mapping[int, set[str]]) -> Provenance:
    tensors = program.tensors
    parameter_of_variable: dict[str, str] = {}
    for v, info in variables.items():
        if v in weights or info.kind == "kv_cache":  # a cache is state of its own, like a weight
            parameter_of_variable[v] = info.name
        else:
            owners = tr.owners.get(v, set())
            # several weights: the layers of a repeated block updated through one staging instance
            parameter_of_variable[v] = family(tensors[w].name for w in owners)
    # the full variable of popxl.replica_sharded_variable lives only in its buffer; the program
    # uses its on-chip shard, recorded with the same buffer and entry: the two are one parameter's
    for v, info in variables.items():
        if info.storage == "remote" and not parameter_of_variable[v]:
            shards = [s for s, si in variables.items() if si.storage == "variable" and si.remote_buffer is not None
                      and (si.remote_buffer, si.remote_offset) == (info.remote_buffer, info.remote_offset)]
            if len(shards) == 1:
                parameter_of_variable[v] = parameter_of_variable[shards[0]]

    def parameter_of(held: Iterable[str]) -> str:
        return family(parameter_of_variable.get(v, "") for v in held)

    # an instance holding nothing takes the parameter of the update it feeds, and so does
    # whatever was copied into it (traced back against the schedule)
    feeds: dict[Key, str] = {}
    for key, targets in tr.feeds.items():
        p = parameter_of(targets)
        if p:
            feeds[key] = p
    for src, dst in reversed(tr.copies):
        if src not in tr.held_ever and src not in feeds and dst in feeds:
            feeds[src] = feeds[dst]
    # beyond: where the data goes (module docstring)
    known: dict[Key, str] = {key: parameter_of(held) for key, held in tr.held_ever.items() if held}
    known.update(feeds)
    buffer_variables = {buf.id: {v for v in buf.variables if v in variables} for buf in program.remote_buffers}
    sinks: dict[Key, str] = {key: _NOBODY for key in tr.host_sinks}
    for key, entries in tr.store_sinks.items():
        params = set()
        for buffer, entry in entries:
            held = by_entry.get((buffer, entry), set()) if entry is not None else by_buffer.get(buffer, set())
            held = held or buffer_variables.get(buffer, set())
            params.add(parameter_of(held) if held else _NOBODY)
        sinks[key] = params.pop() if len(params) == 1 else _NOBODY
    destinations = _propagate_destinations(tr, known, sinks)
    # an activation (or data staged from a buffer of no variable) is a parameter's only when
    # its data gets there other than through a gradient (an optimizer's term): the forward's
    # activations a weight's gradient is made from stay activations
    gradients = frozenset(k for k in tr.flows if k[0] in tensors and tensors[k[0]].kind == "gradient")
    direct = _propagate_destinations(tr, known, sinks, skip=gradients)
    for key, p in destinations.items():
        info = tensors.get(key[0])
        if info is not None and info.kind in ("activation", "remote_staging"):
            p = direct.get(key, "")
        if p and key not in tr.held_ever and key not in feeds:
            feeds[key] = p

    # the keys and values written into a key/value cache stay activations (of the cache)
    caches = {info.name for info in variables.values() if info.kind == "kv_cache"}
    instances: dict[Key, Attribution] = {}
    for key in set(tr.held_ever) | set(feeds):
        held = tr.held_ever.get(key)
        info = tensors.get(key[0])
        kind = info.kind if info is not None else "other"
        if held:
            whiches = {tr.which.get(v, "") for v in held}
            which = whiches.pop() if len(whiches) == 1 else ""
            role = tr.role.get(key, "other")
            instances[key] = Attribution(parameter_of(held), role, which if _holds_state(held, variables) else "")
        else:
            role = tr.data_role.get(key) or _ROLE_OF_KIND.get(kind, "other")
            if role == "activation" and feeds.get(key, "") not in caches:
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
        if not held:
            buffers[buf.id] = _plain_buffer(buf, direct, tr, instances, tensors)
            continue
        roles = {_BASE_ROLE.get(variables[v].kind, "other") if v in variables else "other" for v in held}
        whiches = {tr.which.get(v, "") for v in held}
        buffers[buf.id] = Attribution(
            parameter_of(held) if held else "",
            roles.pop() if len(roles) == 1 else "other",
            whiches.pop() if len(whiches) == 1 and _holds_state(held, variables) else "",
        )
    # an instance that held different variables in turn (one layer per iteration of a repeat)
    by_step: dict[Key, tuple[tuple[int, ...], tuple[Attribution, ...]]] = {}
    for key, events in tr.timeline.items():
        if len({held for _step, held in events}) < 2 or key not in instances:
            continue
        base = instances[key]
        attributions = []
        for _step, held in events:
            whiches = {tr.which.get(v, "") for v in held}
            which = whiches.pop() if len(whiches) == 1 and _holds_state(held, variables) else ""
            attributions.append(Attribution(parameter_of(held), base.role, which))
        by_step[key] = (tuple(step for step, _held in events), tuple(attributions))
    return Provenance(program, parameter_of_variable, instances, buffers, op_parameter, by_step,
                      dict(tr.op_keys), dict(tr.held_ever))


def _plain_buffer(buf, destinations: Mapping[Key, str], tr: _Trace, instances: Mapping[Key, Attribution],
                  tensors: Mapping) -> Attribution:
    """A remote buffer holding no variable (popxl-addons' gradient buffers, activations of
    batch serialisation): the parameter its entries' data goes to (the family over the entries,
    :func:`family`), with the role of what is stored into it when that is one role."""
    values = {destinations[n] for n in _entry_nodes(buf.id, None, {buf.id: max(int(buf.entries), 1)})
              if n in destinations}
    parameter = family(values)
    if not parameter:
        return Attribution()
    roles = set(tr.stored_roles.get(buf.id, set()))
    if len(roles) > 1:
        roles.discard("remote_staging")  # an entry loaded and stored back adds nothing new
    role = roles.pop() if len(roles) == 1 else "other"
    return Attribution(parameter, "other" if role == "activation" else role, "")


def _data_role(key: Key, tr: _Trace, tensors: Mapping) -> str:
    """The role of the data an instance holding no variable holds now: what it accumulates or
    was reduced from (``tr.data_role``), else its kind's."""
    if key in tr.data_role:
        return tr.data_role[key]
    info = tensors.get(key[0])
    return _ROLE_OF_KIND.get(info.kind, "other") if info is not None else "other"


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
    # (row, call path) -> (what it held by step, or None; its attribution otherwise): the
    # instances of a repeat's body are one per iteration, looked up once (as of_instance does)
    found: dict[tuple[int, tuple[str, ...]], tuple[tuple | None, Attribution]] = {}
    for row, path, last in zip(inst.row.tolist(), paths, inst.last.tolist()):
        if row < n_tensors:
            path = tuple(path)
            hit = found.get((row, path))
            if hit is None:
                root = storage.ids[row]
                hit = found[(row, path)] = (provenance.by_step.get((root, path)), provenance.of_instance(root, path))
            timeline = hit[0]
            if timeline is not None:
                at = bisect.bisect_right(timeline[0], last) - 1
                if at >= 0:
                    per_instance.append(timeline[1][at])
                    continue
            per_instance.append(hit[1])
        elif row in temp_op:
            op_id = temp_op[row]
            per_instance.append(Attribution(provenance.op_parameter.get((op_id, tuple(path)), ""), "partials", ""))
        else:
            per_instance.append(Attribution("", "other", ""))
    return per_row, per_instance


__all__ = ["Attribution", "Provenance", "attribute_rows", "family", "trace"]
