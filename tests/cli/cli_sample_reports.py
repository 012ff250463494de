"""Two small, realistic reports built in code: ``onchip`` and ``offchip-sharded``.

They follow the MNIST MLP (784-512-512-512-10, Adam with an fp16 first moment, gradient
accumulation) on a Mk2 with 4 replicas. In ``onchip`` the Adam state is always-live in tile
memory; in ``offchip-sharded`` it lives in Streaming Memory, sharded over the replicas, and
only staging copies of one shard are on chip while the optimizer step runs. Every value is a
deterministic function of the variant, so rendered output is stable for golden files.
"""

from __future__ import annotations

from collections.abc import Sequence

from profcompare.model import (
    CATEGORY_GROUPS,
    UNATTRIBUTED_OPERATION,
    Report,
    ReportMeta,
    Target,
    make_frame,
    operations_from_rows,
)

# Mk2 GC200: 1472 tiles x 624 KiB per tile (shared/reference/ipu_facts.md, section 1.1).
MK2_TILES = 1472
MK2_BYTES_PER_TILE = 624 * 1024
# Mk2 clock, derived in ipu_facts.md section 1.1 (250 TFLOPS / (1472 x 128 FLOP/cycle)).
MK2_CLOCK_HZ = 1.33e9
REPLICAS = 4
GRAD_ACCUM = 8
MICRO_BATCH = 8
LAYERS = ((784, 512), (512, 512), (512, 512), (512, 10))


def _programs(offchip: bool) -> list[tuple[str, str]]:
    programs = [
        ("host_load/images", "StreamCopy"),
        ("layer0/fwd/matmul", "OnTileExecute"),
        ("layer0/fwd/gelu", "OnTileExecute"),
        ("layer1/fwd/matmul", "OnTileExecute"),
        ("layer1/fwd/gelu", "OnTileExecute"),
        ("layer2/fwd/matmul", "OnTileExecute"),
        ("layer3/fwd/matmul", "OnTileExecute"),
        ("loss/softmax_xent", "OnTileExecute"),
        ("layer3/bwd/matmul", "OnTileExecute"),
        ("layer2/bwd/matmul", "OnTileExecute"),
        ("layer1/bwd/matmul", "OnTileExecute"),
        ("layer0/bwd/matmul", "OnTileExecute"),
        ("grad/accumulate", "OnTileExecute"),
        ("grad/exchange", "DoExchange"),
    ]
    if offchip:
        programs += [
            ("grad/reduce_scatter", "Call"),
            ("optimizer/remote_load", "RemoteLoad"),
            ("optimizer/adam", "OnTileExecute"),
            ("optimizer/remote_store", "RemoteStore"),
            ("weights/all_gather", "Call"),
        ]
    else:
        programs += [("grad/all_reduce", "Call"), ("optimizer/adam", "OnTileExecute")]
    return programs


def _variables(offchip: bool, extra: Sequence[tuple[str, int]]) -> dict[str, list]:
    rows: list[tuple] = []
    opt_step = 16
    for i, (fan_in, fan_out) in enumerate(LAYERS):
        elems = fan_in * fan_out
        shape = f"[{fan_in}, {fan_out}]"
        spread = min(MK2_TILES, max(1, elems // 256))
        weight, bias = f"layer{i}.weight", f"layer{i}.bias"
        rows.append((f"layer{i}/weight", elems * 4, True, "weight", "float32", shape, spread, None, None,
                     weight, "weight", ""))
        rows.append((f"layer{i}/bias", fan_out * 4, True, "weight", "float32", f"[{fan_out}]", 2, None, None,
                     bias, "weight", ""))
        rows.append((f"layer{i}/weight/accum", elems * 4, True, "accumulator", "float32", shape, spread, None, None,
                     weight, "accumulator", ""))
        if offchip:
            shard = -(-elems // REPLICAS)  # RTS pads to a multiple of the replica count
            rows.append((f"layer{i}/weight/first_moment/staging", shard * 2, False, "remote_staging", "float16",
                         f"[{shard}]", max(1, spread // 4), opt_step - 1, opt_step + 1, weight, "remote_staging", ""))
            rows.append((f"layer{i}/weight/second_moment/staging", shard * 4, False, "remote_staging", "float32",
                         f"[{shard}]", max(1, spread // 4), opt_step - 1, opt_step + 1, weight, "remote_staging", ""))
            rows.append((f"layer{i}/weight/grad/shard", shard * 4, False, "collective_buffer", "float32",
                         f"[{shard}]", max(1, spread // 4), 14, opt_step, weight, "gradient", ""))
        else:
            rows.append((f"layer{i}/weight/first_moment", elems * 2, True, "optimizer_state", "float16", shape,
                         spread, None, None, weight, "optimizer_state", "first_order"))
            rows.append((f"layer{i}/weight/second_moment", elems * 4, True, "optimizer_state", "float32", shape,
                         spread, None, None, weight, "optimizer_state", "second_order"))
        rows.append((f"layer{i}/gelu/output", MICRO_BATCH * fan_out * 4, False, "activation", "float32",
                     f"[{MICRO_BATCH}, {fan_out}]", 16, 1 + 2 * i, 11 - i, "", "activation", ""))
    rows.append(("images/stream", MICRO_BATCH * 784 * 4, False, "stream", "float32", f"[{MICRO_BATCH}, 784]",
                 64, 0, 1, "", "activation", ""))
    # a row the reader could not attribute: parameter "" and role other
    rows.append(("step_counter", 4, True, "other", "int32", "[]", 1, None, None, "", "other", ""))
    for name, size in extra:
        rows.append((name, size, False, "other", "float32", f"[{size // 4}]", 1, 3, 4, "", "other", ""))
    columns = ("name", "bytes", "always_live", "kind", "dtype", "shape", "tiles", "first_step", "last_step",
               "parameter", "role", "which")
    return {c: [row[j] for row in rows] for j, c in enumerate(columns)}


def _operations(offchip: bool, totals: tuple[int, int, int], cycles_per_run: int | None) -> list[tuple]:
    """The ops of one run, each with the parameter and role it serves (what the simulator
    records): per layer its forward matmul (weight), backward matmul (gradient), the gradient's
    all-reduce (onchip) or reduce-scatter (offchip, gradient), the Adam update (optimizer_state),
    and offchip the remote load and store of its Adam state (optimizer_state) and the all-gather
    of its weight (weight); the loss (no parameter's data); the remainder row last, so that the
    columns add up to ``totals`` (code, vertex state, exchange code) and ``cycles_per_run`` (None:
    no execution profile, no op records its cycles)."""
    rows: list[tuple] = []

    def op(name: str, kind: str, code: int, cycles: int, parameter: str, role: str) -> None:
        rows.append((name, name, kind, "", 0, code, code // 8, code // 4, cycles, None, 64, "", parameter, role))

    for i, (fan_in, fan_out) in enumerate(LAYERS):
        weight, scale = f"layer{i}.weight", fan_in * fan_out // 1024
        op(f"layer{i}/fwd/matmul", "MatMul", 6_000 + 4 * scale, 9_000 + 30 * scale, weight, "weight")
        op(f"layer{i}/bwd/matmul", "MatMul", 7_000 + 4 * scale, 11_000 + 30 * scale, weight, "gradient")
        if offchip:
            op(f"grad/reduce_scatter:{weight}", "ReplicatedReduceScatter", 3_000 + 2 * scale, 6_000 + 20 * scale,
               weight, "gradient")
            op(f"optimizer/remote_load:{weight}", "RemoteLoad", 2_400 + scale, 7_000 + 25 * scale, weight,
               "optimizer_state")
            op(f"optimizer/adam:{weight}", "AdamUpdater", 3_000 + scale, 1_000 + 3 * scale, weight,
               "optimizer_state")
            op(f"optimizer/remote_store:{weight}", "RemoteStore", 2_400 + scale, 7_000 + 25 * scale, weight,
               "optimizer_state")
            op(f"weights/all_gather:{weight}", "ReplicatedAllGather", 3_200 + 2 * scale, 6_500 + 20 * scale,
               weight, "weight")
        else:
            op(f"grad/all_reduce:{weight}", "ReplicatedAllReduce", 4_000 + 3 * scale, 9_000 + 30 * scale, weight,
               "gradient")
            op(f"optimizer/adam:{weight}", "AdamUpdater", 3_000 + scale, 4_000 + 12 * scale, weight,
               "optimizer_state")
    op("loss/softmax_xent", "NllLoss", 5_000, 6_000, "", "activation")
    left = [total - sum(r[k] for r in rows) for k, total in zip((5, 6, 7), totals)]
    rows.append((UNATTRIBUTED_OPERATION, "", "", "", None, *left, 0, None, None, "", "", ""))
    if cycles_per_run is None:
        return [(*r[:8], None, *r[9:]) for r in rows]
    last = rows[-1]
    rows[-1] = (*last[:8], cycles_per_run - sum(r[8] for r in rows), *last[9:])
    assert min(left) >= 0 and rows[-1][8] >= 0
    return rows


def _spread(total: int, tiles: int, hot: dict[int, int]) -> list[int]:
    """``total`` bytes over ``tiles`` tiles, evenly, plus extra bytes on a few hot tiles."""
    each, rest = divmod(total, tiles)
    values = [each + (1 if t < rest else 0) for t in range(tiles)]
    for tile, extra in hot.items():
        values[tile] += extra
    return values


def build_report(
    variant: str,
    *,
    simulated: bool = True,
    source: str = "",
    extra_variables: Sequence[tuple[str, int]] = (),
    execution: bool = True,
    operations: bool = True,
) -> Report:
    """Return a deterministic Report shaped like a 4-replica MNIST run of ``variant``.

    ``variant`` is ``onchip`` or ``offchip-sharded``; ``extra_variables`` adds (name, bytes)
    not-always-live variables (e.g. names with markup, or many rows to exercise top-N);
    ``operations`` adds the ops of one run with the parameter and role each serves (their code
    and cycles add up to the report's, the rest in the remainder row).
    """
    offchip = variant.startswith("offchip")
    target = Target("Mk2", REPLICAS, MK2_TILES, MK2_BYTES_PER_TILE, MK2_CLOCK_HZ, num_replicas=REPLICAS)
    meta = ReportMeta(
        source=source,
        format="store",
        producer="profcompare-sim 0.1.0" if simulated else "Poplar 3.3.0 (de1f8de2a7)",
        simulated=simulated,
        target=target,
        workload="mnist",
        variant=variant,
        config={"replicas": REPLICAS, "grad_accum": GRAD_ACCUM, "micro_batch": MICRO_BATCH},
        samples_per_step=REPLICAS * GRAD_ACCUM * MICRO_BATCH,
        created="2024-05-01T12:00:00+00:00",
    )
    variables = make_frame("variables", _variables(offchip, extra_variables))
    programs = _programs(offchip)

    code_per_program = [24_000 + 3_000 * ((7 * k) % 11) for k in range(len(programs))]
    code = make_frame(
        "code",
        {
            "name": [p for p, _ in programs],
            "type": [t for _, t in programs],
            "category": ["controlCode" if t in ("Call", "RemoteLoad", "RemoteStore") else "vertexCode"
                         for _, t in programs],
            "code_bytes": code_per_program,
        },
    )
    categories_bytes = {
        "vertexCode": 3_400_000 + (600_000 if offchip else 0),
        "controlCode": 1_100_000 + (150_000 if offchip else 0),
        "internalExchangeCode": 2_300_000,
        "hostExchangeCode": 280_000,
        "globalExchangeCode": 420_000 if offchip else 0,
        "vertexInstanceState": 760_000,
        "vertexFieldData": 1_050_000,
        "copyDescriptor": 36_000,
        "variable": int(variables.loc[variables["always_live"], "bytes"].sum()),
        "constant": 88_000,
        "stack": MK2_TILES * 512,
    }
    categories = make_frame(
        "categories",
        {
            "category": list(categories_bytes),
            "group": [CATEGORY_GROUPS[c] for c in categories_bytes],
            "bytes": list(categories_bytes.values()),
        },
    )
    always_live_total = sum(categories_bytes.values())
    # not-always-live bytes per step: activations during fwd/bwd, staging at the optimizer
    liveness_bytes: list[int] = []
    for step in range(len(programs)):
        live = variables[(~variables["always_live"])
                         & (variables["first_step"].fillna(-1) <= step)
                         & (variables["last_step"].fillna(-1) >= step)]
        liveness_bytes.append(int(live["bytes"].sum()) + 150_000 + 10_000 * (step % 3))
    liveness = make_frame(
        "liveness",
        {
            "step": list(range(len(programs))),
            "program": [p for p, _ in programs],
            "program_type": [t for _, t in programs],
            "not_always_live_bytes": liveness_bytes,
        },
    )
    nal_peak = max(liveness_bytes)
    # a few tiles hold the layer-0 matmul partials: hotter than the rest
    hot = {0: 90_000, 1: 60_000, 2: 30_000} if not offchip else {0: 40_000, 5: 20_000}
    always_live = _spread(always_live_total, MK2_TILES, {})
    nal = _spread(nal_peak, MK2_TILES, hot)
    code_tile = _spread(categories_bytes["vertexCode"], MK2_TILES, {})
    variable_tile = _spread(categories_bytes["variable"], MK2_TILES, {})
    gaps = 96
    tiles = make_frame(
        "tiles",
        {
            "tile": list(range(MK2_TILES)),
            "ipu": [0] * MK2_TILES,
            "bytes_including_gaps": [a + n + gaps for a, n in zip(always_live, nal)],
            "bytes_excluding_gaps": [a + n for a, n in zip(always_live, nal)],
            "always_live_bytes": always_live,
            "not_always_live_peak_bytes": nal,
            "vertexCode": code_tile,
            "variable": variable_tile,
        },
    )
    if execution:
        phase_cycles = {
            "compute": 410_000,
            "exchange": 120_000 + (30_000 if offchip else 0),
            "sync": 18_000,
            "host_io": 52_000,
            "collective": 240_000 - (60_000 if offchip else 0),
        }
        if offchip:
            phase_cycles["streaming_memory"] = 95_000
        runs = 2
        execution_frame = make_frame(
            "execution",
            {
                "run": [r for r in range(runs) for _ in phase_cycles],
                "step": [s for _ in range(runs) for s in range(len(phase_cycles))],
                "program": ["main"] * (runs * len(phase_cycles)),
                "type": ["Call"] * (runs * len(phase_cycles)),
                "phase": [p for _ in range(runs) for p in phase_cycles],
                "cycles": [c + 100 * r for r in range(runs) for c in phase_cycles.values()],
            },
        )
    else:
        execution_frame = make_frame("execution")
    if offchip:
        names, shapes, dtypes, sizes, which = [], [], [], [], []
        for i, (fan_in, fan_out) in enumerate(LAYERS):
            shard = -(-(fan_in * fan_out) // REPLICAS)
            for moment, dtype, item in (("first_moment", "float16", 2), ("second_moment", "float32", 4)):
                names.append(f"layer{i}/weight/{moment}")
                which.append("first_order" if moment == "first_moment" else "second_order")
                shapes.append(f"[{shard}]")
                dtypes.append(dtype)
                sizes.append(shard * item)
        remote = make_frame(
            "remote_buffers",
            {"name": names, "entries": [1] * len(names), "shape": shapes, "dtype": dtypes,
             "sharded": [True] * len(names), "bytes": sizes,
             "parameter": [n.rsplit("/", 1)[0].replace("/", ".") for n in names],
             "role": ["optimizer_state"] * len(names), "which": which},
        )
    else:
        remote = make_frame("remote_buffers")
    report = Report.build(
        meta,
        tiles=tiles,
        categories=categories,
        variables=variables,
        liveness=liveness,
        code=code,
        execution=execution_frame,
        remote_buffers=remote,
    )
    if not operations:
        return report
    summary = report.summary()
    totals = (int(summary["code_bytes"]), categories_bytes["vertexInstanceState"] + categories_bytes["copyDescriptor"],
              sum(categories_bytes[c] for c in ("internalExchangeCode", "hostExchangeCode", "globalExchangeCode")))
    ops = _operations(offchip, totals, int(summary["cycles_per_step"]) if execution else None)
    return Report.build(
        meta,
        tiles=tiles,
        categories=categories,
        variables=variables,
        liveness=liveness,
        code=code,
        execution=execution_frame,
        remote_buffers=remote,
        operations=operations_from_rows(ops),
    )
