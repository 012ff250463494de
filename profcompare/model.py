"""The Report model: the contract every reader fills and every consumer relies on.

A :class:`Report` is a frozen dataclass that owns one :class:`ReportMeta` and thirteen pandas
DataFrames. Their columns, dtypes and units are declared once, in :data:`SCHEMAS` (with the
frame builders and checks in :mod:`profcompare.base.tables`, every name re-exported here), and
checked when a Report is built, so a reader that produces a wrong column fails at construction
(in our tests), never later in a user's notebook. A Report opened from a store reads and checks
each table when it is first used (:meth:`Report.lazy`).

All byte figures are per replica, like PopVision: one replica's IPUs, its tiles, its share of
Streaming Memory. Units live in column names (``*_bytes``, ``cycles``).

Tables (``name: dtype`` -- meaning):

``tiles`` -- one row per tile of one replica
    tile: int64 -- tile index within the replica (0 .. tiles_per_replica-1)
    ipu: int64 -- IPU index within the replica
    bytes_including_gaps: int64 -- address span used, including alignment/region gaps
    bytes_excluding_gaps: int64 -- bytes allocated
    always_live_bytes: int64 -- bytes live for the whole program
    not_always_live_peak_bytes: int64 -- max over program steps of not-always-live bytes
    non_interleaved_bytes, interleaved_bytes, overflow_bytes: Int64 (nullable) -- the bytes
    allocated (excluding gaps) in the non-interleaved region, in the interleaved region and
    beyond the tile's capacity, as PopVision's "Breakdown by Region"; the three add up to
    bytes_excluding_gaps; <NA> when the source does not record them
    gap_bytes: Int64 (nullable) -- bytes_including_gaps - bytes_excluding_gaps; <NA> when unknown
    <category>: int64 -- one optional column per memory category in :data:`CATEGORY_GROUPS`

``categories`` -- memory category totals over all tiles of one replica
    category: object(str) -- PopVision category name (see :data:`CATEGORY_GROUPS`)
    group: category -- code | vertex_data | variables | other
    bytes: int64

``variables`` -- one row per (unlowered) variable
    name: object(str); bytes: int64 (summed over tiles); always_live: bool;
    kind: category -- one of :data:`VARIABLE_KINDS`;
    dtype: category -- numpy-style name (float32, float16, int32, ...) or "" when unknown;
    shape: object(str) -- "[784, 512]", "[]" for a scalar, "" when unknown (see :func:`format_shape`);
    tiles: int64 -- number of tiles holding part of it;
    first_step, last_step: Int64 (nullable) -- liveness interval in program steps, <NA> if always-live;
    parameter: object(str) -- the model variable the row belongs to ("fc1.weight"), "" for none
    (activations, op temporaries) or when it cannot be attributed;
    role: category -- one of :data:`ROLES` (what the row is to its parameter);
    which: category -- for role optimizer_state: one of :data:`OPTIMIZER_STATE_WHICH`, else ""

``liveness`` -- one row per compile-time program step
    step: int64 (0..n-1); program: object(str); program_type: category
    (OnTileExecute, DoExchange, StreamCopy, RemoteLoad, RemoteStore, Call, ...);
    not_always_live_bytes: int64 (summed over the replica's tiles, or over one IPU's tiles);
    ipu: Int64 (nullable) -- the IPU whose tiles ``not_always_live_bytes`` sums, or <NA> for the
    whole replica. A report of a single-IPU program (and any store before version 9) has one row
    per step with <NA>; a multi-IPU program has one row per (step, IPU), so the per-IPU curves are
    exact and the replica's curve is their sum per step (:func:`liveness_per_step`, which every
    totals view reads)

``code`` -- code bytes attributed to programs/operations, long form
    name: object(str); type: category (program type); category: category (vertexCode,
    controlCode, internalExchangeCode, hostExchangeCode, globalExchangeCode, ...);
    code_bytes: int64

``execution`` -- optional; one row per executed step and phase
    run: int64 -- index of the profiled run of the main program (one run = one weight update)
    step: int64; program: object(str); type: category;
    phase: category -- one of :data:`PHASES`; cycles: int64;
    cycles_from, cycles_to: Int64 (nullable) -- the interval the row occupies, in cycles from the
    start of the profile (real traces overlap: a SyncAns spans the steps it waits for, so a run's
    time is the span of its intervals, never the sum of ``cycles``); <NA> when unknown;
    bytes_moved: Int64 (nullable) -- bytes the step moves per replica, in plus out, on one row
    of the step (pva: ``dataIn + dataOut`` summed over the IPUs; the simulator: the shape x
    dtype of what its host transfers, remote loads/stores and collectives move); <NA> where the
    source records none

``trace`` -- optional; the execution trace of every profiled run: one row per executed block, per IPU
    ipu: int64 -- IPU index within the replica;
    cycles_from, cycles_to: int64 -- the block's interval in cycles from the start of the trace
    (blocks may overlap: a SyncAns block covers the blocks it waits for);
    type: category -- Graph Analyser's block type (:data:`TRACE_TYPES`, or the pva program type
    where Graph Analyser has no other name);
    name: object(str) -- the label of the block ("Internal Sync", "Convolve", a program name);
    program: object(str) -- the program the block executes (for a block inside a group, the group's);
    parent: object(str) -- the group (program-tree node) the block sits in, "" at the top level;
    depth: int64 -- how many groups enclose it (0 at the top level);
    run: int64 -- the profiled run of the main program the block belongs to (0 when the source
    does not say, and in stores before version 9); the views draw one run
    (:func:`profcompare.analysis.trace.chosen_run`)

``programs`` -- optional; the program tree (Graph Analyser's Program Tree): one row per program,
    in tree order (depth first, a program's children after it in their order)
    id: int64 -- the program's id, unique in the report (pva's program id; the simulator's row number);
    parent: Int64 (nullable) -- the id of the program whose child it is (an earlier row), <NA> for a root;
    depth: int64 -- how many programs enclose it (0 for a root);
    kind: category -- the program type (:data:`PROGRAM_KINDS`: Sequence, Repeat, Call,
    OnTileExecute, DoExchange, StreamCopyBegin, ... or another pva program type);
    name: object(str) -- the program's name; op: object(str) -- the popxl/PopART op it lowers,
    "" where none or unknown; ipu: Int64 (nullable) -- the IPU it runs on within the replica,
    <NA> when it spans several or the source does not say

``operations`` -- optional; one row per popxl/PopART op (Graph Analyser's Operations summary),
    then at most one remainder row named :data:`UNATTRIBUTED_OPERATION` holding what no op is
    given, so that the column sums equal the report's totals (see the simulator's
    compile/operations.py and the pva reader for where each column comes from)
    name: object(str) -- the op's name (its debug name where it has one, else its id);
    debug_name: object(str) -- the debug name the framework recorded ("" when none);
    type: category -- the op type (MatMul, Gelu, ...; "" when unknown);
    layer: object(str) -- the debug layer (popart, poptorch, ...; "" when none);
    ipu: Int64 (nullable) -- the IPU within the replica it runs on, <NA> when several or unknown;
    code_bytes: int64 -- code the op adds (control and exchange code; vertex code is shared);
    vertex_state_bytes: int64 -- vertex state (and copy descriptors) the op adds;
    exchange_code_bytes: int64 -- the part of ``code_bytes`` that is exchange code;
    cycles: Int64 (nullable) -- device cycles of the op's steps in one run of the main program;
    flops: Int64 (nullable) -- floating-point operations of the op in one run;
    tiles: Int64 (nullable) -- tiles its programs use;
    source: object(str) -- "file:line" where the debug information has it, else "";
    parameter: object(str) -- the model parameter whose data the op acts on ("" when none,
        several or unknown; see ``role``);
    role: object(str) -- what of that parameter the op serves, one of :data:`OPERATION_ROLES`
        (``weight``, ``gradient``, ``accumulator``, ``optimizer_state``, ``kv_cache``, ``other``);
        for an op without a parameter ``activation`` (it moves no parameter's data) or ``shared``
        (several parameters' data); "" when the source cannot say (Poplar profiles, stores
        before version 9, the remainder row). The rule: docs/guide/compare.md (Memory ledger)

``variable_tiles`` -- optional; which tiles hold each variable: one row per run of consecutive
    tiles on which a variable holds the same bytes (a variable mapped over tiles 0-3 with 100 B
    each is one row; a mapping that wraps round its IPU's tiles is two)
    variable: object(str) -- the variable's ``variables.name``;
    ipu: int64 -- the IPU (within the replica) of the run's tiles;
    first_tile, last_tile: int64 -- the run's first and last tile (inclusive, within the replica);
    bytes_per_tile: int64 -- the bytes the variable holds on each tile of the run.
    Empty when the source does not record the placement (Poplar profiles read through pva,
    stores written before version 9). A row whose variable is :data:`PLACEMENT_MARK` ("", bytes
    0) marks a tile the table covers when it covers only some: a large simulated program records
    the variables of its fullest tiles only; a table without such rows covers every tile

The next three tables (capability ``vertices`` names all three) are Graph Analyser's vertex
types, compute sets and exchanges; the pva attribute filling each column is named below (the pva
reader's _vertex_tables); in a simulated report every figure is modelled and the names, program
ids, ops, IPUs and program types are exact (:data:`EXACT_SIMULATED_COLUMNS`; the simulator's
compile/vertices.py). Each ends with at most one remainder row so that its sums reconcile with
the report's categories.

``vertices`` -- optional; one row per vertex type, the most code first, then at most one
    remainder row named :data:`UNATTRIBUTED_VERTICES` (what the report's vertexCode /
    vertexInstanceState categories hold beyond the rows)
    name: object(str) -- the vertex type (pva ``vertex.type.name``; the simulator's codelet family);
    instances: int64 -- vertex instances over all compute sets and tiles (pva: sum of ``countByTile``);
    vertex_state_bytes: int64 -- instances x state bytes of one instance (pva ``type.size``);
    code_bytes: int64 -- the type's code summed over the tiles holding it (pva ``tiles[].vertices[].codeBytes``);
    tiles: Int64 (nullable) -- tiles holding its code; compute_sets: int64 -- compute sets using it

``compute_sets`` -- optional; one row per OnTileExecute program (its compute set), then at most
    one remainder row named :data:`UNATTRIBUTED_COMPUTE_SETS` (vertex state no compute set is given)
    name: object(str) -- the program's name (pva ``program.name``); program: Int64 (nullable) --
    its ``programs`` id (pva ``program._id``); op: object(str) -- the op it lowers ("" when
    unknown: pva's Program does not say); ipu: Int64 (nullable) -- the IPU of its tiles when one;
    vertex_types: int64 -- distinct vertex types; vertices: int64 -- vertex instances
    (pva: sum of ``countByTile``); vertex_state_bytes: int64 -- instances x ``type.size``;
    cycles: Int64 (nullable) -- estimated cycles of one execution (pva: max of
    ``estimatedCyclesByTile``); tiles: Int64 (nullable) -- tiles with a vertex

``exchanges`` -- optional; one row per program holding exchange code (DoExchange, stream copies,
    global exchanges, a compute set's own exchange), then at most one remainder row named
    :data:`UNATTRIBUTED_EXCHANGES` (exchange code no program is given)
    name, program, op, ipu -- as in ``compute_sets``;
    type: category -- the program type (pva ``program.type.name``: DoExchange, StreamCopyMid,
    GlobalExchange; the simulator also RemoteLoad, RemoteStore, OnTileExecute for a compute set's
    own exchange);
    code_bytes: int64 -- exchange code summed over tiles (pva ``codeBytesByTile``);
    cycles: Int64 (nullable) -- estimated cycles of one execution (pva: max of
    ``estimatedCyclesByTile``); tiles: Int64 (nullable) -- tiles holding its code. The bytes an
    exchange moves are not a column: the SDK's documented API does not give them per program and
    the simulator models only the worst tile's

``remote_buffers`` -- optional; Streaming Memory (not tile memory), per replica
    name: object(str); entries: int64; shape: object(str) (one entry's element shape);
    dtype: category; sharded: bool; bytes: int64 (entries x elements x itemsize);
    parameter, role, which -- as in ``variables``

The attribution columns (``parameter``, ``role``, ``which``) default to unattributed
(``""``, ``"other"``, ``""``) when a reader cannot fill them (older stores, foreign profiles).
:meth:`Report.ledger` sums the tables per (parameter, role, location), see :data:`LOCATIONS`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import pandas as pd

from profcompare.base import presenters
from profcompare.base.readable import readable
from profcompare.base.report_values import (
    check_meta,
    check_report_values,
    check_table_values,
    check_target,
)
from profcompare.errors import ReportValidationError
from profcompare.perf.memo import memoized_copy

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from profcompare.base.tables import (
    CAPABILITIES,
    CATEGORY_GROUP_NAMES,
    CATEGORY_GROUPS,
    COLUMN_DEFAULTS,
    COMPACT_TEXT_COLUMNS,
    CONFIDENCES,
    DEVICE_PHASES,
    EXACT_SIMULATED_COLUMNS,
    EXACT_SIMULATED_METRICS,
    LOCATIONS,
    METRIC_UNITS,
    METRICS,
    MODEL_STATE_KINDS,
    OPERATION_ROLES,
    OPTIMIZER_STATE_WHICH,
    PHASES,
    PLACEMENT_MARK,
    PROGRAM_KINDS,
    ROLES,
    SCHEMAS,
    TABLES,
    TILE_REGION_COLUMNS,
    TRACE_TYPES,
    UNATTRIBUTED_COMPUTE_SETS,
    UNATTRIBUTED_EXCHANGES,
    UNATTRIBUTED_OPERATION,
    UNATTRIBUTED_VERTICES,
    VARIABLE_KINDS,
    WEIGHT_COPY_ROLES,
    Column,
    empty_frame,
    format_shape,
    liveness_ipus,
    liveness_per_step,
    make_frame,
    operations_from_rows,
    parse_shape,
    programs_from_rows,
    table_from_rows,
    trace_from_blocks,
    validate_frame,
)


def metric_confidence(meta: ReportMeta, metric: str) -> str:
    """The confidence of one summary metric of a report (see :data:`CONFIDENCES`)."""
    if not meta.simulated:
        return "measured"
    return "exact" if metric in EXACT_SIMULATED_METRICS else "modelled"


def column_confidence(meta: ReportMeta, table: str, column: str) -> str:
    """The confidence of one table column of a report (see :data:`CONFIDENCES`)."""
    if not meta.simulated:
        return "measured"
    return "exact" if column in EXACT_SIMULATED_COLUMNS.get(table, frozenset()) else "modelled"


def combined_confidence(*levels: str) -> str:
    """The confidence of a figure derived from several (a delta, a ratio): the weakest of them;
    modelled beats measured beats exact."""
    for level in ("modelled", "measured", "exact"):
        if level in levels:
            return level
    return "exact"


#: Metrics where a higher value is better (throughput); for every other metric (bytes, tiles,
#: cycles) lower is better. ``--fail-if`` messages and status colours follow it.
HIGHER_IS_BETTER: frozenset[str] = frozenset({"samples_per_second"})

#: The tables each summary metric is computed from (cycles and throughput are NaN without an
#: execution profile anyway).
_METRIC_SOURCES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "total_bytes": ("tiles",),
        "always_live_bytes": ("tiles",),
        "not_always_live_peak_bytes": ("liveness",),
        "peak_liveness_bytes": ("tiles", "liveness"),
        "code_bytes": ("categories",),
        "variable_bytes": ("variables",),
        "max_tile_bytes": ("tiles",),
        "tiles_over_budget": ("tiles",),
        "streaming_memory_bytes": ("remote_buffers",),
    }
)


def text_codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    """(code of each row, the names): ``names[code]`` is the row's value as ``astype(str)`` spells
    it (a missing value "nan"), without making a string per row of a categorical column."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        names = [str(c) for c in series.cat.categories] + ["nan"]
        codes = series.cat.codes.to_numpy().astype(np.int64)
        return np.where(codes < 0, len(names) - 1, codes), names
    codes, uniques = pd.factorize(series.astype(str).to_numpy(dtype=object))  # missing (pandas 3): -1
    names = [str(u) for u in uniques] + ["nan"]
    return np.where(codes < 0, len(names) - 1, codes).astype(np.int64), names


def runtime_rows(phase: pd.Series) -> np.ndarray:
    """Whether each row of an execution table's ``phase`` column is host/runtime time (the
    ``runtime`` phase), by :func:`text_codes` (no string per row of a categorical column)."""
    codes, names = text_codes(phase)
    return np.isin(codes, [code for code, name in enumerate(names) if name == "runtime"])


def run_span_cycles(execution: pd.DataFrame, *, include_runtime: bool = False) -> float:
    """Device cycles of one profiled run: the mean over runs of each run's span.

    Rows of the ``runtime`` phase (host/runtime time outside the device, simulator only) are left
    out unless ``include_runtime``; with it the span is the whole ``session.run``.

    A run's span is its last ``cycles_to`` minus its first ``cycles_from``: steps of a real trace
    overlap (a SyncAns block covers the steps it waits for), so adding up ``cycles`` would
    overstate the run (about 2.5x on a real popxl trace). Runs whose intervals are unknown
    (<NA>, e.g. older stores) fall back to the sum of their ``cycles``. NaN without rows.
    """
    if include_runtime or not len(execution):
        return _mean_run_span(execution, slice(None))
    return _mean_run_span(execution, ~runtime_rows(execution["phase"]))


def _mean_run_span(execution: pd.DataFrame, keep: slice | np.ndarray) -> float:
    """:func:`run_span_cycles` over the rows ``keep`` selects.

    A report's runs follow each other (its rows are in run order): then each run is reduced in
    place, the rows ``keep`` leaves out given neutral values, so no column of a million-row
    execution table is copied as a whole more than once at a time."""
    run = execution["run"].to_numpy()
    mask = None if isinstance(keep, slice) else np.asarray(keep, dtype=bool)
    if not len(run) or (mask is not None and not mask.any()):
        return math.nan
    if not bool(np.all(run[1:] >= run[:-1])):
        return _mean_run_span_unordered(execution, slice(None) if mask is None else mask)
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])  # where each run's rows start
    known = ~(execution["cycles_from"].isna().to_numpy() | execution["cycles_to"].isna().to_numpy())
    counted = known if mask is None else known & mask
    starts = np.where(counted, execution["cycles_from"].to_numpy(dtype="int64", na_value=0), np.iinfo(np.int64).max)
    start = np.minimum.reduceat(starts, first)
    del starts
    ends = np.where(counted, execution["cycles_to"].to_numpy(dtype="int64", na_value=0), -1)
    end = np.maximum.reduceat(ends, first)
    del ends
    cycles = execution["cycles"].to_numpy(dtype="int64")
    total = np.add.reduceat(cycles if mask is None else np.where(mask, cycles, 0), first)
    all_known = np.logical_and.reduceat(known if mask is None else known | ~mask, first)
    # integers below 2**53 (the model's bound): the differences and sums are exact in float64
    spans = np.where(all_known, (end - start).astype("float64"), total.astype("float64"))
    if mask is not None:
        spans = spans[np.add.reduceat(mask, first) > 0]  # a run none of whose rows is kept is no run
    return float(np.mean(spans))


def _mean_run_span_unordered(execution: pd.DataFrame, keep: slice | np.ndarray) -> float:
    """:func:`_mean_run_span` of a table whose runs interleave: the kept rows grouped by run, in
    the order runs first appear, then one reduction per group."""
    run = execution["run"].to_numpy()[keep]
    starts = execution["cycles_from"].to_numpy(dtype="float64", na_value=np.nan)[keep]
    ends = execution["cycles_to"].to_numpy(dtype="float64", na_value=np.nan)[keep]
    cycles = execution["cycles"].to_numpy(dtype="float64")[keep]
    known = ~(np.isnan(starts) | np.isnan(ends))
    codes, runs = pd.factorize(run, sort=False)
    order = np.argsort(codes, kind="stable")
    codes, starts, ends, cycles, known = codes[order], starts[order], ends[order], cycles[order], known[order]
    first = np.searchsorted(codes, np.arange(len(runs)))
    start = np.minimum.reduceat(np.where(known, starts, np.inf), first)
    end = np.maximum.reduceat(np.where(known, ends, -np.inf), first)
    total = np.add.reduceat(cycles, first)  # integer cycles: exact in float64 below 2**53
    all_known = np.logical_and.reduceat(known, first)
    spans = np.where(all_known, end - start, total)
    return float(np.mean(spans))


def variables_convention(variables: pd.DataFrame) -> str:
    """How a report places its model state (weights, optimizer state, accumulators):

    - ``"always_live"``: every such variable is always-live, as Poplar shows variables created
      with initial values (a Poplar C++ program, the old tut4 screenshot);
    - ``"written_from_host"``: some are not-always-live, live from the step that writes them,
      as Graph Analyser shows a popxl program (its engine writes variables from the host);
    - ``"unknown"``: the report lists no such variable.
    """
    state = variables["kind"].astype(str).isin(MODEL_STATE_KINDS).to_numpy()
    if not state.any():
        return "unknown"
    return "always_live" if variables["always_live"].to_numpy()[state].all() else "written_from_host"


#: Suffix of the per-call-instance rows of one tensor (``name@2``): simulated reports list a
#: tensor of a graph called from several sites once per call instance.
INSTANCE_SUFFIX = r"@\d+$"


def _model_state_bytes(variables: pd.DataFrame) -> float:
    """Bytes of the rows of model-state kinds but not of :data:`WEIGHT_COPY_ROLES`, a tensor listed
    once per call instance (``name@1``, ``name@2``, ...) counted once (its largest row)."""
    kind = variables["kind"].astype(str)
    role = variables["role"].astype(str)
    parameter = variables["parameter"].astype(str)
    held = set(parameter[(role == "weight") & (parameter != "")])
    copy = role.isin(WEIGHT_COPY_ROLES) | ((role == "shard") & parameter.isin(held))
    state = (kind.isin(MODEL_STATE_KINDS) & ~copy).to_numpy()
    if not state.any():
        return 0.0
    rows = variables.loc[state, ["name", "bytes"]]
    names = rows["name"].astype(str)
    if not names.str.contains("@", regex=False).any():
        return float(rows["bytes"].sum())
    stems = names.str.replace(INSTANCE_SUFFIX, "", regex=True)
    return float(rows["bytes"].groupby(stems.to_numpy()).max().sum())



@dataclass(frozen=True)
class Target:
    """The device a report was compiled for (per replica figures derive from it)."""

    architecture: str  # "Mk1" | "Mk2" | "Bow" | "C600" (pva: Ipu1 -> Mk1, Ipu2 -> Mk2 or Bow by clock, Ipu21 -> C600)
    num_ipus: int  # IPUs in the whole device (all replicas)
    tiles_per_ipu: int
    bytes_per_tile: int
    clock_hz: float
    num_replicas: int = 1
    ipus_per_replica: int = 1

    def __post_init__(self) -> None:
        for name in ("num_ipus", "tiles_per_ipu", "bytes_per_tile", "num_replicas", "ipus_per_replica"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ReportValidationError(f"target.{name} must be a positive integer, got {value!r}")
        if not self.clock_hz or self.clock_hz <= 0:
            raise ReportValidationError(f"target.clock_hz must be positive, got {self.clock_hz!r}")
        check_target(self)

    @property
    def tiles_per_replica(self) -> int:
        """Tiles of one replica (tiles_per_ipu x ipus_per_replica)."""
        return self.tiles_per_ipu * self.ipus_per_replica

    @property
    def bytes_per_replica(self) -> int:
        """Tile memory of one replica in bytes."""
        return self.tiles_per_replica * self.bytes_per_tile

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON-ready)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        """Inverse of :meth:`to_dict`; unknown keys are ignored, but every field is required
        (a missing one raises ReportValidationError naming it: a default would be a guess)."""
        names = [f.name for f in dataclasses.fields(cls)]
        lacking = [name for name in names if name not in data]
        if lacking:
            raise ReportValidationError(f"target lacks {', '.join(lacking)}")
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class ReportMeta:
    """What a report is: where it came from, what produced it, for which device and workload."""

    source: str  # path the report was read from ("" for an in-memory report)
    format: str  # "store" | "pva" | "ga_cache" (Graph Analyser's cache: execution trace only)
    producer: str  # "Poplar 3.3.0 (...)" or "profcompare-sim 0.1.0"
    simulated: bool  # True when produced by the embedded simulator, not by Poplar
    target: Target
    oom: bool = False
    capabilities: frozenset[str] = frozenset(CAPABILITIES)
    workload: str | None = None
    variant: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    samples_per_step: int | None = None  # samples consumed by one run of the main program
    created: str | None = None  # ISO-8601 timestamp of compilation
    #: popxl-addons API generation the workload spoke: "3.0" (threshold API) or "3.4" (replica
    #: groupings); the emulated one for simulated reports, the installed one on the SDK path
    addons_generation: str | None = None
    #: how the simulator ran the program: "numeric" (values computed) or "compile-only" (shapes
    #: and dtypes only; memory and time are modelled all the same). Reports without it: numeric
    execution: str = "numeric"
    #: PopART session options the program set (simulated reports: ``numIOTiles``,
    #: ``partialsTypeMatMuls``, ``engineOptions``, ...; docs/ipu-model.md "Session options").
    #: Empty for reports without them (Poplar profiles, older stores)
    session_options: Mapping[str, Any] = field(default_factory=dict)
    #: how the replicas and tiles are laid out (simulated reports; empty for reports without it):
    #: ``io_tiles_per_ipu`` (int: the first tiles of each IPU set aside for I/O) and
    #: ``replica_groupings`` (a list, one entry per replica grouping the program's collectives run
    #: over: ``stride``, ``group_size``, ``num_groups`` and, for one run of the main program,
    #: ``collectives`` executed and their device ``cycles``); see profcompare.analysis.replicas
    replication: Mapping[str, Any] = field(default_factory=dict)
    #: the layout the variant chose, as its workload resolves it (reports of a workload run; empty
    #: otherwise): setting -> bool, int, float or str, e.g. ``optimizer_state`` ("onchip" |
    #: "offchip"), ``rts``, ``sharded_threshold``, ``replicas``, ``phased``, ``recompute``, ``tp``,
    #: ``dp``, ``io_tiles``; what a comparison lists as the intended differences of configuration
    layout: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format not in ("store", "pva", "ga_cache"):
            raise ReportValidationError(f"meta.format must be 'store', 'pva' or 'ga_cache', got {self.format!r}")
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ReportValidationError(f"meta.capabilities: unknown {sorted(unknown)}")
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        object.__setattr__(self, "session_options", MappingProxyType(dict(self.session_options)))
        object.__setattr__(self, "replication", MappingProxyType(dict(self.replication)))
        object.__setattr__(self, "layout", MappingProxyType(dict(self.layout)))
        check_meta(self)

    def __getstate__(self) -> dict[str, Any]:
        # pickle cannot copy a read-only mapping: its contents go as a dict, read-only again on load
        return {k: dict(v) if isinstance(v, MappingProxyType) else v for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, MappingProxyType(value) if key in _META_MAPPINGS else value)

    @property
    def label(self) -> str:
        """Short human name: the variant, else the report directory's name."""
        if self.variant:
            return self.variant
        if self.source:
            path = os.path.normpath(self.source)
            base = os.path.basename(path)
            if self.format == "ga_cache" and base != "profile.pop_cache" and os.path.isfile(path):
                # a Graph Analyser cache kept under a name of its own is named after the program
                # (the file), not after the folder it was copied into
                return os.path.splitext(base)[0]
            if base in ("profile.sqlite", "profile.pop") or os.path.isfile(path):
                base = os.path.basename(os.path.dirname(path)) or base
            return base
        return "report"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``meta`` object of ``show --format json``)."""
        return {
            "label": self.label,
            "source": self.source,
            "format": self.format,
            "producer": self.producer,
            "simulated": self.simulated,
            "target": self.target.to_dict(),
            "oom": self.oom,
            "capabilities": sorted(self.capabilities),
            "workload": self.workload,
            "variant": self.variant,
            "config": dict(self.config),
            "samples_per_step": self.samples_per_step,
            "created": self.created,
            "addons_generation": self.addons_generation,
            "execution": self.execution,
            "session_options": dict(self.session_options),
            "replication": dict(self.replication),
            "layout": dict(self.layout),
        }

    def replace(self, **changes: Any) -> ReportMeta:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


#: the fields of ReportMeta held as read-only mappings
_META_MAPPINGS = frozenset({"config", "session_options", "replication", "layout"})


class TableSource(Protocol):
    """Where a lazily read Report's tables come from (a store file: see
    :mod:`profcompare.readers.store_lazy`). The Report asks for a table the first time it is used."""

    def load(self, table: str, check: Callable[[pd.DataFrame], None]) -> pd.DataFrame:
        """The frame of ``table``, read and decoded, after ``check(frame)`` passed (errors of the
        source's own kind: a store raises ReportFormatError naming its file)."""
        ...

    def rows(self, table: str) -> int:
        """The row count of ``table``, without reading it."""
        ...


def check_table(table: str, frame: pd.DataFrame, target: Target) -> None:
    """What building a Report checks of one of its tables (columns, dtypes and the value rules of
    :mod:`profcompare.base.report_values`, none of which reads another table)."""
    validate_frame(table, frame)
    check_table_values(table, frame, target)


_TABLE_NAMES: frozenset[str] = frozenset(TABLES)


@dataclass(frozen=True, eq=False)
class Report:
    """One profile: metadata plus the documented tables (see module docstring).

    Frozen: the attributes cannot be rebound, and consumers must treat the frames as read-only.
    Build one with :meth:`Report.build` to have missing tables filled with empty frames.

    A Report opened from a store (:meth:`lazy`) reads each table the first time it is asked for
    (``report.trace``) and keeps it; each is checked as it is read, as the constructor checks
    them all. :meth:`rows` gives a table's row count without reading it.
    """

    meta: ReportMeta
    tiles: pd.DataFrame
    categories: pd.DataFrame
    variables: pd.DataFrame
    liveness: pd.DataFrame
    code: pd.DataFrame
    execution: pd.DataFrame
    remote_buffers: pd.DataFrame
    #: the execution trace (optional; readers and the simulator that do not give one leave it empty)
    trace: pd.DataFrame = field(default_factory=lambda: empty_frame("trace"))
    #: the program tree (optional; readers whose source has none leave it empty)
    programs: pd.DataFrame = field(default_factory=lambda: empty_frame("programs"))
    #: one row per op (optional; readers whose source has no ops leave it empty)
    operations: pd.DataFrame = field(default_factory=lambda: empty_frame("operations"))
    #: which tiles hold each variable (optional; readers whose source does not say leave it empty)
    variable_tiles: pd.DataFrame = field(default_factory=lambda: empty_frame("variable_tiles"))
    #: one row per vertex type (optional; capability ``vertices`` covers the three tables)
    vertices: pd.DataFrame = field(default_factory=lambda: empty_frame("vertices"))
    #: one row per compute set (OnTileExecute program; optional)
    compute_sets: pd.DataFrame = field(default_factory=lambda: empty_frame("compute_sets"))
    #: one row per program holding exchange code (optional)
    exchanges: pd.DataFrame = field(default_factory=lambda: empty_frame("exchanges"))
    #: the run of the trace the views draw (``--run``); None: the first steady-state run
    #: (:func:`profcompare.analysis.trace.choose_run`). A view setting, never stored.
    trace_run: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.meta, ReportMeta):
            raise ReportValidationError("Report.meta must be a ReportMeta")
        for table in TABLES:
            validate_frame(table, getattr(self, table))
        check_report_values(self)

    @classmethod
    def build(cls, meta: ReportMeta, **tables: pd.DataFrame) -> Report:
        """Build a Report, using empty frames for tables not given."""
        unknown = set(tables) - set(TABLES)
        if unknown:
            raise ReportValidationError(f"unknown table(s) {sorted(unknown)}")
        frames = {t: tables[t] if t in tables else empty_frame(t) for t in TABLES}
        return cls(meta=meta, **frames)

    @classmethod
    def lazy(cls, meta: ReportMeta, source: TableSource) -> Report:
        """A Report whose tables ``source`` gives when first asked for (see the class
        docstring). ``meta`` is checked now, each table when it is read."""
        if not isinstance(meta, ReportMeta):
            raise ReportValidationError("Report.meta must be a ReportMeta")
        check_meta(meta)
        check_target(meta.target)
        report = object.__new__(cls)
        object.__setattr__(report, "meta", meta)
        object.__setattr__(report, "trace_run", None)
        object.__setattr__(report, "_source", source)
        return report

    if not TYPE_CHECKING:  # hidden from mypy, which would otherwise type every unknown attribute Any

        def __getattr__(self, name: str) -> Any:
            # called only for what the instance lacks: a table of a lazy Report not read yet
            source = self.__dict__.get("_source")
            if source is None or name not in _TABLE_NAMES:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            target = self.__dict__["meta"].target
            frame = source.load(name, lambda loaded: check_table(name, loaded, target))
            object.__setattr__(self, name, frame)
            return frame

    def rows(self, table: str) -> int:
        """The number of rows of ``table``, without reading it when it has not been read."""
        if table not in _TABLE_NAMES:
            raise KeyError(table)
        frame = self.__dict__.get(table)
        source = self.__dict__.get("_source")
        if frame is None and source is not None:
            return int(source.rows(table))
        return len(getattr(self, table))

    def loaded_tables(self) -> tuple[str, ...]:
        """The tables this Report holds in memory (all of them unless it was opened lazily)."""
        return tuple(t for t in TABLES if t in self.__dict__)

    def with_meta(self, meta: ReportMeta) -> Report:
        """This report with ``meta`` in place of its own. The tables are this report's, already
        checked: when ``meta`` has the same target (the only part of it the tables' checks
        read), they are not checked again; otherwise the copy is checked as a new Report is
        (a lazy Report's tables not read yet are checked against ``meta`` when read)."""
        if not isinstance(meta, ReportMeta):
            raise ReportValidationError("Report.meta must be a ReportMeta")
        source = self.__dict__.get("_source")
        if meta.target != self.meta.target:
            if source is None:
                return dataclasses.replace(self, meta=meta)
            check_meta(meta)
            check_target(meta.target)
            for table in self.loaded_tables():
                check_table(table, self.__dict__[table], meta.target)
        copy = object.__new__(type(self))
        for name in (f.name for f in dataclasses.fields(self)):
            if name in self.__dict__:  # a lazy Report's tables not read yet stay unread
                object.__setattr__(copy, name, self.__dict__[name])
        if source is not None:
            object.__setattr__(copy, "_source", source)
        object.__setattr__(copy, "meta", meta)
        return copy

    def with_trace_subset(self, trace: pd.DataFrame) -> Report:
        """This report with ``trace`` (some of its own trace's rows, so not checked again) in
        place of its trace: what a view of one run draws."""
        copy = self.with_meta(self.meta)
        object.__setattr__(copy, "trace", trace)
        return copy

    def with_trace_run(self, run: int | None) -> Report:
        """This report with its views drawing run ``run`` of the trace (None: the default)."""
        copy = self.with_meta(self.meta)
        object.__setattr__(copy, "trace_run", run)
        return copy

    @property
    def label(self) -> str:
        """Short human name (see :attr:`ReportMeta.label`)."""
        return self.meta.label

    @memoized_copy
    def liveness_per_step(self) -> pd.DataFrame:
        """The replica's not-always-live curve, one row per step (:func:`liveness_per_step`):
        what every totals view reads, whether the ``liveness`` table has per-IPU rows or not."""
        return liveness_per_step(self.liveness)

    @memoized_copy
    def summary(self) -> pd.Series:
        """The summary metrics of the report.

        Returns a float64 Series indexed by :data:`METRICS` (units in :data:`METRIC_UNITS`),
        per replica. ``cycles_per_step``, ``host_seconds_per_step``, ``seconds_per_step`` and
        ``samples_per_second`` are NaN without an execution profile (or without
        ``meta.samples_per_step`` for the latter).

        - total_bytes: sum over tiles of bytes_excluding_gaps (allocated bytes, PopVision's
          default "Tile Memory (w/o gaps)" view)
        - always_live_bytes: sum over tiles of always_live_bytes
        - not_always_live_peak_bytes: max over program steps of not_always_live_bytes
        - peak_liveness_bytes: always_live_bytes + not_always_live_peak_bytes
        - code_bytes: sum of the categories in group ``code``
        - variable_bytes: bytes of the model state held in tile memory -- variables of kind
          weight, optimizer_state, accumulator or kv_cache (:data:`MODEL_STATE_KINDS`; copies of a weight,
          :data:`WEIGHT_COPY_ROLES` and the shard of a weight held in full, are not counted
          again) -- whether the
          report shows them always-live (variables created with initial values) or
          not-always-live (popxl writes them from the host; see :func:`variables_convention`)
        - max_tile_bytes: max over tiles of bytes_including_gaps (what decides whether a tile fits)
        - tiles_over_budget: tiles whose bytes_including_gaps exceed target.bytes_per_tile
        - streaming_memory_bytes: sum of ``remote_buffers.bytes``
        - cycles_per_step: device cycles of one run of the main program, as a span: the mean over
          profiled runs of (last ``cycles_to`` - first ``cycles_from``); the sum of ``cycles``
          per run only when the intervals are unknown (see :func:`run_span_cycles`)
        - host_seconds_per_step: host/runtime seconds of one ``session.run`` outside the device's
          program (the ``runtime`` phase; not device time): the run's span including the
          ``runtime`` rows minus its device span, divided by ``clock_hz``. NaN when the profile
          records no host/runtime time (a Poplar profile has no ``runtime`` rows).
        - seconds_per_step: wall-clock seconds of one ``session.run`` = cycles_per_step /
          ``clock_hz`` + host_seconds_per_step, exactly. A real profile records device time only,
          so there it is cycles_per_step / clock_hz.
        - samples_per_second: samples_per_step / seconds_per_step

        A metric whose source table the report does not record (empty and absent from
        ``meta.capabilities``, e.g. remote buffers of a Poplar profile) is NaN, not 0: the
        report cannot say, which is not the same as having none.
        """
        tiles = self.tiles
        total = float(tiles["bytes_excluding_gaps"].sum())
        always_live = float(tiles["always_live_bytes"].sum())
        curve = self.liveness_per_step()
        nal_peak = float(curve["not_always_live_bytes"].max()) if len(curve) else 0.0
        cats = self.categories
        code = float(cats.loc[cats["group"].astype(str) == "code", "bytes"].sum()) if len(cats) else 0.0
        max_tile = float(tiles["bytes_including_gaps"].max()) if len(tiles) else 0.0
        over = float((tiles["bytes_including_gaps"] > self.meta.target.bytes_per_tile).sum())
        runtime = runtime_rows(self.execution["phase"])
        cycles = _mean_run_span(self.execution, ~runtime)  # run_span_cycles: device phases only
        clock = self.meta.target.clock_hz
        host = math.nan
        if bool(runtime.any()):
            host = (_mean_run_span(self.execution, slice(None)) - cycles) / clock
        seconds = cycles / clock + (0.0 if math.isnan(host) else host)
        sps = math.nan
        if self.meta.samples_per_step and seconds and not math.isnan(seconds):
            sps = self.meta.samples_per_step / seconds
        values = {
            "total_bytes": total,
            "always_live_bytes": always_live,
            "not_always_live_peak_bytes": nal_peak,
            "peak_liveness_bytes": always_live + nal_peak,
            "code_bytes": code,
            "variable_bytes": _model_state_bytes(self.variables),
            "max_tile_bytes": max_tile,
            "tiles_over_budget": over,
            "streaming_memory_bytes": float(self.remote_buffers["bytes"].sum()),
            "cycles_per_step": cycles,
            "host_seconds_per_step": host,
            "seconds_per_step": seconds,
            "samples_per_second": sps,
        }
        for metric, tables in _METRIC_SOURCES.items():
            if any(t not in self.meta.capabilities and not self.rows(t) for t in tables):
                values[metric] = math.nan
        return readable(pd.Series(values, index=list(METRICS), dtype="float64", name=self.label))

    @memoized_copy
    def ledger(self) -> pd.DataFrame:
        """Where every byte of each model parameter lives: one row per (parameter, role, location).

        Columns: parameter (str, "" for none), role (str, :data:`ROLES`), location (str,
        :data:`LOCATIONS`), bytes (int64, per replica; for not_always_live the most the rows
        need at once), bytes_at_peak (int64, tile memory live at the not-always-live peak step),
        first_step, last_step (Int64, not_always_live only), rows (int64). See
        :func:`profcompare.analysis.ledger.ledger`.
        """
        return presenters.present("Report.ledger", self)

    def live_at_peak(self) -> pd.DataFrame:
        """The variables rows live at the not-always-live peak step, largest first (see
        :func:`profcompare.analysis.ledger.live_at_peak`)."""
        return presenters.present("Report.live_at_peak", self)

    def tile_detail(self, tile: int | None = None) -> pd.DataFrame:
        """One tile's figures, one row each: the tile ``tile`` (None: the fullest tile). Columns
        tile, figure, bytes (Int64; <NA> where not recorded); see
        :func:`profcompare.analysis.tile_detail.tile_detail_frame`."""
        return cast(pd.DataFrame, presenters.present("Report.tile_detail", self, tile))

    def confidence(self) -> pd.Series:
        """The confidence of each summary metric (index :data:`METRICS`; values in :data:`CONFIDENCES`)."""
        return pd.Series({m: metric_confidence(self.meta, m) for m in METRICS}, dtype=object, name=self.label)

    def __repr__(self) -> str:
        """A short text summary: label, producer, target and the summary metrics."""
        lines = [f"<Report {self.label!r}: {self.meta.producer}{' (simulated)' if self.meta.simulated else ''}, "
                 f"{self.meta.target.architecture} x {self.meta.target.num_replicas} replica(s)>"]
        lines += ["  " + line for line in repr(self.summary()).splitlines()[:-1]]
        return "\n".join(lines)

    # Notebook display and plots are the render layer's: it registers them with
    # profcompare.base.presenters, so the model never imports it (layers import downward only).
    def _repr_html_(self) -> str:
        return str(presenters.present("Report._repr_html_", self))

    def plot_memory_by_category(self) -> Figure:
        """Stacked bar of memory by category (matplotlib Figure)."""
        return cast("Figure", presenters.present("Report.plot_memory_by_category", self))

    def plot_liveness(self) -> Figure:
        """Not-always-live bytes per program step, always-live level marked (matplotlib Figure)."""
        return cast("Figure", presenters.present("Report.plot_liveness", self))

    def plot_tiles(self) -> Figure:
        """Memory per tile with the tile budget line (matplotlib Figure)."""
        return cast("Figure", presenters.present("Report.plot_tiles", self))

    def plot_trace(self) -> Figure:
        """The execution trace: one lane per IPU, blocks coloured by type (matplotlib Figure)."""
        return cast("Figure", presenters.present("Report.plot_trace", self))

    def plot_execution(self) -> Figure:
        """The same figure as :meth:`plot_trace` (Graph Analyser calls the view Execution Trace)."""
        return cast("Figure", presenters.present("Report.plot_trace", self))


__all__ = [
    "TILE_REGION_COLUMNS",
    "liveness_ipus",
    "liveness_per_step",
    "trace_from_blocks",
    "programs_from_rows",
    "operations_from_rows",
    "table_from_rows",
    "OPERATION_ROLES",
    "PLACEMENT_MARK",
    "UNATTRIBUTED_OPERATION",
    "UNATTRIBUTED_VERTICES",
    "UNATTRIBUTED_COMPUTE_SETS",
    "UNATTRIBUTED_EXCHANGES",
    "PROGRAM_KINDS",
    "CAPABILITIES",
    "CONFIDENCES",
    "EXACT_SIMULATED_COLUMNS",
    "EXACT_SIMULATED_METRICS",
    "column_confidence",
    "combined_confidence",
    "metric_confidence",
    "CATEGORY_GROUPS",
    "CATEGORY_GROUP_NAMES",
    "Column",
    "HIGHER_IS_BETTER",
    "METRICS",
    "MODEL_STATE_KINDS",
    "WEIGHT_COPY_ROLES",
    "METRIC_UNITS",
    "PHASES",
    "DEVICE_PHASES",
    "Report",
    "ReportMeta",
    "SCHEMAS",
    "TABLES",
    "TRACE_TYPES",
    "Target",
    "VARIABLE_KINDS",
    "ROLES",
    "OPTIMIZER_STATE_WHICH",
    "LOCATIONS",
    "COLUMN_DEFAULTS",
    "COMPACT_TEXT_COLUMNS",
    "empty_frame",
    "format_shape",
    "make_frame",
    "parse_shape",
    "run_span_cycles",
    "runtime_rows",
    "variables_convention",
    "validate_frame",
]
