"""Small, realistic reports for the HTML/plot/notebook tests, built in code.

(A uniquely named module, not conftest.py, so that ``from html_fixtures import ...`` cannot pick
up another test directory's conftest.)

``onchip``: Adam state kept in tile memory (always-live).  ``offchip-sharded``: the state lives in
Streaming Memory, sharded over the replicas; only per-replica staging buffers are on chip and
live while the optimizer step runs.  The shapes follow the MNIST MLP (784-512-512-512-10).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from profcompare.model import CATEGORY_GROUPS, Report, ReportMeta, Target, make_frame

# Mk2 figures from shared/reference/ipu_facts.md, section 1.1 (1472 tiles, 624 KiB per tile).
MK2_TILES = 1472
MK2_BYTES_PER_TILE = 624 * 1024
MK2_CLOCK_HZ = 1.33e9  # ipu_facts.md 1.1 (derived Mk2 clock)
REPLICAS = 4
LAYERS = ((784, 512), (512, 512), (512, 512), (512, 10))
ESCAPE_NAME = "</script><b>x</b>"

PROGRAMS = (
    ("host_load/x", "StreamCopy"),
    ("fwd/matmul0", "OnTileExecute"),
    ("fwd/gelu0", "OnTileExecute"),
    ("fwd/matmul1", "OnTileExecute"),
    ("fwd/exchange", "DoExchange"),
    ("loss/softmax_xent", "OnTileExecute"),
    ("bwd/matmul1", "OnTileExecute"),
    ("bwd/matmul0", "OnTileExecute"),
    ("grad/allreduce", "Call"),
    ("opt/remote_load", "RemoteLoad"),
    ("opt/adam_update", "OnTileExecute"),
    ("opt/remote_store", "RemoteStore"),
)


def _variables(offchip: bool, extra_names: Sequence[str]) -> dict[str, list]:
    rows: list[tuple] = []
    shard = REPLICAS if offchip else 1
    for i, (fan_in, fan_out) in enumerate(LAYERS):
        elems = fan_in * fan_out
        shape = f"[{fan_in}, {fan_out}]"
        rows.append((f"layer{i}/weight", elems * 4, True, "weight", "float32", shape, 1472, None, None))
        rows.append((f"layer{i}/bias", fan_out * 4, True, "weight", "float32", f"[{fan_out}]", 8, None, None))
        rows.append((f"layer{i}/weight/accum", elems * 4, True, "accumulator", "float32", shape, 1472, None, None))
        if offchip:
            # staging copies of the sharded state, live only around the optimizer step
            staged = elems // shard
            rows.append(
                (
                    f"layer{i}/weight/first_moment/staging",
                    staged * 2,
                    False,
                    "remote_staging",
                    "float16",
                    f"[{staged}]",
                    368,
                    9,
                    11,
                )
            )
            rows.append(
                (
                    f"layer{i}/weight/second_moment/staging",
                    staged * 4,
                    False,
                    "remote_staging",
                    "float32",
                    f"[{staged}]",
                    368,
                    9,
                    11,
                )
            )
        else:
            rows.append(
                (
                    f"layer{i}/weight/first_moment",
                    elems * 2,
                    True,
                    "optimizer_state",
                    "float16",
                    shape,
                    1472,
                    None,
                    None,
                )
            )
            rows.append(
                (
                    f"layer{i}/weight/second_moment",
                    elems * 4,
                    True,
                    "optimizer_state",
                    "float32",
                    shape,
                    1472,
                    None,
                    None,
                )
            )
        rows.append(
            (
                f"layer{i}/activation",
                8 * fan_out * 2,
                False,
                "activation",
                "float16",
                f"[8, {fan_out}]",
                64,
                1 + i,
                7 - min(i, 1),
            )
        )
    for name in extra_names:
        rows.append((name, 4096, False, "other", "float32", "[1024]", 4, 2, 3))
    cols = ("name", "bytes", "always_live", "kind", "dtype", "shape", "tiles", "first_step", "last_step")
    frame = {c: [r[j] for r in rows] for j, c in enumerate(cols)}
    attribution = [_attribution(name, kind, extra_names) for name, kind in zip(frame["name"], frame["kind"], strict=True)]
    for j, column in enumerate(("parameter", "role", "which")):
        frame[column] = [a[j] for a in attribution]
    return frame


def _attribution(name: str, kind: str, extra_names: Sequence[str]) -> tuple[str, str, str]:
    """(parameter, role, which) of a fixture variable: ``layer0/weight/...`` belongs to
    ``layer0.weight``; a hostile extra name is its own parameter (it must be escaped there too)."""
    if name in extra_names:
        return name, "other", ""
    parts = name.split("/")
    if parts[1] == "activation":
        return "", "activation", ""
    parameter = f"{parts[0]}.{parts[1]}"
    which = next((w for w in ("first_order", "second_order") if parts[-1].startswith(w.split("_")[0])
                  or (len(parts) > 2 and parts[2].startswith(w.split("_")[0]))), "")
    return parameter, kind, which if kind in ("optimizer_state", "remote_staging") else ""


def build_report(variant: str, *, simulated: bool = True, extra_names: Sequence[str] = ()) -> Report:
    """A small report shaped like the profcompare simulator's output for ``variant``."""
    offchip = variant.startswith("offchip")
    rng = np.random.default_rng(7 if offchip else 3)
    target = Target("Mk2", REPLICAS, MK2_TILES, MK2_BYTES_PER_TILE, MK2_CLOCK_HZ, num_replicas=REPLICAS)
    meta = ReportMeta(
        source=f"reports/r1/{variant}/profile.sqlite",
        format="store",
        producer="profcompare-sim 0.1.0" if simulated else "Poplar 3.3.0 (de1f8de2a7)",
        simulated=simulated,
        target=target,
        workload="mnist",
        variant=variant,
        config={"replicas": REPLICAS, "grad_accum": 8, "micro_batch": 8},
        samples_per_step=REPLICAS * 8 * 8,
    )
    variables = make_frame("variables", _variables(offchip, extra_names))
    always_live_total = int(variables.loc[variables["always_live"], "bytes"].sum()) + 2_000_000
    base = rng.integers(200, 400, MK2_TILES)
    always_live = (always_live_total // MK2_TILES + base).astype("int64")
    nal = rng.integers(10_000, 60_000, MK2_TILES).astype("int64")
    nal[:8] += 200_000 if offchip else 90_000
    variable_col = always_live - 1000
    code_col = np.full(MK2_TILES, 9000 if offchip else 7000, dtype="int64")
    total = always_live + nal + code_col
    tiles = make_frame(
        "tiles",
        {
            "tile": np.arange(MK2_TILES),
            "ipu": np.zeros(MK2_TILES, dtype="int64"),
            "bytes_including_gaps": total + 512,
            "bytes_excluding_gaps": total,
            "always_live_bytes": always_live,
            "not_always_live_peak_bytes": nal,
            "variable": variable_col,
            "vertexCode": code_col,
        },
    )
    cats = {
        "vertexCode": int(code_col.sum()),
        "controlCode": 1_200_000 if offchip else 1_000_000,
        "internalExchangeCode": 2_500_000,
        "hostExchangeCode": 300_000,
        "globalExchangeCode": 450_000 if offchip else 0,
        "vertexInstanceState": 800_000,
        "vertexFieldData": 1_100_000,
        "copyDescriptor": 40_000,
        "variable": int(variable_col.sum()),
        "constant": 90_000,
        "stack": 1_472 * 512,
    }
    categories = make_frame(
        "categories",
        {"category": list(cats), "group": [CATEGORY_GROUPS[c] for c in cats], "bytes": list(cats.values())},
    )
    programs = PROGRAMS if offchip else tuple(p for p in PROGRAMS if not p[0].startswith("opt/remote"))
    steps = len(programs)
    nal_steps = [int(x) for x in rng.integers(1_000_000, 3_000_000, steps)]
    nal_steps[-2 if offchip else -1] = 9_000_000 if offchip else 4_000_000
    liveness = make_frame(
        "liveness",
        {
            "step": list(range(steps)),
            "program": [p for p, _ in programs],
            "program_type": [t for _, t in programs],
            "not_always_live_bytes": nal_steps,
        },
    )
    code = make_frame(
        "code",
        {
            "name": [p for p, _ in programs],
            "type": [t for _, t in programs],
            "category": ["vertexCode"] * steps,
            "code_bytes": [int(x) for x in rng.integers(20_000, 400_000, steps)],
        },
    )
    phases = ("compute", "exchange", "sync", "host_io", "collective") + (("streaming_memory",) if offchip else ())
    execution = make_frame(
        "execution",
        {
            "run": [0] * len(phases),
            "step": list(range(len(phases))),
            "program": ["main"] * len(phases),
            "type": ["Call"] * len(phases),
            "phase": list(phases),
            "cycles": [int(x) for x in rng.integers(100_000, 900_000, len(phases))],
        },
    )
    if offchip:
        names = [f"layer{i}/weight/{m}" for i in range(len(LAYERS)) for m in ("first_moment", "second_moment")]
        elems = [fi * fo // REPLICAS for fi, fo in LAYERS for _ in range(2)]
        item = [2, 4] * len(LAYERS)
        remote = make_frame(
            "remote_buffers",
            {
                "name": names,
                "entries": [1] * len(names),
                "shape": [f"[{e}]" for e in elems],
                "dtype": ["float16", "float32"] * len(LAYERS),
                "sharded": [True] * len(names),
                "bytes": [e * s for e, s in zip(elems, item)],
                "parameter": [f"layer{i}.weight" for i in range(len(LAYERS)) for _ in range(2)],
                "role": ["optimizer_state"] * len(names),
                "which": ["first_order", "second_order"] * len(LAYERS),
            },
        )
    else:
        remote = make_frame("remote_buffers")
    return Report.build(
        meta,
        tiles=tiles,
        categories=categories,
        variables=variables,
        liveness=liveness,
        code=code,
        execution=execution,
        remote_buffers=remote,
    )


def shared_data_path(name: str) -> Path:
    """``shared/data/<name>``: from $PROFCOMPARE_SHARED_DATA, beside the project (as CI has it) or
    further up; a path that does not exist when none holds it (the tests that need it skip)."""
    env = os.environ.get("PROFCOMPARE_SHARED_DATA")
    candidates = [Path(env) / name] if env else []
    candidates += [parent / "shared" / "data" / name for parent in Path(__file__).resolve().parents]
    return next((path for path in candidates if path.is_file()), Path("shared") / "data" / name)
