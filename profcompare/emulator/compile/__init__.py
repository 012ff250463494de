"""The compile model: turns a LoweredProgram into the report Poplar's autoReport would give.

``compile_program(program, target)`` lowers the program to program steps (programs.py), maps
every tensor to tiles (mapping.py), computes liveness (liveness.py), memory per tile and
category (memory.py, code.py) and cycles per step (cycles.py), and assembles a simulated
:class:`profcompare.model.Report` (report.py). Every rule and constant is explained in
docs/ipu-model.md; device numbers live in profcompare/emulator/targets.py.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from profcompare._version import __version__
from profcompare.emulator.compile import report as _report
from profcompare.emulator.compile.code import code_model
from profcompare.emulator.compile.cycles import (
    CostModel,
    first_host_transfer,
    RunOpening,
    run_opening,
    static_bytes,
    static_cycles,
)
from profcompare.emulator.compile.liveness import (
    instances,
    step_totals,
    step_totals_per_ipu,
    tile_peaks,
    tile_peaks_and_span,
)
from profcompare.emulator.compile.loaded_code import (
    LoadedCode,
    loaded_code,
    loaded_code_rows,
    select,
    with_code_instances,
    with_loaded_code,
)
from profcompare.emulator.compile.memory import build_storage, region_parts, tile_memory
from profcompare.emulator.compile.placement import (
    layout_of,
    run_timeline,
    timeline_arrivals,
    timeline_execution_frame,
    timeline_holds,
)
from profcompare.emulator.compile.operations import operations_frame
from profcompare.emulator.compile.program_tree import program_tree
from profcompare.emulator.compile.programs import ProgramSteps, lower_to_steps
from profcompare.emulator.compile.vertices import vertex_tables
from profcompare.emulator.compile.trace import HostCopyShape, every_run_columns, step_places as trace_places, trace_columns
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import DeviceSpec, get_device
from profcompare.model import CAPABILITIES, PHASES, Report, ReportMeta


def producer() -> str:
    """The producer string of simulated reports: ``profcompare-sim <version>``."""
    return f"profcompare-sim {__version__}"


@dataclass(frozen=True, eq=False)
class CompiledProgram:
    """A compiled program: its graph-profile report, OOM verdict and per-step cycle model."""

    report: Report  # graph profile (execution table empty)
    device: DeviceSpec
    steps: ProgramSteps
    static_cycles: np.ndarray  # (static steps, phases)
    oom: bool
    tiles_over_budget: int
    worst_tile: int
    worst_tile_bytes: int
    phase_cycles: Mapping[str, int] = field(default_factory=dict)  # one run, per phase
    timeline: tuple | None = None  # (placement.RunRow list, critical cycles per phase) of a pipelined program
    #: graphs whose code ``remote_code_load`` loads: code per tile, Streaming Memory bytes and live
    #: intervals (modelled; not always live, so not in the code categories; loaded_code.py)
    loaded_code: tuple[LoadedCode, ...] = ()
    #: per static step: the IPUs it runs on and the group it sits in (trace.py)
    step_places: tuple[tuple[tuple[int, ...], ...], tuple[str, ...]] = ((), ())
    #: (executed index of the run's first host transfer's Begin step, cycles the run spends before
    #: it: two control copies, the host's start-of-run wait and the program Switch's control
    #: broadcast; cycles.run_opening), or None
    opening: RunOpening | None = None
    #: IPUs of one replica
    ipus_per_replica: int = 1
    #: per static step: the bytes it moves per replica, in plus out (-1: none; cycles.static_bytes)
    static_bytes: np.ndarray | None = None

    @property
    def cycles_per_step(self) -> int:
        """Estimated device cycles of one run of the main program (one weight update)."""
        return int(sum(v for p, v in self.phase_cycles.items() if p != "runtime"))

    @property
    def seconds_per_step(self) -> float:
        """Estimated wall-clock seconds of one ``session.run``: device time plus host/runtime time
        (the sum of every phase, divided by the clock)."""
        return sum(self.phase_cycles.values()) / self.device.clock_hz

    def oom_message(self) -> str:
        """Poplar-like one-line message for a program that does not fit (empty if it fits)."""
        if not self.oom:
            return ""
        t = self.report.meta.target
        return (
            f"Out of memory: the program does not fit on the {t.architecture} target "
            f"({t.tiles_per_replica} tiles per replica, {t.bytes_per_tile} bytes per tile): "
            f"{self.tiles_over_budget} tiles over budget, worst tile {self.worst_tile} uses "
            f"{self.worst_tile_bytes} of {t.bytes_per_tile} bytes (including gaps)"
        )

    def execution_frame(self, runs: int):  # -> pd.DataFrame
        """The ``execution`` table for ``runs`` profiled runs (see report.execution_frame)."""
        if self.timeline is not None:
            return timeline_execution_frame(self.steps, self.timeline[0], runs, self.runtime_cycles,
                                            static_bytes=self.static_bytes)
        return _report.execution_frame(self.steps, self.static_cycles, runs, self.runtime_cycles, opening=self.opening,
                                       static_bytes=self.static_bytes)

    @property
    def runtime_cycles(self) -> int:
        """Host/runtime time of one run outside the device, in device cycles (the runtime phase)."""
        return int(self.phase_cycles.get("runtime", 0))

    def with_execution(self, runs: int) -> Report:
        """The report with an execution profile of ``runs`` runs and the trace of every run
        (graph profile only if 0)."""
        if runs <= 0:
            return self.report
        r = self.report
        meta = r.meta.replace(capabilities=frozenset(r.meta.capabilities | {"execution", "trace"}))
        execution = self.execution_frame(runs)
        arrivals = timeline_arrivals(self.timeline[0]) if self.timeline is not None else None
        holds = timeline_holds(self.timeline[0]) if self.timeline is not None else None
        # run 0's blocks as columns, each taken away as its repeats for every run are made
        trace = (every_run_columns(trace_columns(execution, self.steps, *self.step_places,
                                                 host=HostCopyShape.of(self.device, self.ipus_per_replica),
                                                 arrivals=arrivals, opening=self.opening, holds=holds), execution)
                 if self.step_places[0] else None)
        return Report(meta=meta, tiles=r.tiles, categories=r.categories, variables=r.variables,
                      liveness=r.liveness, code=r.code, execution=execution,
                      remote_buffers=r.remote_buffers, programs=r.programs, operations=r.operations,
                      variable_tiles=r.variable_tiles,
                      vertices=r.vertices, compute_sets=r.compute_sets, exchanges=r.exchanges,
                      **({"trace": trace} if trace is not None else {}))


def program_steps(program: LoweredProgram, costs: CostModel) -> ProgramSteps:
    """``program``'s steps with the matmul choices the cost model makes: in how many compute sets
    each matmul reduces its partials, and which input-gradient matmuls take the weights' copy path."""
    splits = {op.id: costs.reduce_compute_sets(op) for op in program.ops.values()
              if op.type.startswith("MatMul") and op.inputs and op.outputs}
    copy_path = frozenset(op.id for op in program.ops.values() if costs.weights_by_copy(op))
    return lower_to_steps(program, splits, copy_path)


def compile_program(program: LoweredProgram, target: DeviceSpec | str | None = None, *,
                    samples_per_step: int | None = None) -> CompiledProgram:
    """Compile ``program`` for ``target`` (a DeviceSpec or name; default Mk2).

    Returns a :class:`CompiledProgram` whose ``report`` is the simulated graph profile
    (meta.simulated True, producer ``profcompare-sim <version>``, meta.oom set when a tile
    exceeds its memory including gaps).
    """
    device = target if isinstance(target, DeviceSpec) else get_device(target)
    layout = layout_of(program, device.tiles_per_ipu)
    ipus_per_replica = layout.ipus
    num_tiles = layout.total_tiles
    # an op's tensors spread over the compute tiles of one IPU (placement.py)
    costs = CostModel(program, device, layout.compute_tiles)
    steps = program_steps(program, costs)
    storage = build_storage(program, steps, costs, device, num_tiles, layout)
    code = code_model(program, steps, storage, costs, device, num_tiles, layout)
    loaded = loaded_code(program, steps, code.loaded_tile_bytes())
    nal_rows = {t: r for t, r in storage.row_of.items() if storage.storage[r] in ("intermediate", "variable")}
    inst = instances(program, steps, nal_rows, storage.temp_rows)
    # code loaded by remote_code_load: a not-always-live row per loaded graph (loaded_code.py)
    storage = with_loaded_code(storage, loaded)
    inst = with_code_instances(inst, storage, loaded)
    n_exec = steps.num_executed
    totals = step_totals(inst, storage.row_bytes, n_exec)
    has_host = bool(program.streams) or bool(program.remote_buffers) or any(
        steps.op_class[o] in ("host_load", "host_store", "remote_load", "remote_store") for o in program.ops)
    # each tile's span from the data live together at each step (memory.RegionParts)
    parts = region_parts(storage, device, code.categories, has_host)
    peak_all, peak_il, peak_flex, peak_span, il_at_peak = tile_peaks_and_span(
        inst, storage.tile_bytes, storage.interleaved, n_exec, None if loaded else parts.span)
    peak_code = None
    if loaded:
        is_code = loaded_code_rows(storage)[inst.row]
        _, peak_il, peak_flex = tile_peaks(select(inst, ~is_code), storage.tile_bytes, storage.interleaved, n_exec)
        peak_code = tile_peaks(select(inst, is_code), storage.tile_bytes, storage.interleaved, n_exec)[0]
    mem = tile_memory(storage, device, code.categories, peak_all, peak_il, peak_flex, has_host, peak_code, peak_span,
                      il_at_peak)
    code_bytes = {lc.graph: lc.streaming_memory_bytes for lc in loaded}
    cyc = static_cycles(steps, costs, loaded_code_bytes=code_bytes)
    over = mem.including_gaps > device.bytes_per_tile
    worst = int(np.argmax(mem.including_gaps)) if len(mem.including_gaps) else 0
    tgt = device.target(program.replicas, ipus_per_replica)
    capabilities = set(CAPABILITIES) - {"execution", "trace"}
    meta = ReportMeta(
        source="",
        format="store",
        producer=producer(),
        simulated=True,
        target=tgt,
        oom=bool(over.any()),
        capabilities=frozenset(capabilities),
        samples_per_step=samples_per_step,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        addons_generation=_addons_generation(),
        session_options=program.session_options,
        replication=_report.replication(program, steps, cyc, layout.io_tiles),
    )
    from profcompare.emulator.compile.attribution import trace

    # one walk of the program attributes both the variables and the remote buffers
    provenance = trace(program, steps)
    places = trace_places(program, steps, ipus_per_replica)
    runtime = math.ceil(device.run_overhead_seconds * device.clock_hz)
    first = first_host_transfer(steps)
    opening = run_opening(device, first, ipus_per_replica) if first is not None else None
    if opening is not None:
        # the host's start-of-run work is spent while the device waits in its opening control copy:
        # device time in the trace, so it leaves the host/runtime time (docs/ipu-model.md section 12)
        runtime = max(0, runtime - device.run_start_wait_cycles)
    phases = dict(_report.phase_totals(steps, cyc, runtime_cycles=runtime))
    if opening is not None:
        for phase, value in opening.phases:
            phases[phase] = phases.get(phase, 0) + value
    timeline = None
    if program.pipelines:
        # stages of a pipeline overlap on their IPUs: one run is the critical path (placement.py)
        rows, critical = run_timeline(program, steps, cyc, opening=opening, ipus=ipus_per_replica,
                                      step_ipus=places[0], exchange_overhead=device.exchange_overhead_cycles,
                                      exchange_latency=device.exchange_latency_cycles)
        timeline = (rows, critical)
        phases = {p: int(critical[i]) for i, p in enumerate(PHASES)}
        phases["runtime"] = phases.get("runtime", 0) + runtime
    categories = _report.categories_frame(mem)
    device_cycles = sum(v for p, v in phases.items() if p != "runtime")
    variables = _report.variables_frame(storage, inst, program, steps, provenance)
    tree = program_tree(program, steps, places[0])
    variable_tiles = _report.variable_tiles_frame(
        storage, variables, _report.variable_storage_rows(storage, inst), device.tiles_per_ipu, mem.including_gaps)
    rep = Report.build(
        meta,
        tiles=_report.tiles_frame(mem, device.tiles_per_ipu),
        categories=categories,
        variables=variables,
        variable_tiles=variable_tiles,
        # a multi-IPU program: one row per step and IPU (the per-IPU curves), summing to ``totals``
        liveness=_report.liveness_frame(steps, totals if ipus_per_replica == 1 else
                                        step_totals_per_ipu(inst, storage.tile_bytes, n_exec, ipus_per_replica)),
        code=code.table,
        remote_buffers=_report.remote_buffers_frame(program, steps, provenance),
        programs=tree,
        operations=operations_frame(program, steps, code, cyc, categories, device_cycles, places[0],
                                    provenance=provenance),
        **vertex_tables(program, steps, code, device, cyc, categories, tree, places[0]),
    )
    return CompiledProgram(
        report=rep,
        device=device,
        steps=steps,
        static_cycles=cyc,
        static_bytes=static_bytes(steps, costs, code_bytes),
        oom=bool(over.any()),
        tiles_over_budget=int(over.sum()),
        worst_tile=worst,
        worst_tile_bytes=int(mem.including_gaps[worst]) if len(mem.including_gaps) else 0,
        phase_cycles=phases,
        timeline=timeline,
        loaded_code=loaded,
        step_places=places,
        opening=opening,
        ipus_per_replica=ipus_per_replica,
    )


__all__ = ["CompiledProgram", "compile_program", "producer", "program_steps"]


def _addons_generation() -> str | None:
    """The emulated popxl-addons generation (None when $PROFCOMPARE_SIM_ADDONS is invalid: the
    workload refuses that itself)."""
    from profcompare.backend.addons_generation import UnknownGenerationError, current

    try:
        return current()
    except UnknownGenerationError:
        return None
