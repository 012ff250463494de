"""Read Poplar's own profiles (``profile.pop`` + optional ``debug.cbor``) through the SDK's ``pva``.

Only the libpva Python API documented in ``shared/reference/pva.md`` is used; which parts of it
are confirmed by Graphcore code and which are assumptions is listed in
``docs/pva-adapter.md``. Attributes that are not confirmed are read with ``getattr`` and a
default, and ``meta.capabilities`` names only the tables that could actually be filled.

``pva`` is imported lazily, on the first read: without the Poplar SDK, reading a
``profile.pop`` raises :class:`~profcompare.errors.SdkUnavailableError` explaining the two
ways out (enable the SDK, or export to our store format on a machine that has it).

The slow parts of the object tree (``alwaysLiveVariables``, the per-step variable lists of
``livenessProgramSteps``) are walked once, into plain Python lists, and turned into
DataFrames in one go.
"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, cast

import numpy as np
import pandas as pd

from profcompare.errors import (
    OutputExistsError,
    ProfcompareError,
    ProfileWarning,
    ReportFormatError,
    SdkUnavailableError,
)
from profcompare.model import (
    CATEGORY_GROUPS,
    Report,
    ReportMeta,
    Target,
    UNATTRIBUTED_COMPUTE_SETS,
    UNATTRIBUTED_EXCHANGES,
    UNATTRIBUTED_OPERATION,
    UNATTRIBUTED_VERTICES,
    make_frame,
    operations_from_rows,
    programs_from_rows,
    table_from_rows,
    trace_from_blocks,
)
from profcompare.readers.name_attribution import attribute_names

#: ``progress(part, done, total)``: told which part of the profile is being read ("tiles",
#: "liveness", "code", "programs", "operations", "vertices", "execution") and how far along it is.
Progress = Callable[[str, int, int], None]

#: libpva ``IPU.Architecture`` names -> our Target.architecture. ``Ipu2`` is confirmed
#: (reference/pva.md, POPART report_test). ``Ipu21`` is the C600 PCIe card (a Mk2-class IPU
#: with FP8 support), not Bow: Bow systems report ``Ipu2`` at about 1.85 GHz, so ``Ipu2`` is
#: Bow when the clock is at least :data:`BOW_MIN_CLOCK_HZ` (see :func:`architecture_name`).
ARCHITECTURES = {"Ipu1": "Mk1", "Ipu2": "Mk2", "Ipu21": "C600"}
#: Mk2 (GC200) runs at about 1.33-1.35 GHz, Bow at 1.85 GHz (ipu_facts 1.1): 1.8 GHz separates them.
BOW_MIN_CLOCK_HZ = 1.8e9
#: Clock used when a profile's target reports none (IPU Model and CPU targets give 0 or less):
#: the Mk2 clock (ipu_facts 1.1), with a warning.
FALLBACK_CLOCK_HZ = 1.33e9


def architecture_name(pva_name: str, clock_hz: float) -> str:
    """Our architecture name for a pva ``IPU.Architecture`` name and the target clock."""
    name = ARCHITECTURES.get(pva_name, pva_name)
    if name == "Mk2" and clock_hz >= BOW_MIN_CLOCK_HZ:
        return "Bow"
    return name

#: Program type name -> execution phase. An assumption: pva has no phase notion. Streaming
#: Memory transfers are StreamCopy programs too and cannot be told apart from host I/O here.
#: ``ExternalSync`` / ``InternalSync`` are not pva program types but Graph Analyser's labels of a
#: ``Sync`` program named "External" / "Internal" (see :func:`sync_label`). Sync steps are
#: waiting: their intervals cover the steps they wait for, so they are never added on top.
PHASE_OF_PROGRAM_TYPE = {
    "OnTileExecute": "compute",
    "OnEveryTileSwitch": "compute",
    "DoExchange": "exchange",
    "GlobalExchange": "collective",
    "StreamCopyBegin": "host_io",
    "StreamCopyMid": "host_io",
    "StreamCopyEnd": "host_io",
    "Sync": "sync",
    "SyncAns": "sync",
    "Sans": "sync",
}


def sync_label(program_type: str, program_name: str) -> str | None:
    """``ExternalSync`` / ``InternalSync`` for a pva ``Sync`` program named "External..." /
    "Internal..." (Graph Analyser's trace labels), ``SyncAns`` for a SyncAns step, else None."""
    if program_type == "SyncAns":
        return "SyncAns"
    if program_type != "Sync":
        return None
    lowered = program_name.strip().lower()
    if lowered.startswith("external"):
        return "ExternalSync"
    if lowered.startswith("internal"):
        return "InternalSync"
    return "Sync"


def phase_of(program_type: str, program_name: str = "") -> str:
    """The execution phase of a pva program, by type and (for syncs) name."""
    if sync_label(program_type, program_name) is not None:
        return "sync"
    return PHASE_OF_PROGRAM_TYPE.get(program_type, "compute")

#: Program type name -> code category of its ``codeBytesByTile`` (exchange code). Confirmed
#: for DoExchange (internal exchange); the other two are assumptions.
EXCHANGE_CODE_CATEGORY = {
    "DoExchange": "internalExchangeCode",
    "GlobalExchange": "globalExchangeCode",
    "StreamCopyMid": "hostExchangeCode",
}

#: Memory categories read with confirmed attribute names (reference/pva.md section 1.2); the
#: others of model.CATEGORY_GROUPS are tried too but are assumptions.
CONFIRMED_CATEGORIES = (
    "vertexCode",
    "internalExchangeCode",
    "globalExchangeCode",
    "hostExchangeCode",
    "controlCode",
    "vertexInstanceState",
    "vectorListDescriptor",
    "constant",
)

# Name fragments -> variable kind, tried in order (a heuristic: pva has no variable kinds).
# Poplar's control variables (broadcastProgramId...) hold program ids, not model data.
_KIND_PATTERNS: tuple[tuple[str, str], ...] = (
    ("other", r"^broadcastprogramid"),
    ("remote_staging", r"remote"),
    ("accumulator", r"accum|accl"),
    ("optimizer_state", r"adam|lamb|first_order|second_order|momentum|optim|(?:^|[/._])[mv](?:$|[/._])"),
    ("gradient", r"grad"),
    ("collective_buffer", r"collective|allreduce|all_reduce|reducescatter|allgather"),
    ("stream", r"stream|h2d|d2h|host_load|host_store"),
    ("constant", r"const"),
    ("weight", r"weight|bias|kernel|embedding|gamma|beta|scale"),
)


def _hint(path: pathlib.Path) -> str:
    return (
        "install the Poplar SDK and source its enable script, or run "
        f"`profcompare export {path} -o profile.sqlite` on a machine that has it and open that file"
    )


def import_pva(path: str | os.PathLike[str] = "profile.pop") -> ModuleType:
    """Import and return the SDK's ``pva`` module, or raise SdkUnavailableError with a hint."""
    try:
        import pva
    except (ImportError, RuntimeError, OSError) as exc:
        # RuntimeError: pva's native module refuses a mismatched Python version.
        raise SdkUnavailableError(
            f"cannot read {path}: the Poplar SDK's `pva` module is not available ({exc}); {_hint(pathlib.Path(path))}"
        ) from None
    return cast(ModuleType, pva)


def read_pva(
    profile_path: str | os.PathLike[str],
    debug_path: str | os.PathLike[str] | None = None,
    *,
    not_always_live_variables: bool = True,
    code: bool = True,
    progress: Progress | None = None,
    pva_module: Any = None,
) -> Report:
    """Read a Poplar ``profile.pop`` (and ``debug.cbor`` if given) into a Report.

    Returns a Report with ``meta.format == "pva"`` whose tables are filled as described in
    ``docs/pva-adapter.md``; ``meta.capabilities`` lists the filled tables. With
    ``not_always_live_variables`` false, the per-step variable lists are not walked (faster on
    big profiles) and ``variables`` holds only always-live variables. With ``code`` false the
    per-program code (``controlCodeByTile``, ``codeBytesByTile``: the slow part on large
    models) is not read and the ``code`` table is absent. ``progress(part, done, total)`` is
    called as each part is read. ``pva_module`` replaces the SDK's ``pva`` module (for tests).
    ``variable_tiles`` stays empty: pva has which tiles hold a variable only as lowered variables
    per tile, slow to walk on large profiles (docs/pva-adapter.md). Problems that leave the rest readable (no clock, an execution walk pybind refuses) are
    :class:`~profcompare.errors.ProfileWarning` warnings, not errors. Raises SdkUnavailableError without ``pva`` and
    ReportFormatError when pva cannot open the file or its content is not as documented.
    """
    profile = pathlib.Path(profile_path)
    if not profile.is_file():
        what = "a directory; give the profile.pop file in it" if profile.is_dir() else "no such file"
        raise ReportFormatError(f"{profile}: {what}")
    if debug_path is not None and not pathlib.Path(debug_path).is_file():
        raise ReportFormatError(f"{debug_path}: no such file")
    pva = pva_module if pva_module is not None else import_pva(profile)
    try:
        if debug_path is None:
            raw = pva.openReport(str(profile))
        else:
            raw = pva.openReport(str(profile), str(debug_path))
    except Exception as exc:  # noqa: BLE001 - pybind raises RuntimeError, IndexError, ...: all mean "unreadable"
        raise ReportFormatError(f"{profile}: pva cannot open it: {exc}") from None
    try:
        analysis = getattr(pva, "OperationAnalysis", None) if debug_path is not None else None
        return report_from_pva(raw, source=str(profile), not_always_live_variables=not_always_live_variables,
                               code=code, progress=progress, operation_analysis=analysis)
    except ProfcompareError as exc:
        if isinstance(exc, ReportFormatError):
            raise
        raise ReportFormatError(f"{profile}: unexpected profile content: {exc}") from None
    except (AttributeError, TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
        raise ReportFormatError(f"{profile}: unexpected profile content ({type(exc).__name__}: {exc})") from None


def export_pva(
    profile: str | os.PathLike[str],
    out: str | os.PathLike[str],
    debug: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    *,
    code: bool = True,
    progress: Progress | None = None,
    pva_module: Any = None,
) -> pathlib.Path:
    """Read ``profile`` through pva and write it as a store file ``out``; return ``out``.

    Checks ``out`` before the (slow) read: OutputExistsError if it exists and not ``overwrite``.
    """
    from profcompare.readers.store import is_store_header, read_header, write_report

    target = pathlib.Path(out)
    if target.exists() and not overwrite:
        raise OutputExistsError(f"{target} already exists (pass overwrite/--force to replace it)")
    source = pathlib.Path(profile)
    if source.is_file():
        try:
            header = read_header(source)
        except OSError as exc:
            raise ReportFormatError(f"{source}: cannot read: {exc.strerror or exc}") from None
        if is_store_header(header):
            raise ReportFormatError(f"{source}: already a profcompare store report; open it directly, no export needed")
    report = read_pva(profile, debug, code=code, progress=progress, pva_module=pva_module)
    return write_report(report, target, overwrite=overwrite)


# --------------------------------------------------------------------------------------------
# object tree -> Report


def _name(value: Any) -> str:
    """String of a pva enum value (``.name``) or of anything else."""
    name = getattr(value, "name", None)
    return str(name) if name is not None else str(value)


def _int(value: Any, default: int = 0) -> int:
    return default if value is None else int(value)


def _warn(message: str) -> None:
    warnings.warn(message, ProfileWarning, stacklevel=3)


def _guarded(part: str, read: Callable[[], Any], empty: Any) -> Any:
    """``read()``, or ``empty`` with a warning when pybind fails mid-walk (RuntimeError).

    A damaged or unusual execution or program section then costs that table, not the report.
    """
    try:
        return read()
    except RuntimeError as exc:
        _warn(f"the {part} could not be read ({exc}); that table is left empty")
        return empty


def report_from_pva(raw: Any, *, source: str, not_always_live_variables: bool = True, code: bool = True,
                    progress: Progress | None = None, operation_analysis: Callable[[Any], Any] | None = None
                    ) -> Report:
    """Build a Report from an opened ``pva.Report`` object tree (see :func:`read_pva`).
    ``operation_analysis`` is pva's ``OperationAnalysis`` (given when debug.cbor was opened with
    the profile): without it the ``operations`` table is empty and not in the capabilities."""
    tell = progress or (lambda part, done, total: None)
    compilation = raw.compilation
    target = _target(compilation.target)
    capabilities: set[str] = set()

    tell("tiles", 0, 1)
    tiles, categories, oom = _tiles(compilation, target)
    if len(tiles):
        capabilities.add("tiles")
    if len(categories):
        capabilities.add("categories")

    tell("liveness", 0, 1)
    liveness, nal_steps, nal_names, nal_sizes = _liveness(compilation, not_always_live_variables)
    if len(liveness):
        capabilities.add("liveness")

    variables = _variables(compilation, nal_steps, nal_names, nal_sizes)
    if variables is not None:
        capabilities.add("variables")
    else:
        variables = make_frame("variables")

    code_frame = _guarded("per-program code", lambda: _code(compilation, tell), None) if code else None
    if code_frame is not None:
        capabilities.add("code")
    else:
        code_frame = make_frame("code")

    tell("programs", 0, 1)
    programs = _guarded("program tree", lambda: _programs(compilation), make_frame("programs"))
    if len(programs):
        capabilities.add("programs")

    operations = make_frame("operations")
    if operation_analysis is not None:
        tell("operations", 0, 1)
        operations = _guarded("operations", lambda: _operations(operation_analysis(raw), categories), operations)
    if len(operations):
        capabilities.add("operations")

    tell("vertices", 0, 1)
    empty_vertex_tables = {t: make_frame(t) for t in ("vertices", "compute_sets", "exchanges")}
    vertex_frames = _guarded("vertices, compute sets and exchanges",
                             lambda: _vertex_tables(compilation, target, categories), empty_vertex_tables)
    if any(len(frame) for frame in vertex_frames.values()):
        capabilities.add("vertices")

    tell("execution", 0, 1)
    execution = _guarded("execution profile", lambda: _execution(getattr(raw, "execution", None)),
                         make_frame("execution"))
    if len(execution):
        capabilities.add("execution")
    trace = make_frame("trace")
    if len(execution):  # a walk that failed above is not tried (and warned about) twice
        trace = _guarded("execution trace", lambda: _trace(getattr(raw, "execution", None), target), trace)
    if len(trace):
        capabilities.add("trace")

    version = getattr(raw, "poplarVersion", None)
    version_text = getattr(version, "string", None) or (
        ".".join(str(getattr(version, k, "?")) for k in ("major", "minor", "point")) if version is not None else "unknown"
    )
    meta = ReportMeta(
        source=source,
        format="pva",
        producer=f"Poplar {version_text}",
        simulated=False,
        target=target,
        oom=oom,
        capabilities=frozenset(capabilities),
        created=None,
    )
    return Report.build(
        meta,
        tiles=tiles,
        categories=categories,
        variables=variables,
        liveness=liveness,
        code=code_frame,
        execution=execution,
        trace=trace,
        programs=programs,
        operations=operations,
        **vertex_frames,
    )


def _target(t: Any) -> Target:
    num_ipus = int(t.numIPUs)
    tiles_per_ipu = int(t.tilesPerIpu)
    num_replicas = _int(getattr(t, "numReplicas", None), 1) or 1
    ipus_per_replica = _int(getattr(t, "ipusPerReplica", None), max(1, num_ipus // num_replicas)) or 1
    arch = _name(getattr(t, "architecture", "unknown"))
    clock = float(getattr(t, "clockFrequency", 0) or 0)
    if not math.isfinite(clock) or clock <= 0:
        # IPU Model and CPU targets report no clock: cycles are still cycles, seconds assume Mk2
        _warn(f"the profile's target reports clock frequency {clock:g} Hz (an IPU Model or CPU target?); "
              f"assuming {FALLBACK_CLOCK_HZ / 1e9:.2f} GHz to turn cycles into time")
        clock = FALLBACK_CLOCK_HZ
    return Target(
        architecture=architecture_name(arch, clock),
        num_ipus=num_ipus,
        tiles_per_ipu=tiles_per_ipu,
        bytes_per_tile=int(t.bytesPerTile),
        clock_hz=clock,
        num_replicas=num_replicas,
        ipus_per_replica=ipus_per_replica,
    )


def _tiles(compilation: Any, target: Target) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    all_tiles = list(compilation.tiles)
    # The model is per replica; a profile listing more tiles than one replica has is cut to
    # the first replica (an assumption: replicas are compiled identically).
    tiles = all_tiles[: target.tiles_per_replica]
    if not tiles:
        return make_frame("tiles"), make_frame("categories"), False
    present = category_names(getattr(tiles[0].memory, "category", None))
    including, excluding, always, not_always, overflowed = [], [], [], [], []
    overflow_excluding: list[int | None] = []
    per_category: dict[str, list[int]] = {c: [] for c in present}
    for tile in tiles:
        memory = tile.memory
        including.append(int(memory.total.includingGaps))
        excluding.append(int(memory.total.excludingGaps))
        always.append(int(memory.alwaysLiveBytes))
        not_always.append(int(memory.notAlwaysLiveBytes))
        overflowed.append(_int(getattr(getattr(memory, "overflowed", None), "includingGaps", None)))
        beyond = getattr(getattr(memory, "overflowed", None), "excludingGaps", None)
        overflow_excluding.append(None if beyond is None else int(beyond))
        cats = getattr(memory, "category", None)
        for c in present:
            per_category[c].append(_int(getattr(getattr(cats, c, None), "total", None)))
    count = len(tiles)
    tile_index = np.arange(count, dtype=np.int64)
    known = {c: v for c, v in per_category.items() if c in CATEGORY_GROUPS}
    names = list(present)
    totals = {c: int(sum(v)) for c, v in per_category.items()}
    if present:
        # What no category claims stays visible as "unattributed" instead of vanishing.
        claimed = np.sum([np.asarray(v, dtype=np.int64) for v in per_category.values()], axis=0)
        unattributed = np.maximum(np.asarray(excluding, dtype=np.int64) - claimed, 0)
        known["unattributed"] = unattributed.tolist()
        names.append("unattributed")
        totals["unattributed"] = int(unattributed.sum())
    frame = make_frame(
        "tiles",
        {
            "tile": tile_index,
            "ipu": tile_index // target.tiles_per_ipu,
            "bytes_including_gaps": including,
            "bytes_excluding_gaps": excluding,
            "always_live_bytes": always,
            "not_always_live_peak_bytes": not_always,
            # Regions (reference/pva.md 1.2, 2.2): pva gives a tile's overflow
            # (memory.overflowed.excludingGaps) and its two totals, hence its gaps; no attribute
            # for the non-interleaved / interleaved split is documented, so those stay <NA>.
            "overflow_bytes": pd.array(overflow_excluding, dtype="Int64"),
            "gap_bytes": np.asarray(including, dtype=np.int64) - np.asarray(excluding, dtype=np.int64),
            **known,
        },
    )
    categories = make_frame(
        "categories",
        {
            "category": names,
            "group": [CATEGORY_GROUPS.get(c, "other") for c in names],
            "bytes": [totals[c] for c in names],
        },
    )
    oom = any(overflowed) or max(including) > target.bytes_per_tile
    return frame, categories, bool(oom)


def category_names(categories: Any) -> list[str]:
    """Every memory category a pva ``tile.memory.category`` object has: its public attributes
    with a ``.total`` (known names first, in :data:`CATEGORY_GROUPS` order, then the others
    sorted). Discovery rather than a fixed list: a category we do not know still counts."""
    if categories is None:
        return []
    found = set()
    for name in dir(categories):
        if name.startswith("_"):
            continue
        try:
            value = getattr(categories, name)
        except Exception:  # noqa: BLE001 - a property pybind cannot produce is not a category
            continue
        if not callable(value) and getattr(value, "total", None) is not None:
            found.add(name)
    known = [c for c in CATEGORY_GROUPS if c in found and c != "unattributed"]
    return known + sorted(found - set(CATEGORY_GROUPS))


def _liveness(compilation: Any, walk_variables: bool) -> tuple[pd.DataFrame, list[int], list[str], list[int]] :
    steps = getattr(compilation, "livenessProgramSteps", None)
    programs: list[str] = []
    types: list[str] = []
    nal_bytes: list[int] = []
    var_steps: list[int] = []
    var_names: list[str] = []
    var_sizes: list[int] = []
    for index, step in enumerate(steps or ()):
        program = step.program
        programs.append(str(program.name))
        types.append(_name(program.type))
        memory = step.notAlwaysLiveMemory
        nal_bytes.append(int(memory.bytes))
        if walk_variables:
            for variable in getattr(memory, "variables", None) or ():
                var_steps.append(index)
                var_names.append(str(variable.name))
                var_sizes.append(int(variable.size))
    frame = make_frame(
        "liveness",
        {
            "step": np.arange(len(programs), dtype=np.int64),
            "program": programs,
            "program_type": types,
            "not_always_live_bytes": nal_bytes,
        },
    )
    return frame, var_steps, var_names, var_sizes


def guess_kinds(names: pd.Series, always_live: np.ndarray) -> list[str]:
    """Guess a variable kind from each name (pva has none); returns one of model.VARIABLE_KINDS.

    First matching pattern wins (case-insensitive); unmatched names are ``activation`` when
    not always live, else ``other``. A heuristic documented in docs/pva-adapter.md.
    """
    lower = names.astype(object).str.lower()
    kinds = np.where(always_live, "other", "activation").astype(object)
    decided = np.zeros(len(names), dtype=bool)
    for kind, pattern in _KIND_PATTERNS:
        hit = lower.str.contains(pattern, regex=True).to_numpy(dtype=bool) & ~decided
        kinds[hit] = kind
        decided |= hit
    return cast(list[str], kinds.tolist())


def _variables(
    compilation: Any, nal_steps: list[int], nal_names: list[str], nal_sizes: list[int]
) -> pd.DataFrame | None:
    always = getattr(compilation, "alwaysLiveVariables", None)
    if always is None and not nal_names:
        return None
    names: list[str] = []
    sizes: list[int] = []
    for variable in always or ():
        name = str(variable.name)
        # Pseudo-variables named after memory categories (vertexCode, controlId, ...) are
        # code and metadata, already counted in the categories table.
        if name in CATEGORY_GROUPS:
            continue
        names.append(name)
        sizes.append(int(variable.size))
    always_frame = pd.DataFrame({"name": pd.Series(names, dtype=object), "bytes": np.asarray(sizes, dtype=np.int64)})
    always_frame = always_frame.groupby("name", sort=False)["bytes"].sum().reset_index()

    nal = pd.DataFrame(
        {
            "step": np.asarray(nal_steps, dtype=np.int64),
            "name": pd.Series(nal_names, dtype=object),
            "bytes": np.asarray(nal_sizes, dtype=np.int64),
        }
    )
    # A parameter sometimes shows up as not-always-live in a few early steps (reference/pva.md
    # quirk); the always-live entry wins.
    nal = nal[~nal["name"].isin(set(always_frame["name"]))]
    intervals = nal.groupby("name", sort=False).agg(
        bytes=("bytes", "max"), first_step=("step", "min"), last_step=("step", "max")
    ).reset_index()

    count_always = len(always_frame)
    all_names = pd.concat([always_frame["name"], intervals["name"]], ignore_index=True).astype(object)
    always_live = np.concatenate([np.ones(count_always, dtype=bool), np.zeros(len(intervals), dtype=bool)])
    first = pd.array(
        np.concatenate([np.zeros(count_always, dtype=np.int64), intervals["first_step"].to_numpy(dtype=np.int64)]),
        dtype="Int64",
    )
    last = pd.array(
        np.concatenate([np.zeros(count_always, dtype=np.int64), intervals["last_step"].to_numpy(dtype=np.int64)]),
        dtype="Int64",
    )
    first[:count_always] = pd.NA
    last[:count_always] = pd.NA
    total = len(all_names)
    parameters, roles, which = attribute_names(all_names.tolist())
    return make_frame(
        "variables",
        {
            "name": all_names,
            "bytes": np.concatenate(
                [always_frame["bytes"].to_numpy(dtype=np.int64), intervals["bytes"].to_numpy(dtype=np.int64)]
            ),
            "always_live": always_live,
            "kind": guess_kinds(all_names, always_live),
            "dtype": [""] * total,
            "shape": [""] * total,
            "tiles": np.zeros(total, dtype=np.int64),
            "first_step": first,
            "last_step": last,
            "parameter": parameters,
            "role": roles,
            "which": which,
        },
    )


def _sum(values: Iterable[Any] | None) -> int:
    if values is None:
        return 0
    return int(sum(int(v) for v in values))


def _code(compilation: Any, tell: Progress) -> pd.DataFrame | None:
    programs = getattr(compilation, "programs", None)
    if programs is None:
        return None
    programs = list(programs)
    total = len(programs)
    names: list[str] = []
    types: list[str] = []
    categories: list[str] = []
    code_bytes: list[int] = []
    for index, program in enumerate(programs):
        if index % 256 == 0:
            tell("code", index, total)
        name = str(program.name)
        ptype = _name(program.type)
        # controlCodeByTile of a parent includes its children: count leaves only.
        if not list(getattr(program, "children", None) or ()):
            control = _sum(getattr(program, "controlCodeByTile", None))
            if control:
                names.append(name)
                types.append(ptype)
                categories.append("controlCode")
                code_bytes.append(control)
        category = EXCHANGE_CODE_CATEGORY.get(ptype)
        if category is not None:
            exchange = _sum(getattr(program, "codeBytesByTile", None))
            if exchange:
                names.append(name)
                types.append(ptype)
                categories.append(category)
                code_bytes.append(exchange)
    tell("code", total, total)
    return make_frame("code", {"name": names, "type": types, "category": categories, "code_bytes": code_bytes})


def _programs(compilation: Any) -> pd.DataFrame:
    """The ``programs`` table: the tree of ``compilation.programs`` (reference/pva.md), in tree order.

    pva lists every program, children included, so the roots are the programs no other program
    lists among its ``children``. A program listed under several parents (a function called from
    several places) is one row, under the first parent the walk meets; a cycle is not followed.
    Columns and the pva attribute each comes from:

    - id: ``program._id`` (pva's unique program id) when every program has one, else the row number;
    - parent, depth: from the ``program.children`` lists;
    - kind: ``program.type.name`` (``pva.Program.Type``); name: ``program.name``;
    - op: pva's Program does not name the op it lowers (``OperationAnalysis(...).operations[i].programs()``
      would, with debug.cbor; not read here): ``""``;
    - ipu: pva's Program gives no IPU: <NA>.
    """
    listed = getattr(compilation, "programs", None)
    if listed is None:
        return make_frame("programs")
    listed = list(listed)

    def key(program: Any) -> int:
        pid = getattr(program, "_id", None)
        if isinstance(pid, (int, np.integer)) and not isinstance(pid, bool) and pid >= 0:
            return int(pid)
        return id(program)

    def children(program: Any) -> list[Any]:
        return list(getattr(program, "children", None) or ())

    pva_ids = all(key(p) == getattr(p, "_id", None) for p in listed) and len({key(p) for p in listed}) == len(listed)
    as_child = {key(c) for p in listed for c in children(p)}
    rows: list[tuple[int, int | None, int, str, str, str, int | None]] = []
    row_id: dict[int, int] = {}
    for root in (p for p in listed if key(p) not in as_child):
        todo: list[tuple[Any, int | None, int]] = [(root, None, 0)]
        while todo:
            program, parent, depth = todo.pop()
            k = key(program)
            if k in row_id:
                continue  # already under an earlier parent (or a cycle)
            row_id[k] = k if pva_ids else len(rows)
            rows.append((row_id[k], parent, depth, _name(program.type), str(program.name), "", None))
            todo.extend((child, row_id[k], depth + 1) for child in reversed(children(program)))
    return programs_from_rows(rows)


#: Categories the operations' ``vertex_state_bytes`` reconcile with (as the simulator's).
_VERTEX_STATE_CATEGORIES = ("vertexInstanceState", "copyDescriptor")


def _json_object(text: Any) -> dict[str, Any]:
    """A debug context's JSON text as a dict ({} when absent or not a JSON object)."""
    import json

    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _operations(analysis: Any, categories: pd.DataFrame) -> pd.DataFrame:
    """The ``operations`` table from pva's ``OperationAnalysis(report).operations`` (needs
    debug.cbor; reference/pva.md "OperationAnalysis"). Operations repeat: one row per
    ``debugContext.id``, the first met. Columns and the pva attribute each comes from:

    - name: ``operation.name`` (repeated names get ``@1``, ``@2``, ...; an empty one is
      ``(debug context <id>)``);
    - debug_name: the ``op_name`` / ``opName`` key of ``debugContext.json`` (PopTorch / ONNX layers), else "";
    - type: the ``op_type`` / ``opType`` key of ``debugContext.json``, else "";
    - layer: the ``"layer"`` field of the JSON text ``debugContext.layer`` (the text itself when it
      is not JSON);
    - ipu: not given by an operation: <NA>;
    - code_bytes: over ``operation.programs()``, ``controlCodeByTile`` of the programs without
      children plus ``codeBytesByTile`` of the exchange programs (as the ``code`` table counts them);
    - exchange_code_bytes: that ``codeBytesByTile`` part;
    - vertex_state_bytes: over its OnTileExecute programs, ``computeset.vertices``'
      ``type.size`` x the sum of ``countByTile``;
    - cycles, flops: the SDK records no per-operation cycles of a run nor FLOPs here: <NA>;
    - tiles: tiles where one of its programs has control or exchange code or vertices;
    - source: ``debugContext.location.fileName``:``lineNumber``, "" when absent;
    - parameter, role: "" (unknown): nothing in the profile links an op to the variables it
      reads and writes, and names are not guessed (the memory ledger's code rows show these ops
      as "(parameter not recorded)").

    The remainder row holds what the operations leave of the report's code bytes, vertex state
    (vertexInstanceState + copyDescriptor) and exchange code (never below 0: a program shared by
    operations is counted for each).
    """
    rows: list[tuple[str, str, str, str, int | None, int, int, int, int | None, int | None, int | None, str]] = []
    seen: set[Any] = set()
    for operation in list(getattr(analysis, "operations", None) or ()):
        context = getattr(operation, "debugContext", None)
        context_id = getattr(context, "id", None)
        if context_id is not None:
            if context_id in seen:
                continue
            seen.add(context_id)
        custom = _json_object(getattr(context, "json", None))
        layer_text = getattr(context, "layer", None)
        layer = _json_object(layer_text).get("layer", layer_text if isinstance(layer_text, str) else "")
        location = getattr(context, "location", None)
        file_name = getattr(location, "fileName", None)
        line = getattr(location, "lineNumber", None)
        source = f"{file_name}:{line}" if file_name else ""
        code = exchange = vertex_state = 0
        used: set[int] = set()
        programs = operation.programs() if callable(getattr(operation, "programs", None)) else ()
        for program in programs or ():
            ptype = _name(program.type)
            per_tile: list[Iterable[Any] | None] = []
            if not list(getattr(program, "children", None) or ()):
                control = getattr(program, "controlCodeByTile", None)
                code += _sum(control)
                per_tile.append(control)
            if ptype in EXCHANGE_CODE_CATEGORY:
                exchange_by_tile = getattr(program, "codeBytesByTile", None)
                exchange += _sum(exchange_by_tile)
                per_tile.append(exchange_by_tile)
            if ptype == "OnTileExecute":
                for vertex in getattr(getattr(program, "computeset", None), "vertices", None) or ():
                    counts = list(getattr(vertex, "countByTile", None) or ())
                    vertex_state += _int(getattr(getattr(vertex, "type", None), "size", None)) * _sum(counts)
                    per_tile.append(counts)
            for values in per_tile:
                used.update(t for t, v in enumerate(values or ()) if int(v))
        rows.append((str(getattr(operation, "name", "") or ""), str(custom.get("op_name", custom.get("opName", ""))),
                     str(custom.get("op_type", custom.get("opType", ""))), str(layer or ""), None,
                     code + exchange, vertex_state, exchange, None, None, len(used), source))
        if context_id is not None and not rows[-1][0]:
            rows[-1] = (f"(debug context {context_id})", *rows[-1][1:])
    names = Counter(row[0] for row in rows)
    count: Counter[str] = Counter()
    for index, row in enumerate(rows):
        if names[row[0]] > 1:
            count[row[0]] += 1
            rows[index] = (f"{row[0]}@{count[row[0]]}", *row[1:])
    if not rows:
        return make_frame("operations")
    by_name = dict(zip(categories["category"].astype(str), categories["bytes"].astype("int64").tolist()))
    code_total = sum(v for name, v in by_name.items() if CATEGORY_GROUPS.get(name) == "code")
    vertex_total = sum(by_name.get(name, 0) for name in _VERTEX_STATE_CATEGORIES)
    exchange_total = sum(by_name.get(name, 0) for name in EXCHANGE_CODE_CATEGORY.values())
    left = (max(0, code_total - sum(r[5] for r in rows)), max(0, vertex_total - sum(r[6] for r in rows)),
            max(0, exchange_total - sum(r[7] for r in rows)))
    if any(left):
        rows.append((UNATTRIBUTED_OPERATION, "", "", "", None, *left, None, None, None, ""))
    return operations_from_rows(rows)


def _vertex_tables(compilation: Any, target: Target, categories: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The ``vertices``, ``compute_sets`` and ``exchanges`` tables (model.SCHEMAS) of one replica
    (the tiles of the first replica, as the ``tiles`` table), keyed by table name. Columns and the
    pva attribute each comes from (reference/pva.md "Programs, compute sets and vertices"):

    ``compute_sets`` -- one row per OnTileExecute program of ``compilation.programs`` with a
    ``computeset``, in the order pva lists them:

    - name: ``program.name``; program: ``program._id``; op: pva's Program does not name it: "";
    - ipu: the IPU of its tiles with a vertex when they are all on one, else <NA>;
    - vertex_types: distinct ``computeset.vertices[].type.name``;
    - vertices: the sum of every vertex's ``countByTile``;
    - vertex_state_bytes: ``type.size`` x that sum, over its vertices;
    - cycles: the largest of ``computeset.estimatedCyclesByTile`` (else of the program's;
      <NA> when absent);
    - tiles: tiles where one of its vertices has a non-zero count.

    ``exchanges`` -- one row per DoExchange, GlobalExchange or StreamCopyMid program with
    ``codeBytesByTile`` (what the ``code`` table counts as exchange code): type ``program.type.name``,
    code_bytes its sum, cycles the largest of ``program.estimatedCyclesByTile`` (<NA> when absent),
    tiles those with code; name, program, op and ipu as above.

    ``vertices`` -- one row per vertex type met in a compute set or on a tile, the most code first:
    instances and vertex_state_bytes summed over the compute sets (as above), compute_sets the
    number using it, code_bytes the sum over tiles of ``tile.vertices[].codeBytes`` for that
    ``type.name``, tiles the tiles listing it.

    Each table gets a remainder row when the report's vertexCode / vertexInstanceState / exchange
    code categories hold more than its rows (never below 0: a program listed twice).
    """
    per_replica = target.tiles_per_replica
    by_name = dict(zip(categories["category"].astype(str), categories["bytes"].astype("int64").tolist()))

    def first_replica(values: Any) -> list[int]:
        return [int(v) for v in list(values or ())[:per_replica]]

    def one_ipu(used: set[int]) -> int | None:
        ipus = {t // target.tiles_per_ipu for t in used}
        return ipus.pop() if len(ipus) == 1 else None

    def most(values: Any) -> int | None:
        counts = first_replica(values)
        return max(counts) if counts else None

    def program_id(program: Any) -> int | None:
        pid = getattr(program, "_id", None)
        return int(pid) if isinstance(pid, (int, np.integer)) and not isinstance(pid, bool) and pid >= 0 else None

    compute_rows: list[tuple[Any, ...]] = []
    exchange_rows: list[tuple[Any, ...]] = []
    instances: dict[str, int] = {}
    state: dict[str, int] = {}
    uses: dict[str, int] = {}
    seen: set[int] = set()
    for program in list(getattr(compilation, "programs", None) or ()):
        if id(program) in seen:
            continue
        seen.add(id(program))
        ptype = _name(program.type)
        computeset = getattr(program, "computeset", None) if ptype == "OnTileExecute" else None
        if computeset is not None:
            used: set[int] = set()
            count = size_total = 0
            types: set[str] = set()
            for vertex in list(getattr(computeset, "vertices", None) or ()):
                vertex_type = getattr(vertex, "type", None)
                name = str(getattr(vertex_type, "name", "") or "")
                counts = first_replica(getattr(vertex, "countByTile", None))
                n = sum(counts)
                nbytes = _int(getattr(vertex_type, "size", None)) * n
                used.update(t for t, c in enumerate(counts) if c)
                types.add(name)
                count += n
                size_total += nbytes
                instances[name] = instances.get(name, 0) + n
                state[name] = state.get(name, 0) + nbytes
                uses[name] = uses.get(name, 0) + 1
            compute_rows.append((str(program.name), program_id(program), "", one_ipu(used), len(types), count,
                                 size_total, most(getattr(computeset, "estimatedCyclesByTile", None)
                                                  or getattr(program, "estimatedCyclesByTile", None)), len(used)))
        if ptype in EXCHANGE_CODE_CATEGORY:
            code = first_replica(getattr(program, "codeBytesByTile", None))
            if code:
                used = {t for t, c in enumerate(code) if c}
                exchange_rows.append((str(program.name), program_id(program), "", one_ipu(used), ptype, sum(code),
                                      most(getattr(program, "estimatedCyclesByTile", None)), len(used)))
    code_of: dict[str, int] = {}
    tiles_of: dict[str, int] = {}
    for tile in list(getattr(compilation, "tiles", None) or ())[:per_replica]:
        for vertex in list(getattr(tile, "vertices", None) or ()):
            name = str(getattr(getattr(vertex, "type", None), "name", "") or "")
            code_of[name] = code_of.get(name, 0) + _int(getattr(vertex, "codeBytes", None))
            tiles_of[name] = tiles_of.get(name, 0) + 1
    vertex_rows: list[tuple[Any, ...]] = [
        (name, instances.get(name, 0), state.get(name, 0), code_of.get(name, 0), tiles_of.get(name), uses.get(name, 0))
        for name in dict.fromkeys([*instances, *code_of])]
    vertex_rows.sort(key=lambda row: (-row[3], -row[2], row[0]))
    if vertex_rows:
        left_code = max(0, by_name.get("vertexCode", 0) - sum(row[3] for row in vertex_rows))
        left_state = max(0, by_name.get("vertexInstanceState", 0) - sum(row[2] for row in vertex_rows))
        if left_code or left_state:
            vertex_rows.append((UNATTRIBUTED_VERTICES, 0, left_state, left_code, None, 0))
    if compute_rows:
        left_state = max(0, by_name.get("vertexInstanceState", 0) - sum(row[6] for row in compute_rows))
        if left_state:
            compute_rows.append((UNATTRIBUTED_COMPUTE_SETS, None, "", None, 0, 0, left_state, None, None))
    if exchange_rows:
        exchange_total = sum(by_name.get(name, 0) for name in EXCHANGE_CODE_CATEGORY.values())
        left_exchange = max(0, exchange_total - sum(row[5] for row in exchange_rows))
        if left_exchange:
            exchange_rows.append((UNATTRIBUTED_EXCHANGES, None, "", None, "", left_exchange, None, None))
    return {"vertices": table_from_rows("vertices", vertex_rows),
            "compute_sets": table_from_rows("compute_sets", compute_rows),
            "exchanges": table_from_rows("exchanges", exchange_rows)}


def _interval(ipu: Any) -> tuple[int | None, int | None]:
    """(first cycle, last cycle) of one IPU's part of a step, from ``activeCycles``."""
    active = getattr(ipu, "activeCycles", None)
    start = getattr(getattr(active, "cyclesFrom", None), "min", None)
    end = getattr(getattr(active, "cyclesTo", None), "max", None)
    if start is None or end is None:
        return None, None
    return int(start), int(end)


#: Program types whose steps carry the bytes they move (``dataIn`` / ``dataOut`` per IPU): a host
#: transfer's data copy and a collective's global exchange.
DATA_MOVING_TYPES: frozenset[str] = frozenset({"StreamCopyMid", "GlobalExchange"})


def _bytes_moved(ptype: str, ipus: list[Any]) -> int | None:
    """The bytes a step moves: ``dataIn + dataOut`` summed over its IPUs, for the steps the
    profile records them on (:data:`DATA_MOVING_TYPES`; another type's step when it records a
    non-zero figure), else None (unrecorded)."""
    total = 0
    recorded = False
    for ipu in ipus:
        for name in ("dataIn", "dataOut"):
            value = getattr(ipu, name, None)
            if value is not None:
                total += int(value)
                recorded = True
    if not recorded or (ptype not in DATA_MOVING_TYPES and not total):
        return None
    return total


def _execution(execution: Any) -> pd.DataFrame:
    """One row per executed step of every profiled run: its cycles (the slowest IPU's), its
    interval ``cycles_from``..``cycles_to`` (earliest start and latest end over the IPUs) and
    the bytes it moves (:func:`_bytes_moved`: measured ``dataIn + dataOut``; <NA> unrecorded).

    Steps of a real trace overlap -- a SyncAns covers the steps it waits for -- so run time is
    the span of the intervals (:func:`profcompare.model.run_span_cycles`), never their sum.
    """
    if execution is None:
        return make_frame("execution")
    total = getattr(getattr(execution, "totalCycles", None), "total", None)
    if total is not None and int(total) == 0:
        return make_frame("execution")  # e.g. a cached-executable copy: no execution data
    runs = getattr(execution, "runs", None) or ()
    run_ids: list[int] = []
    step_ids: list[int] = []
    programs: list[str] = []
    types: list[str] = []
    phases: list[str] = []
    cycles: list[int] = []
    starts: list[int | None] = []
    ends: list[int | None] = []
    moved: list[int | None] = []
    for run_index, run in enumerate(runs):
        for step_index, step in enumerate(getattr(run, "steps", None) or ()):
            program = step.program
            name, ptype = str(program.name), _name(program.type)
            ipus = list(getattr(step, "ipus", None) or ())
            first: int | None = None
            last: int | None = None
            if ipus:
                # IPUs of a replica run a step in parallel: the step takes as long as the slowest.
                step_cycles = max(int(ipu.cycles) for ipu in ipus)
                spans = [_interval(ipu) for ipu in ipus]
                known = [(a, b) for a, b in spans if a is not None and b is not None]
                if known:
                    first = min(a for a, _ in known)
                    last = max(b for _, b in known)
            else:
                by_tile = getattr(step, "cyclesByTile", None)
                step_cycles = max((int(c) for c in by_tile), default=0) if by_tile is not None else 0
            run_ids.append(run_index)
            step_ids.append(step_index)
            programs.append(name)
            types.append(ptype)
            phases.append(phase_of(ptype, name))
            cycles.append(step_cycles)
            starts.append(first)
            ends.append(last)
            moved.append(_bytes_moved(ptype, ipus))
    return make_frame(
        "execution",
        {
            "run": run_ids,
            "step": step_ids,
            "program": programs,
            "type": types,
            "phase": phases,
            "cycles": cycles,
            "cycles_from": pd.array(starts, dtype="Int64"),
            "cycles_to": pd.array(ends, dtype="Int64"),
            "bytes_moved": pd.array(moved, dtype="Int64"),
        },
    )


#: pva program type -> Graph Analyser's trace block type where they differ (syncs go by name,
#: :func:`sync_label`); other types keep their pva name.
TRACE_TYPE_OF_PROGRAM_TYPE = {"StreamCopyMid": "StreamCopy"}


def trace_type(program_type: str, program_name: str) -> str:
    """Graph Analyser's block type of a pva step (its ExternalSync / InternalSync / SyncAns for syncs)."""
    return sync_label(program_type, program_name) or TRACE_TYPE_OF_PROGRAM_TYPE.get(program_type, program_type)


def _trace(execution: Any, target: Target) -> pd.DataFrame:
    """The ``trace`` table of every profiled run: one row per (run, step, IPU of the replica with a
    non-empty interval or non-zero cycles), IPU = position in ``step.ipus`` (one replica's IPUs; later ones are left out), in
    (run, ipu, cycles_from) order, ``run`` the position in ``execution.runs``. pva steps have no program tree: every block is at the top level."""
    if execution is None:
        return make_frame("trace")
    total = getattr(getattr(execution, "totalCycles", None), "total", None)
    runs = list(getattr(execution, "runs", None) or ())
    if (total is not None and int(total) == 0) or not runs:
        return make_frame("trace")
    rows: list[tuple[int, int, int, int, int, str, str]] = []
    for run, profiled in enumerate(runs):
        for order, step in enumerate(getattr(profiled, "steps", None) or ()):
            program = step.program
            name, ptype = str(program.name), _name(program.type)
            block = trace_type(ptype, name)
            for ipu, part in enumerate(list(getattr(step, "ipus", None) or ())[: target.ipus_per_replica]):
                start, end = _interval(part)
                if start is None or end is None or (end <= start and not _int(getattr(part, "cycles", 0))):
                    continue  # this IPU took no part in the step
                rows.append((run, ipu, start, end, order, block, name))
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[4]))
    return trace_from_blocks([(ipu, start, end, block, name, name, "", 0) for _, ipu, start, end, _, block, name in rows],
                             runs=[r[0] for r in rows])


__all__ = [
    "ARCHITECTURES",
    "CONFIRMED_CATEGORIES",
    "EXCHANGE_CODE_CATEGORY",
    "BOW_MIN_CLOCK_HZ",
    "FALLBACK_CLOCK_HZ",
    "PHASE_OF_PROGRAM_TYPE",
    "Progress",
    "architecture_name",
    "category_names",
    "phase_of",
    "sync_label",
    "trace_type",
    "export_pva",
    "guess_kinds",
    "import_pva",
    "read_pva",
    "report_from_pva",
]
