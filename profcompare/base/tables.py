"""The tables of the report model: their documented columns and dtypes (:data:`SCHEMAS`), the
vocabularies their text columns take (memory categories, variable kinds, roles, phases, program
and trace types), the summary metrics and their confidence, and the functions that build
(:func:`make_frame`, ``*_from_rows``) and check (:func:`validate_frame`) a table's frame.

:mod:`profcompare.model` documents each table and re-exports every name here; import them from
there."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from profcompare.base.report_values import check_text_column
from profcompare.errors import ReportValidationError

#: Memory categories (PopVision / libpva names) and the group each belongs to.
CATEGORY_GROUPS: Mapping[str, str] = MappingProxyType(
    {
        "vertexCode": "code",
        "controlCode": "code",
        "internalExchangeCode": "code",
        "hostExchangeCode": "code",
        "globalExchangeCode": "code",
        "sharedCodeStorage": "code",
        "vertexInstanceState": "vertex_data",
        "vertexFieldData": "vertex_data",
        "copyDescriptor": "vertex_data",
        "vectorListDescriptor": "vertex_data",
        "variable": "variables",
        "constant": "variables",
        "stack": "other",
        "hostExchangePacketHeader": "other",
        "globalExchangePacketHeader": "other",
        "controlTable": "other",
        "controlId": "other",
        "instrumentationResults": "other",
        "message": "other",
        "sharedDataStorage": "other",
        # bytes excluding gaps that no category claims (a category the reader does not know)
        "unattributed": "other",
    }
)
CATEGORY_GROUP_NAMES: tuple[str, ...] = ("code", "vertex_data", "variables", "other")

VARIABLE_KINDS: tuple[str, ...] = (
    "weight",
    "optimizer_state",
    "accumulator",
    "kv_cache",
    "gradient",
    "activation",
    "remote_staging",
    "collective_buffer",
    "stream",
    "constant",
    "other",
)

#: What a variable row or Streaming Memory buffer is to its parameter (docs/report-format.md):
#: ``weight`` the parameter itself; ``weight_copy`` a called graph's input copy of it (or of
#: its shard); ``gathered_weight`` a shard all-gathered back to the full tensor; ``shard`` a
#: replica's slice of the weight; ``gradient`` its gradient (also reduced / reduce-scattered);
#: ``accumulator`` its gradient accumulator; ``optimizer_state`` (with ``which``);
#: ``kv_cache`` an inference program's key/value cache (a variable the attention's keys or values
#: are written into step by step and read back; its own parameter);
#: ``remote_staging`` a tile-memory copy of data loaded from or stored to Streaming Memory;
#: ``activation``; ``partials`` op temporaries (matmul partials, operand copies); ``other``.
ROLES: tuple[str, ...] = (
    "weight",
    "weight_copy",
    "gathered_weight",
    "shard",
    "gradient",
    "accumulator",
    "optimizer_state",
    "kv_cache",
    "remote_staging",
    "activation",
    "partials",
    "other",
)

#: Values of ``which`` for role optimizer_state ("" for every other role).
OPTIMIZER_STATE_WHICH: tuple[str, ...] = ("", "first_order", "second_order", "step")

#: Where a ledger row's bytes live: always-live tile memory, not-always-live tile memory
#: (live over a range of program steps) or Streaming Memory (off chip, remote buffers).
LOCATIONS: tuple[str, ...] = ("always_live", "not_always_live", "streaming_memory")

#: The ``tiles`` columns of memory by region (PopVision's "Breakdown by Region") and gaps, each
#: <NA> on a tile whose source does not record it.
TILE_REGION_COLUMNS: tuple[str, ...] = ("non_interleaved_bytes", "interleaved_bytes", "overflow_bytes", "gap_bytes")

#: Columns with a default when a reader does not give them: the attribution (unattributed).
COLUMN_DEFAULTS: Mapping[tuple[str, str], Any] = MappingProxyType({
    ("variables", "parameter"): "", ("variables", "role"): "other", ("variables", "which"): "",
    ("remote_buffers", "parameter"): "", ("remote_buffers", "role"): "other", ("remote_buffers", "which"): "",
    ("trace", "run"): 0,
    ("operations", "parameter"): "", ("operations", "role"): "",
})

#: The ``variable_tiles.variable`` of a row marking a tile whose variables the table lists, when
#: it lists only some tiles' (see the ``variable_tiles`` table above).
PLACEMENT_MARK = ""

#: Values of the ``operations`` table's ``role`` column: what of its parameter an op serves, then
#: for an op without one ``activation`` (no parameter's data) or ``shared`` (several parameters'),
#: and "" when unknown.
OPERATION_ROLES: tuple[str, ...] = (
    "weight", "gradient", "accumulator", "optimizer_state", "kv_cache", "other", "activation", "shared", "",
)

#: Kinds that are model state: what ``variable_bytes`` counts, whatever their liveness class.
MODEL_STATE_KINDS: tuple[str, ...] = ("weight", "optimizer_state", "accumulator", "kv_cache")
#: Roles that copy a weight already held (a called graph's input copy, a shard all-gathered back to
#: the full tensor): memory in use, but not model state again, so ``variable_bytes`` leaves them out,
#: as it leaves out a ``shard`` of a parameter whose full ``weight`` is held too (the slice an
#: optimizer updates); a shard is the parameter's state only when no full weight is held.
WEIGHT_COPY_ROLES: tuple[str, ...] = ("weight_copy", "gathered_weight")

#: Phases of the execution table. All but ``runtime`` are device time (what Graph Analyser's
#: execution view shows; host and Streaming Memory transfers include the device's wait for the
#: host or gateway). ``runtime`` is host/runtime time of one ``session.run`` outside the device's
#: program (the simulator's per-run term); a real profile has no such rows.
PHASES: tuple[str, ...] = ("compute", "exchange", "sync", "host_io", "streaming_memory", "collective", "runtime")
#: The phases that are device cycles (everything but host/runtime time).
DEVICE_PHASES: tuple[str, ...] = PHASES[:-1]

#: Capabilities a report may declare in ``meta.capabilities`` (which optional parts it fills).
CAPABILITIES: tuple[str, ...] = (
    "tiles",
    "categories",
    "variables",
    "liveness",
    "code",
    "execution",
    "remote_buffers",
    "trace",
    "programs",
    "operations",
    "vertices",
)

#: Name of the ``operations`` row holding the code, vertex state and cycles no op is given.
UNATTRIBUTED_OPERATION = "(not attributed to an op)"
#: Name of the ``vertices`` row holding the vertex code and state no vertex type is given.
UNATTRIBUTED_VERTICES = "(not attributed to a vertex type)"
#: Name of the ``compute_sets`` row holding the vertex state no compute set is given.
UNATTRIBUTED_COMPUTE_SETS = "(not attributed to a compute set)"
#: Name of the ``exchanges`` row holding the exchange code no exchange is given.
UNATTRIBUTED_EXCHANGES = "(not attributed to an exchange)"

#: Program types of the ``programs`` table the simulator writes (pva's ``Program.Type`` names and
#: Poplar's control programs; reference/pva.md). A reader may give other pva program types.
PROGRAM_KINDS: tuple[str, ...] = (
    "Sequence",
    "Repeat",
    "Call",
    "If",
    "Switch",
    "OnTileExecute",
    "DoExchange",
    "GlobalExchange",
    "StreamCopyBegin",
    "StreamCopyMid",
    "StreamCopyEnd",
    "RemoteLoad",
    "RemoteStore",
    "Sync",
    "WriteUndef",
)

#: Block types of Graph Analyser's execution trace (its names; pva's ``Sync`` program type is
#: ExternalSync or InternalSync there, pva's StreamCopyMid is StreamCopy). A trace may hold other
#: pva program types (RemoteLoad, RemoteStore, ...) for which Graph Analyser's name is not known.
TRACE_TYPES: tuple[str, ...] = (
    "OnTileExecute",
    "DoExchange",
    "GlobalExchange",
    "StreamCopyBegin",
    "StreamCopy",
    "StreamCopyEnd",
    "ExternalSync",
    "InternalSync",
    "SyncAns",
)


@dataclass(frozen=True)
class Column:
    """One documented column of a Report table."""

    name: str
    dtype: str  # "int64", "Int64", "float64", "bool", "object", "category"
    unit: str = ""
    description: str = ""


def _cols(*spec: tuple[str, str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


#: The documented columns of every table, in order. ``tiles`` also admits one int64 column per
#: memory category named in :data:`CATEGORY_GROUPS`.
SCHEMAS: Mapping[str, tuple[Column, ...]] = MappingProxyType(
    {
        "tiles": _cols(
            ("tile", "int64", "", "tile index within the replica"),
            ("ipu", "int64", "", "IPU index within the replica"),
            ("bytes_including_gaps", "int64", "bytes", "address span used, including gaps"),
            ("bytes_excluding_gaps", "int64", "bytes", "bytes allocated"),
            ("always_live_bytes", "int64", "bytes", "bytes live for the whole program"),
            ("not_always_live_peak_bytes", "int64", "bytes", "peak not-always-live bytes"),
            ("non_interleaved_bytes", "Int64", "bytes", "allocated in the non-interleaved region; <NA> unknown"),
            ("interleaved_bytes", "Int64", "bytes", "allocated in the interleaved region; <NA> unknown"),
            ("overflow_bytes", "Int64", "bytes", "allocated beyond the tile's capacity; <NA> unknown"),
            ("gap_bytes", "Int64", "bytes", "including minus excluding gaps; <NA> unknown"),
        ),
        "categories": _cols(
            ("category", "object", "", "PopVision memory category"),
            ("group", "category", "", "code | vertex_data | variables | other"),
            ("bytes", "int64", "bytes", "summed over the replica's tiles"),
        ),
        "variables": _cols(
            ("name", "object", "", "variable name"),
            ("bytes", "int64", "bytes", "summed over tiles"),
            ("always_live", "bool", "", "live for the whole program"),
            ("kind", "category", "", "weight, optimizer_state, accumulator, ..."),
            ("dtype", "category", "", "element type"),
            ("shape", "object", "", "'[784, 512]'; '[]' for scalars; '' unknown"),
            ("tiles", "int64", "", "tiles holding part of it"),
            ("first_step", "Int64", "step", "first live program step; <NA> if always-live"),
            ("last_step", "Int64", "step", "last live program step; <NA> if always-live"),
            ("parameter", "object", "", "model variable it belongs to; '' for none"),
            ("role", "category", "", "weight, gradient, optimizer_state, remote_staging, ... (ROLES)"),
            ("which", "category", "", "optimizer state: first_order | second_order | step; else ''"),
        ),
        "liveness": _cols(
            ("step", "int64", "step", "program step index"),
            ("program", "object", "", "program name"),
            ("program_type", "category", "", "OnTileExecute, DoExchange, StreamCopy, ..."),
            ("not_always_live_bytes", "int64", "bytes", "summed over the replica's tiles (or one IPU's)"),
            ("ipu", "Int64", "", "IPU the bytes are on; <NA> for the whole replica"),
        ),
        "code": _cols(
            ("name", "object", "", "program or operation"),
            ("type", "category", "", "program type"),
            ("category", "category", "", "code memory category"),
            ("code_bytes", "int64", "bytes", "summed over tiles"),
        ),
        "execution": _cols(
            ("run", "int64", "", "profiled run of the main program"),
            ("step", "int64", "step", "executed step index within the run"),
            ("program", "object", "", "program name"),
            ("type", "category", "", "program type"),
            ("phase", "category", "", "compute | exchange | sync | host_io | streaming_memory | collective | runtime"),
            ("cycles", "int64", "cycles", "cycles of this step in this phase"),
            ("cycles_from", "Int64", "cycles", "start of the row's interval (<NA> when unknown)"),
            ("cycles_to", "Int64", "cycles", "end of the row's interval (<NA> when unknown)"),
            ("bytes_moved", "Int64", "bytes", "bytes the step moves per replica, in + out (<NA> unrecorded)"),
        ),
        "remote_buffers": _cols(
            ("name", "object", "", "remote buffer name"),
            ("entries", "int64", "", "number of entries"),
            ("shape", "object", "", "element shape of one entry"),
            ("dtype", "category", "", "element type"),
            ("sharded", "bool", "", "replica-sharded (RTS)"),
            ("bytes", "int64", "bytes", "entries x elements x itemsize, per replica"),
            ("parameter", "object", "", "model variable it belongs to; '' for none"),
            ("role", "category", "", "optimizer_state, weight, ... (ROLES)"),
            ("which", "category", "", "optimizer state: first_order | second_order | step; else ''"),
        ),
        "trace": _cols(
            ("ipu", "int64", "", "IPU index within the replica"),
            ("cycles_from", "int64", "cycles", "start of the block"),
            ("cycles_to", "int64", "cycles", "end of the block"),
            ("type", "category", "", "Graph Analyser block type (TRACE_TYPES) or pva program type"),
            ("name", "object", "", "label of the block"),
            ("program", "object", "", "program the block executes"),
            ("parent", "object", "", "enclosing group of the program tree; '' at the top level"),
            ("depth", "int64", "", "number of enclosing groups"),
            ("run", "int64", "", "profiled run of the main program (0 when unknown)"),
        ),
        "programs": _cols(
            ("id", "int64", "", "program id, unique in the report"),
            ("parent", "Int64", "", "id of the enclosing program; <NA> for a root"),
            ("depth", "int64", "", "number of enclosing programs (0 for a root)"),
            ("kind", "category", "", "program type: Sequence, Repeat, Call, OnTileExecute, ..."),
            ("name", "object", "", "program name"),
            ("op", "object", "", "popxl/PopART op it lowers; '' for none"),
            ("ipu", "Int64", "", "IPU within the replica; <NA> when several or unknown"),
        ),
        "operations": _cols(
            ("name", "object", "", "op name (debug name, else id); the remainder row is UNATTRIBUTED_OPERATION"),
            ("debug_name", "object", "", "debug name the framework recorded; '' for none"),
            ("type", "category", "", "op type (MatMul, Gelu, ...); '' when unknown"),
            ("layer", "object", "", "debug layer (popart, poptorch, ...); '' for none"),
            ("ipu", "Int64", "", "IPU within the replica; <NA> when several or unknown"),
            ("code_bytes", "int64", "bytes", "control and exchange code the op adds"),
            ("vertex_state_bytes", "int64", "bytes", "vertex state and copy descriptors the op adds"),
            ("exchange_code_bytes", "int64", "bytes", "exchange code the op adds (part of code_bytes)"),
            ("cycles", "Int64", "cycles", "device cycles in one run of the main program; <NA> when unknown"),
            ("flops", "Int64", "", "floating-point operations in one run; <NA> when unknown"),
            ("tiles", "Int64", "tiles", "tiles its programs use; <NA> when unknown"),
            ("source", "object", "", "source location file:line; '' when unknown"),
            ("parameter", "object", "", "parameter whose data the op acts on; '' for none, several or unknown"),
            ("role", "object", "", "what of the parameter it serves (OPERATION_ROLES); '' when unknown"),
        ),
        "variable_tiles": _cols(
            ("variable", "object", "", "variables.name of the variable"),
            ("ipu", "int64", "", "IPU index within the replica"),
            ("first_tile", "int64", "", "first tile of the run, within the replica"),
            ("last_tile", "int64", "", "last tile of the run (inclusive)"),
            ("bytes_per_tile", "int64", "bytes", "bytes of the variable on each tile of the run"),
        ),
        "vertices": _cols(
            ("name", "object", "", "vertex type (pva vertex.type.name); the remainder row is UNATTRIBUTED_VERTICES"),
            ("instances", "int64", "", "vertex instances over all compute sets and tiles (sum of countByTile)"),
            ("vertex_state_bytes", "int64", "bytes", "instances x state bytes per instance (type.size)"),
            ("code_bytes", "int64", "bytes", "vertex code summed over the tiles holding it (tile vertices' codeBytes)"),
            ("tiles", "Int64", "tiles", "tiles holding its code; <NA> when unknown"),
            ("compute_sets", "int64", "", "compute sets using it"),
        ),
        "compute_sets": _cols(
            ("name", "object", "", "OnTileExecute program name; the remainder row is UNATTRIBUTED_COMPUTE_SETS"),
            ("program", "Int64", "", "its id in the programs table; <NA> when unknown"),
            ("op", "object", "", "op it lowers; '' when unknown"),
            ("ipu", "Int64", "", "IPU within the replica; <NA> when several or unknown"),
            ("vertex_types", "int64", "", "distinct vertex types"),
            ("vertices", "int64", "", "vertex instances (sum of countByTile)"),
            ("vertex_state_bytes", "int64", "bytes", "instances x state bytes per instance (type.size)"),
            ("cycles", "Int64", "cycles", "estimated cycles of one execution (max estimatedCyclesByTile); <NA> unknown"),
            ("tiles", "Int64", "tiles", "tiles with a vertex; <NA> when unknown"),
        ),
        "exchanges": _cols(
            ("name", "object", "", "program name; the remainder row is UNATTRIBUTED_EXCHANGES"),
            ("program", "Int64", "", "its id in the programs table; <NA> when unknown"),
            ("op", "object", "", "op it lowers; '' when unknown"),
            ("ipu", "Int64", "", "IPU within the replica; <NA> when several or unknown"),
            ("type", "category", "", "program type: DoExchange, StreamCopyMid, GlobalExchange, ..."),
            ("code_bytes", "int64", "bytes", "exchange code summed over tiles (codeBytesByTile)"),
            ("cycles", "Int64", "cycles", "estimated cycles of one execution (max estimatedCyclesByTile); <NA> unknown"),
            ("tiles", "Int64", "tiles", "tiles holding its code; <NA> when unknown"),
        ),
    }
)

TABLES: tuple[str, ...] = tuple(SCHEMAS)

#: Summary metrics, in display order, with their units.
METRIC_UNITS: Mapping[str, str] = MappingProxyType(
    {
        "total_bytes": "bytes",
        "always_live_bytes": "bytes",
        "not_always_live_peak_bytes": "bytes",
        "peak_liveness_bytes": "bytes",
        "code_bytes": "bytes",
        "variable_bytes": "bytes",
        "max_tile_bytes": "bytes",
        "tiles_over_budget": "tiles",
        "streaming_memory_bytes": "bytes",
        "cycles_per_step": "cycles",
        "host_seconds_per_step": "s",
        "seconds_per_step": "s",
        "samples_per_second": "samples/s",
    }
)
METRICS: tuple[str, ...] = tuple(METRIC_UNITS)

#: How sure a figure is: ``exact`` follows from the program alone (shapes, dtypes, replicas,
#: the layout the user chose); ``modelled`` rests on the simulator's model constants (code
#: sizes, tile mapping, liveness schedule, cycles, host/runtime time: docs/ipu-model.md);
#: ``measured`` was read from a real Poplar profile.
CONFIDENCES: tuple[str, ...] = ("exact", "modelled", "measured")

#: Summary metrics of a simulated report that are exact: the bytes of the model state and of
#: Streaming Memory are shape x dtype (divided by replicas with padding when sharded).
EXACT_SIMULATED_METRICS: frozenset[str] = frozenset({"variable_bytes", "streaming_memory_bytes"})

#: Table columns of a simulated report that are exact (every other column is modelled).
EXACT_SIMULATED_COLUMNS: Mapping[str, frozenset[str]] = MappingProxyType({
    "variables": frozenset({"name", "bytes", "kind", "dtype", "shape"}),
    "remote_buffers": frozenset({"name", "entries", "shape", "dtype", "sharded", "bytes"}),
    "liveness": frozenset({"step", "program", "program_type", "ipu"}),
    "execution": frozenset({"run", "step", "program", "type", "phase"}),
    "code": frozenset({"name", "type", "category"}),
    "categories": frozenset({"category", "group"}),
    "tiles": frozenset({"tile", "ipu"}),
    "trace": frozenset({"ipu", "type", "name", "program", "parent", "depth", "run"}),
    "programs": frozenset({"id", "parent", "depth", "kind", "name", "op", "ipu"}),
    "operations": frozenset({"name", "debug_name", "type", "layer", "flops", "source", "parameter", "role"}),
    "variable_tiles": frozenset({"variable", "ipu"}),
    # the compute sets and exchanges are the lowering's own programs; the vertex types are the
    # simulator's codelet families (a model), their figures the code model's
    "vertices": frozenset(),
    "compute_sets": frozenset({"name", "program", "op", "ipu"}),
    "exchanges": frozenset({"name", "program", "op", "ipu", "type"}),
})


#: Text columns of millions of rows whose values repeat (a program's or block's name once per
#: step or block): a store reads them as categoricals (a small integer code per row, the names
#: once) rather than an object per row. A reader may give either; every consumer reads them as
#: text (``astype(str)``, :func:`profcompare.model.text_codes`, comparisons with a string).
COMPACT_TEXT_COLUMNS: frozenset[tuple[str, str]] = frozenset({
    ("execution", "program"), ("liveness", "program"),
    ("trace", "name"), ("trace", "program"), ("trace", "parent"),
})


def format_shape(shape: Sequence[int] | None) -> str:
    """Return the model's text form of a shape: ``[784, 512]``, ``[]`` for scalars, ``""`` if unknown."""
    if shape is None:
        return ""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def parse_shape(text: str) -> tuple[int, ...] | None:
    """Inverse of :func:`format_shape` (``None`` for ``""``)."""
    text = text.strip()
    if not text:
        return None
    inner = text.strip("[]() ")
    return tuple(int(p) for p in inner.split(",") if p.strip()) if inner else ()


def _is_dtype(series: pd.Series, dtype: str) -> bool:
    actual = series.dtype
    if dtype == "category":
        return isinstance(actual, pd.CategoricalDtype)
    if dtype == "object":
        # str columns: object (numpy) or pandas' string dtype.
        return bool(actual == np.dtype("O") or pd.api.types.is_string_dtype(actual))
    if dtype == "Int64":
        return str(actual) == "Int64"
    return bool(actual == np.dtype(dtype))


def _coerce_series(values: Any, dtype: str, length: int) -> pd.Series:
    # ``copy=False`` throughout: the frame copies every column when it is built (pandas' frame
    # constructor copies or stacks the arrays of a dict), so a copy here would only be a third
    # transient copy of tables of millions of rows (the caller's, this one, the frame's)
    if dtype == "category":
        if not length:
            return pd.Series([], dtype="category")
        if isinstance(values, (pd.Categorical, pd.Series)) and isinstance(values.dtype, pd.CategoricalDtype):
            return pd.Series(_as_inferred_categories(pd.Categorical(values)), copy=False)
        return pd.Series(values, dtype="object", copy=False).astype("category")
    if dtype == "object":
        return pd.Series(values, dtype="object", copy=False)
    if not length:
        return pd.Series([], dtype=dtype)
    series = pd.Series(values, copy=False)
    wanted = pd.api.types.pandas_dtype(dtype)
    # already of the dtype: no copy here (the frame copies its columns when it is built)
    return series if series.dtype == wanted else series.astype(wanted)


def _as_inferred_categories(values: pd.Categorical) -> pd.Categorical:
    """``values`` with the categories ``astype("category")`` of its values as objects would give
    (the values used, in pandas' order and dtype), by recoding its codes: a million-row column is
    not hashed value by value again, nor sorted (the used codes are counted)."""
    codes = np.asarray(values.codes, dtype=np.int64)
    present = codes[codes >= 0] if (codes < 0).any() else codes
    used = np.flatnonzero(np.bincount(present, minlength=len(values.categories)))
    kept = values.categories.take(used)
    inferred = pd.Series(np.asarray(kept, dtype=object), dtype="object").astype("category").dtype
    # old code -> new code (-1, a missing value, stays -1: the extra last entry)
    recode = np.full(len(values.categories) + 1, -1, dtype=np.int64)
    recode[used] = inferred.categories.get_indexer(kept)
    return pd.Categorical.from_codes(recode[codes], dtype=pd.CategoricalDtype(inferred.categories, ordered=False))


def liveness_per_step(liveness: pd.DataFrame) -> pd.DataFrame:
    """The replica's not-always-live curve of a ``liveness`` table: one row per step, in step
    order, with the columns step (int64), program (str), program_type (str) and
    not_always_live_bytes (int64, the IPUs' rows of a step summed). A table of one row per step
    comes back with the same figures (its ``ipu`` column dropped)."""
    if not len(liveness):
        return pd.DataFrame({"step": pd.Series([], dtype=np.int64), "program": pd.Series([], dtype=object),
                             "program_type": pd.Series([], dtype=object),
                             "not_always_live_bytes": pd.Series([], dtype=np.int64)})
    steps = liveness["step"].to_numpy(dtype=np.int64)
    nbytes = liveness["not_always_live_bytes"].to_numpy(dtype=np.int64)
    if bool(np.all(steps[1:] >= steps[:-1])):  # in step order already (every reader writes it so)
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
        firsts = starts
    else:
        order = np.argsort(steps, kind="stable")
        steps, nbytes = steps[order], nbytes[order]
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
        firsts = order[starts]
    return pd.DataFrame({
        "step": steps[starts],
        "program": pd.Series(liveness["program"].to_numpy(dtype=object)[firsts], dtype=object),
        "program_type": pd.Series(liveness["program_type"].astype(str).to_numpy(dtype=object)[firsts], dtype=object),
        "not_always_live_bytes": np.add.reduceat(nbytes, starts) if len(starts) else nbytes[:0],
    })


def liveness_ipus(liveness: pd.DataFrame) -> tuple[int, ...]:
    """The IPUs a ``liveness`` table has rows of, in order; empty when its rows are for the
    whole replica (``ipu`` <NA>)."""
    ipu = liveness["ipu"].to_numpy(dtype="int64", na_value=-1) if "ipu" in liveness.columns else np.zeros(0, np.int64)
    return tuple(int(i) for i in np.unique(ipu[ipu >= 0]))


def trace_from_blocks(blocks: Sequence[tuple[int, int, int, str, str, str, str, int]],
                      runs: Sequence[int] | None = None) -> pd.DataFrame:
    """The ``trace`` table of ``blocks``, each (ipu, cycles_from, cycles_to, type, name, program,
    parent, depth), in the order given; ``runs`` the run of each block (default: all run 0)."""
    names = ("ipu", "cycles_from", "cycles_to", "type", "name", "program", "parent", "depth")
    data: dict[str, Any] = {name: list(values) for name, values in zip(names, zip(*blocks))} if blocks else {}
    if blocks and runs is not None:
        data["run"] = list(runs)
    return make_frame("trace", data or None)


def programs_from_rows(rows: Sequence[tuple[int, int | None, int, str, str, str, int | None]]) -> pd.DataFrame:
    """The ``programs`` table of ``rows``, each (id, parent, depth, kind, name, op, ipu), in the
    order given (tree order); a parent or IPU of None is <NA>."""
    names = ("id", "parent", "depth", "kind", "name", "op", "ipu")
    if not rows:
        return make_frame("programs")
    columns: dict[str, Any] = {name: list(values) for name, values in zip(names, zip(*rows))}
    for name in ("parent", "ipu"):
        columns[name] = pd.array(columns[name], dtype="Int64")
    return make_frame("programs", columns)


def operations_from_rows(rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """The ``operations`` table of ``rows``, each (name, debug_name, type, layer, ipu, code_bytes,
    vertex_state_bytes, exchange_code_bytes, cycles, flops, tiles, source), optionally followed
    by (parameter, role) -- "" and "" (unknown) when left out -- in the order given; an IPU,
    cycles, FLOPs or tiles of None is <NA>."""
    names = tuple(column.name for column in SCHEMAS["operations"])
    if not rows:
        return make_frame("operations")
    full = [tuple(row) + ("", "")[: len(names) - len(row)] for row in rows]
    columns: dict[str, Any] = {name: list(values) for name, values in zip(names, zip(*full))}
    for name in ("ipu", "cycles", "flops", "tiles"):
        columns[name] = pd.array(columns[name], dtype="Int64")
    return make_frame("operations", columns)


def table_from_rows(table: str, rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """The ``table`` frame of ``rows``, each a tuple of the table's columns in schema order, in
    the order given; None in a nullable (Int64) column is <NA>. For ``vertices``,
    ``compute_sets`` and ``exchanges`` (and any table without category columns of its own)."""
    schema = SCHEMAS[table]
    if not rows:
        return make_frame(table)
    columns: dict[str, Any] = {column.name: list(values) for column, values in zip(schema, zip(*rows))}
    for column in schema:
        if column.dtype == "Int64":
            columns[column.name] = pd.array(columns[column.name], dtype="Int64")
    return make_frame(table, columns)


def _default_index(series: pd.Series) -> pd.Series:
    """``series`` indexed 0..n-1 (``reset_index`` only when it is not: the frame copies its
    columns anyway)."""
    index = series.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return series
    return series.reset_index(drop=True)


def make_frame(table: str, data: Mapping[str, Any] | None = None, *, adopt: bool = False,
               **extra_int_columns: Any) -> pd.DataFrame:
    """Build a DataFrame for ``table`` with the documented columns and dtypes.

    ``data`` maps column name -> values (list, array or Series); a missing column is an error
    unless the frame is empty (``data`` None or all columns empty) or the column is nullable
    (``Int64``: filled with <NA>). For ``tiles``,
    category columns may be passed in ``data`` too and become int64. Returns the frame with
    columns in schema order (category columns after the fixed ones, in CATEGORY_GROUPS order).

    The frame holds copies of the columns given, unless ``adopt``: then an array already of its
    column's dtype becomes that column as it is, not copied (a table of millions of rows is not
    held twice while its frame is built). That needs pandas' copy-on-write, the default from
    pandas 3; under pandas 2 it is switched on while the columns are set (only then: setting a
    column otherwise copies it). With ``adopt`` the caller gives the arrays away: it must neither
    keep changing them nor give one array for two columns.
    """
    schema = SCHEMAS[table]
    data = dict(data or {})
    data.update(extra_int_columns)
    lengths = {len(v) for v in data.values()}
    if len(lengths) > 1:
        raise ReportValidationError(f"{table}: columns have different lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else 0
    columns: dict[str, pd.Series] = {}
    for col in schema:
        if col.name in data:
            columns[col.name] = _default_index(_coerce_series(data.pop(col.name), col.dtype, length))
        elif length == 0:
            columns[col.name] = _coerce_series([], col.dtype, 0)
        elif (table, col.name) in COLUMN_DEFAULTS:
            default = COLUMN_DEFAULTS[(table, col.name)]
            # a numeric default as one array (no list of a Python object per row)
            filled = (np.full(length, default, dtype=col.dtype) if col.dtype in ("int64", "bool")
                      else [default] * length)
            columns[col.name] = _coerce_series(filled, col.dtype, length)
        elif col.dtype == "Int64":
            # nullable columns default to unknown (<NA>), e.g. cycles_from/to of a profile
            # that records no intervals
            columns[col.name] = pd.Series(pd.arrays.IntegerArray(np.zeros(length, dtype=np.int64),
                                                                 np.ones(length, dtype=bool)), copy=False)
        else:
            raise ReportValidationError(f"{table}: missing column {col.name!r}")
    if table == "tiles":
        for name in CATEGORY_GROUPS:
            if name in data:
                columns[name] = pd.Series(data.pop(name)).astype("int64").reset_index(drop=True)
    if data:
        raise ReportValidationError(f"{table}: unknown column(s) {sorted(data)}")
    if not adopt:
        return pd.DataFrame(columns)  # copies each column (stacking those of one dtype)
    # one column at a time: each column keeps its own array (pandas' copy-on-write tracks the
    # Series made here, which go away with this call)
    with _adopting():
        frame = pd.DataFrame(index=pd.RangeIndex(length))
        for name in list(columns):
            frame[name] = columns.pop(name)
    return frame


def _adopting() -> contextlib.AbstractContextManager[Any]:
    """Where a DataFrame's column is set without copying its array: pandas' copy-on-write, on
    by itself from pandas 3, switched on for the block under pandas 2 (a table of tens of
    millions of rows, the simulator's trace, is otherwise held twice while its frame is made)."""
    if int(pd.__version__.split(".", 1)[0]) >= 3:
        return contextlib.nullcontext()
    return pd.option_context("mode.copy_on_write", True)


def empty_frame(table: str) -> pd.DataFrame:
    """An empty frame with ``table``'s documented columns and dtypes."""
    return make_frame(table)


def _distinct_values(series: pd.Series) -> set[str]:
    """The distinct values of a column as strings (for categoricals from the used codes only:
    iterating a million-row Categorical element by element is slow)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        used = np.unique(codes[codes >= 0])
        values = {str(v) for v in series.cat.categories.take(used)}
        return values | ({"nan"} if (codes < 0).any() else set())
    return set(series.astype(str))


#: the text columns whose values come from a closed list: table -> (column, the values, what an
#: unknown one is called in the error)
_CLOSED_VALUES: dict[str, tuple[tuple[str, Sequence[str], str], ...]] = {
    "categories": (("group", CATEGORY_GROUP_NAMES, "group(s)"),),
    "variables": (("kind", VARIABLE_KINDS, "kind(s)"), ("role", ROLES, "role(s)"),
                  ("which", OPTIMIZER_STATE_WHICH, "value(s)")),
    "remote_buffers": (("role", ROLES, "role(s)"), ("which", OPTIMIZER_STATE_WHICH, "value(s)")),
    "execution": (("phase", PHASES, "phase(s)"),),
}


def validate_frame(table: str, frame: pd.DataFrame) -> None:
    """Raise :class:`ReportValidationError` unless ``frame`` matches ``SCHEMAS[table]`` exactly."""
    if not isinstance(frame, pd.DataFrame):
        raise ReportValidationError(f"{table}: expected a DataFrame, got {type(frame).__name__}")
    schema = SCHEMAS[table]
    expected = [c.name for c in schema]
    actual = list(frame.columns)
    extra = [c for c in actual if c not in expected]
    if table == "tiles":
        bad = [c for c in extra if c not in CATEGORY_GROUPS]
        if bad:
            raise ReportValidationError(f"tiles: unknown column(s) {bad}; categories are {list(CATEGORY_GROUPS)}")
        for c in extra:
            if frame[c].dtype != np.dtype("int64"):
                raise ReportValidationError(f"tiles.{c}: dtype {frame[c].dtype}, expected int64")
    elif extra:
        raise ReportValidationError(f"{table}: unknown column(s) {extra}")
    missing = [c for c in expected if c not in actual]
    if missing:
        raise ReportValidationError(f"{table}: missing column(s) {missing}")
    if actual[: len(expected)] != expected:
        raise ReportValidationError(f"{table}: columns out of order: {actual}, expected {expected} first")
    for col in schema:
        compact = (table, col.name) in COMPACT_TEXT_COLUMNS and isinstance(frame[col.name].dtype, pd.CategoricalDtype)
        if not compact and not _is_dtype(frame[col.name], col.dtype):
            raise ReportValidationError(
                f"{table}.{col.name}: dtype {frame[col.name].dtype}, expected {col.dtype}"
            )
        if col.dtype in ("object", "category"):
            check_text_column(table, col.name, frame[col.name], by_row=compact)
    for column, allowed, what in _CLOSED_VALUES.get(table, ()) if len(frame) else ():
        unknown = _distinct_values(frame[column]) - set(allowed)
        if unknown:
            raise ReportValidationError(f"{table}.{column}: unknown {what} {sorted(unknown)}")
