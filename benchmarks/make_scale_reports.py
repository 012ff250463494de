"""Generate two large synthetic store reports for the scale benchmark.

Usage::

    python benchmarks/make_scale_reports.py [OUT_DIR] [--variables N] [--steps N] [--force]

writes ``OUT_DIR/base/profile.sqlite`` and ``OUT_DIR/new/profile.sqlite`` (default OUT_DIR: a
new temporary directory, printed on stdout). The base report has 1472 tiles with realistic
memory-category columns, 1,000,000 variables, 200,000 liveness steps and some code,
execution and remote-buffer rows. The new report is a perturbation of it: some variables
grow or shrink, some are removed, some added, and some renamed by a change of numeric
suffix (``...__17`` -> ``...__18``), so that both exact and normalised name matching are
exercised. All columns are generated with vectorised numpy; the data is synthetic and says
nothing about a real model.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from profcompare.errors import ProfcompareError
from profcompare.model import CATEGORY_GROUPS, Report, ReportMeta, Target, make_frame
from profcompare.readers.store import DEFAULT_FILENAME, write_report

TILES_PER_IPU = 1472  # Mk2 GC200 (shared/reference/ipu_facts.md); synthetic report
BYTES_PER_TILE = 638976  # Mk2 GC200 tile memory (shared/reference/ipu_facts.md)
CLOCK_HZ = 1.33e9  # Mk2 clock (shared/reference/ipu_facts.md)

_TILE_CATEGORIES = {  # category -> mean bytes per tile (synthetic, plausible magnitudes)
    "vertexCode": 30_000,
    "controlCode": 12_000,
    "internalExchangeCode": 40_000,
    "hostExchangeCode": 6_000,
    "globalExchangeCode": 2_000,
    "vertexInstanceState": 9_000,
    "vertexFieldData": 3_000,
    "copyDescriptor": 500,
    "vectorListDescriptor": 1_500,
    "variable": 180_000,
    "constant": 2_000,
    "stack": 8_000,
    "hostExchangePacketHeader": 400,
    "controlTable": 300,
    "controlId": 50,
    "instrumentationResults": 200,
    "message": 1_000,
}
_ALWAYS_LIVE_CATEGORIES = [c for c in _TILE_CATEGORIES if c not in ("variable", "stack")]

_KINDS = np.array(
    ["weight", "optimizer_state", "accumulator", "gradient", "activation", "remote_staging",
     "collective_buffer", "stream", "constant", "other"],
    dtype=object,
)
_KIND_P = np.array([0.12, 0.2, 0.1, 0.14, 0.3, 0.04, 0.03, 0.02, 0.03, 0.02])
#: role (profcompare.model.ROLES) of each kind above, in the same order
_ROLE_OF_KIND = np.array(
    ["weight", "optimizer_state", "accumulator", "gradient", "activation", "remote_staging",
     "gathered_weight", "other", "other", "other"],
    dtype=object,
)
_ATTRIBUTED_KINDS = {"weight", "optimizer_state", "accumulator", "gradient", "remote_staging", "collective_buffer"}
_ALWAYS_LIVE_KINDS = {"weight", "optimizer_state", "accumulator", "constant"}
_DTYPES = np.array(["float16", "float32", "int32", "uint32"], dtype=object)
_DTYPE_BYTES = np.array([2, 4, 4, 4])
_PROGRAM_TYPES = np.array(
    ["OnTileExecute", "DoExchange", "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd", "Sync",
     "GlobalExchange", "RemoteLoad", "RemoteStore", "Call"],
    dtype=object,
)
_PHASE_OF_TYPE = np.array(
    ["compute", "exchange", "host_io", "host_io", "host_io", "sync", "collective", "streaming_memory",
     "streaming_memory", "compute"],
    dtype=object,
)
_OPS = ["matmul", "gelu", "softmax", "add", "layernorm", "cast", "copy", "reduce", "scale", "adam"]
_PARAMS = ["weight", "bias", "out", "grad", "m", "v", "accum", "stage", "buffer", "tmp"]


def _parameters(names: list[str]) -> np.ndarray:
    """The parameter of each synthetic variable: its ``model.layerL.blockB`` prefix + ``.weight``."""
    return np.array([n.split(".block")[0] + ".block" + n.split(".block")[1].split(".")[0] + ".weight"
                     for n in names], dtype=object)


def _unique_names(count: int, rng: np.random.Generator) -> list[str]:
    layers, blocks = 1000, 10
    per = max(1, -(-count // (layers * blocks)))
    idx = np.arange(count)
    layer = idx // (blocks * per)
    block = (idx // per) % blocks
    item = idx % per
    op = np.array(_OPS)[item % len(_OPS)]
    param = np.array(_PARAMS)[(item // len(_OPS)) % len(_PARAMS)]
    rep = item // (len(_OPS) * len(_PARAMS))
    return [
        f"model.layer{lay}.block{b}.{o}.{p}" + (f".part{r}" if r else "")
        for lay, b, o, p, r in zip(layer.tolist(), block.tolist(), op.tolist(), param.tolist(), rep.tolist())
    ]


def make_base(variables: int, steps: int, seed: int = 0) -> Report:
    """Return the synthetic base Report (see module docstring for its shape)."""
    rng = np.random.default_rng(seed)
    tiles = TILES_PER_IPU
    cat_cols = {
        name: np.maximum(0, rng.normal(mean, mean * 0.15, tiles)).astype(np.int64)
        for name, mean in _TILE_CATEGORIES.items()
    }
    excluding = sum(cat_cols.values())
    gaps = rng.integers(0, 20_000, tiles)
    always_live = sum(cat_cols[c] for c in _ALWAYS_LIVE_CATEGORIES) + cat_cols["variable"] // 2
    tile_frame = make_frame(
        "tiles",
        {
            "tile": np.arange(tiles),
            "ipu": np.zeros(tiles, dtype=np.int64),
            "bytes_including_gaps": excluding + gaps,
            "bytes_excluding_gaps": excluding,
            "always_live_bytes": always_live,
            "not_always_live_peak_bytes": excluding - always_live,
            **cat_cols,
        },
    )
    categories = make_frame(
        "categories",
        {
            "category": list(cat_cols),
            "group": [CATEGORY_GROUPS[c] for c in cat_cols],
            "bytes": [int(v.sum()) for v in cat_cols.values()],
        },
    )

    names = _unique_names(variables, rng)
    # one in 50 names carries a numeric suffix, the kind the new report renames
    suffixed = rng.random(variables) < 0.02
    suffix = rng.integers(0, 100, variables)
    names = [f"{n}__{s}" if f else n for n, f, s in zip(names, suffixed.tolist(), suffix.tolist())]
    kind_idx = rng.choice(len(_KINDS), variables, p=_KIND_P)
    kind = _KINDS[kind_idx]
    dtype_idx = rng.integers(0, len(_DTYPES), variables)
    rows = rng.integers(1, 1025, variables)
    cols_ = np.array([1, 16, 128, 512, 784, 1024])[rng.integers(0, 6, variables)]
    nbytes = rows * cols_ * _DTYPE_BYTES[dtype_idx]
    shapes = pd.Series(rows.astype(str), dtype=object) + ", " + pd.Series(cols_.astype(str), dtype=object)
    shape = ("[" + shapes + "]").to_numpy(dtype=object)
    is_always_live = np.isin(kind, list(_ALWAYS_LIVE_KINDS))
    first = rng.integers(0, steps, variables)
    last = np.minimum(steps - 1, first + rng.integers(0, 2000, variables))
    variables_frame = pd.DataFrame(
        {
            "name": pd.Series(names, dtype=object),
            "bytes": nbytes.astype(np.int64),
            "always_live": is_always_live,
            "kind": pd.Categorical(kind),
            "dtype": pd.Categorical(_DTYPES[dtype_idx]),
            "shape": pd.Series(shape, dtype=object),
            "tiles": np.minimum(tiles, 1 + nbytes // 4096).astype(np.int64),
            "first_step": pd.arrays.IntegerArray(np.where(is_always_live, 0, first), is_always_live.copy()),
            "last_step": pd.arrays.IntegerArray(np.where(is_always_live, 0, last), is_always_live.copy()),
            # attribution: model state and gradients belong to their block's parameter
            "parameter": pd.Series(np.where(np.isin(kind, list(_ATTRIBUTED_KINDS)), _parameters(names), ""),
                                   dtype=object),
            "role": pd.Categorical(_ROLE_OF_KIND[kind_idx]),
            "which": pd.Categorical(np.where(kind == "optimizer_state",
                                             np.array(["first_order", "second_order"], dtype=object)[
                                                 np.arange(variables) % 2], "")),
        }
    )

    programs = np.array([f"layer{i // 20}/{_OPS[i % 10]}/{'fwd' if i % 20 < 10 else 'bwd'}" for i in range(4000)],
                        dtype=object)
    prog_idx = rng.integers(0, len(programs), steps)
    type_idx = rng.integers(0, len(_PROGRAM_TYPES), steps)
    curve = (np.sin(np.linspace(0, np.pi, steps)) * 150e6 + rng.normal(0, 2e6, steps)).clip(0)
    liveness = pd.DataFrame(
        {
            "step": np.arange(steps, dtype=np.int64),
            "program": pd.Series(programs[prog_idx], dtype=object),
            "program_type": pd.Categorical(_PROGRAM_TYPES[type_idx]),
            "not_always_live_bytes": curve.astype(np.int64),
            "ipu": pd.array([pd.NA] * steps, dtype="Int64"),
        }
    )

    code_progs = 3000
    code_cats = np.array(["controlCode", "internalExchangeCode", "vertexCode"], dtype=object)
    code = make_frame(
        "code",
        {
            "name": np.repeat(programs[:code_progs], len(code_cats)),
            "type": np.repeat(_PROGRAM_TYPES[np.arange(code_progs) % len(_PROGRAM_TYPES)], len(code_cats)),
            "category": np.tile(code_cats, code_progs),
            "code_bytes": rng.integers(0, 50_000, code_progs * len(code_cats)),
        },
    )

    exec_steps, runs = 5000, 2
    exec_types = rng.integers(0, len(_PROGRAM_TYPES), exec_steps)
    execution = make_frame(
        "execution",
        {
            "run": np.repeat(np.arange(runs), exec_steps),
            "step": np.tile(np.arange(exec_steps), runs),
            "program": np.tile(programs[rng.integers(0, len(programs), exec_steps)], runs),
            "type": np.tile(_PROGRAM_TYPES[exec_types], runs),
            "phase": np.tile(_PHASE_OF_TYPE[exec_types], runs),
            "cycles": rng.integers(10, 100_000, exec_steps * runs),
        },
    )

    buffers = 48
    entries = rng.integers(1, 9, buffers)
    elements = rng.integers(1_000, 400_000, buffers)
    remote = make_frame(
        "remote_buffers",
        {
            "name": [f"remote/layer{i}.{_PARAMS[i % 4]}" for i in range(buffers)],
            "entries": entries,
            "shape": [f"[{e}]" for e in elements],
            "dtype": ["float32"] * buffers,
            "sharded": (np.arange(buffers) % 2 == 0),
            "bytes": entries * elements * 4,
        },
    )
    meta = ReportMeta(
        source="",
        format="store",
        producer="profcompare-benchmark (synthetic)",
        simulated=True,
        target=Target("Mk2", num_ipus=4, tiles_per_ipu=TILES_PER_IPU, bytes_per_tile=BYTES_PER_TILE,
                      clock_hz=CLOCK_HZ, num_replicas=4, ipus_per_replica=1),
        workload="synthetic",
        variant="base",
        config={"variables": variables, "steps": steps, "seed": seed},
        samples_per_step=256,
    )
    return Report.build(meta, tiles=tile_frame, categories=categories, variables=variables_frame,
                        liveness=liveness, code=code, execution=execution, remote_buffers=remote)


def perturb(base: Report, seed: int = 1) -> Report:
    """Return a perturbation of ``base``: ~2% of variables grown/shrunk, 0.5% removed, 0.5%
    added, and the numeric suffix of every suffixed name (2%) changed; tiles, liveness and
    execution shifted a little."""
    rng = np.random.default_rng(seed)
    v = base.variables
    n = len(v)
    keep = rng.random(n) >= 0.005
    nbytes = v["bytes"].to_numpy().copy()
    grow = rng.random(n) < 0.02
    nbytes[grow] = (nbytes[grow] * rng.choice([0.5, 1.5, 2.0], int(grow.sum()))).astype(np.int64)
    names = v["name"].to_numpy(dtype=object)
    renamed = np.array(["__" in s for s in names.tolist()])
    new_names = names.copy()
    for i in np.flatnonzero(renamed).tolist():
        stem, _, num = names[i].rpartition("__")
        new_names[i] = f"{stem}__{int(num) + 1}"
    variables = v.assign(name=pd.Series(new_names, dtype=object), bytes=nbytes)[keep].reset_index(drop=True)
    added = max(1, n // 200)
    extra = base.variables.iloc[rng.integers(0, n, added)].reset_index(drop=True)
    extra = extra.assign(name=pd.Series([f"model.extra{i}.adapter.weight" for i in range(added)], dtype=object))
    variables = pd.concat([variables, extra], ignore_index=True)
    for col in ("kind", "dtype", "role", "which"):
        variables[col] = variables[col].astype(base.variables[col].dtype)

    tiles = base.tiles.copy()
    tiles["variable"] = (tiles["variable"] * 1.03).astype(np.int64)
    fixed = ["bytes_including_gaps", "bytes_excluding_gaps", "not_always_live_peak_bytes"]
    delta = tiles["variable"] - base.tiles["variable"]
    for col in fixed:
        tiles[col] = tiles[col] + delta
    categories = base.categories.copy()
    categories.loc[categories["category"] == "variable", "bytes"] = int(tiles["variable"].sum())
    liveness = base.liveness.copy()
    liveness["not_always_live_bytes"] = (liveness["not_always_live_bytes"] * 1.05).astype(np.int64)
    execution = base.execution.copy()
    execution["cycles"] = (execution["cycles"] * rng.uniform(0.9, 1.2, len(execution))).astype(np.int64)
    meta = base.meta.replace(variant="new", config={**base.meta.config, "seed": seed})
    return Report.build(meta, tiles=tiles, categories=categories, variables=variables, liveness=liveness,
                        code=base.code, execution=execution, remote_buffers=base.remote_buffers)


def make_reports(out_dir: pathlib.Path, *, variables: int = 1_000_000, steps: int = 200_000,
                 overwrite: bool = False) -> tuple[pathlib.Path, pathlib.Path]:
    """Write the base and new reports under ``out_dir`` and return their paths."""
    base = make_base(variables, steps)
    new = perturb(base)
    paths = []
    for name, report in (("base", base), ("new", new)):
        directory = out_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        paths.append(write_report(report, directory / DEFAULT_FILENAME, overwrite=overwrite))
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", help="output directory (default: a new temporary directory)")
    parser.add_argument("--variables", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--force", action="store_true", help="overwrite existing reports")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out_dir) if args.out_dir else pathlib.Path(tempfile.mkdtemp(prefix="profcompare-scale-"))
    start = time.perf_counter()
    try:
        base, new = make_reports(out, variables=args.variables, steps=args.steps, overwrite=args.force)
    except (ProfcompareError, OSError) as exc:  # one line, no traceback
        print(f"make_scale_reports: error: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    print(f"base: {base} ({base.stat().st_size / 2**20:.1f} MiB)")
    print(f"new:  {new} ({new.stat().st_size / 2**20:.1f} MiB)")
    print(f"generated in {elapsed:.2f} s")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
