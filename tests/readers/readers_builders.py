"""Small Reports built in code, shared by the reader tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.model import (
    COMPACT_TEXT_COLUMNS,
    UNATTRIBUTED_OPERATION,
    UNATTRIBUTED_VERTICES,
    Report,
    ReportMeta,
    Target,
    make_frame,
    operations_from_rows,
    programs_from_rows,
    table_from_rows,
)

ODD_NAMES = ["</script><b>x</b>", "Ünïcødé/变量/🙂", "quote\"and'apostrophe", "semi;colon -- DROP TABLE x", "tab\tnewline\n"]


def build_report(*, variables: int = 40, steps: int = 30) -> Report:
    """A Report with every table filled (odd names, nulls, bools, categories, tile categories)."""
    rng = np.random.default_rng(7)
    tiles = 8
    tile_frame = make_frame(
        "tiles",
        {
            "tile": np.arange(tiles),
            "ipu": np.arange(tiles) // 4,
            "bytes_including_gaps": rng.integers(1000, 2000, tiles),
            "bytes_excluding_gaps": rng.integers(500, 1000, tiles),
            "always_live_bytes": rng.integers(100, 500, tiles),
            "not_always_live_peak_bytes": rng.integers(0, 300, tiles),
            "vertexCode": rng.integers(0, 100, tiles),
            "variable": rng.integers(0, 100, tiles),
            "stack": rng.integers(0, 100, tiles),
        },
    )
    categories = make_frame(
        "categories",
        {"category": ["vertexCode", "variable", "stack"], "group": ["code", "variables", "other"], "bytes": [10, 20, 30]},
    )
    names = [f"layer{i}/weight" for i in range(variables - len(ODD_NAMES))] + ODD_NAMES
    always = np.arange(variables) % 3 == 0
    first = pd.array(np.where(always, 0, np.arange(variables) % steps), dtype="Int64")
    last = pd.array(np.where(always, 0, np.minimum(steps - 1, np.arange(variables) % steps + 5)), dtype="Int64")
    first[always] = pd.NA
    last[always] = pd.NA
    variables_frame = make_frame(
        "variables",
        {
            "name": names,
            "bytes": rng.integers(0, 1 << 40, variables),
            "always_live": always,
            "kind": np.array(["weight", "activation", "gradient", "optimizer_state"])[np.arange(variables) % 4],
            "dtype": np.array(["float16", "float32", ""])[np.arange(variables) % 3],
            "shape": np.array(["[784, 512]", "[]", ""])[np.arange(variables) % 3],
            "tiles": rng.integers(1, 9, variables),
            "first_step": first,
            "last_step": last,
            "parameter": np.array(["fc1.weight", "", "fc2.bias</b>", "fc1.weight"])[np.arange(variables) % 4],
            "role": np.array(["weight", "activation", "gradient", "optimizer_state"])[np.arange(variables) % 4],
            "which": np.array(["", "", "", "second_order"])[np.arange(variables) % 4],
        },
    )
    # categories in a non-lexical order with an unused level: must survive the round trip
    variables_frame["kind"] = variables_frame["kind"].cat.set_categories(
        ["weight", "optimizer_state", "gradient", "activation", "accumulator"]
    )
    liveness = make_frame(
        "liveness",
        {
            "step": np.arange(steps),
            "program": [ODD_NAMES[i % len(ODD_NAMES)] if i % 7 == 0 else f"prog{i % 4}" for i in range(steps)],
            "program_type": np.array(["OnTileExecute", "DoExchange", "StreamCopy"])[np.arange(steps) % 3],
            "not_always_live_bytes": rng.integers(0, 10_000, steps),
        },
    )
    code = make_frame(
        "code",
        {
            "name": ["prog0", "prog0", "</script>"],
            "type": ["OnTileExecute", "OnTileExecute", "DoExchange"],
            "category": ["controlCode", "vertexCode", "internalExchangeCode"],
            "code_bytes": [100, 200, 300],
        },
    )
    execution = make_frame(
        "execution",
        {
            "run": [0, 0, 1, 1],
            "step": [0, 1, 0, 1],
            "program": ["prog0", "prog1", "prog0", "prog1"],
            "type": ["OnTileExecute", "DoExchange", "OnTileExecute", "DoExchange"],
            "phase": ["compute", "exchange", "compute", "exchange"],
            "cycles": [1000, 200, 1010, 190],
        },
    )
    remote = make_frame(
        "remote_buffers",
        {
            "name": ["remote/w", "remote/</b>"],
            "entries": [4, 1],
            "shape": ["[512]", "[]"],
            "dtype": ["float32", "float16"],
            "sharded": [True, False],
            "bytes": [8192, 2],
            "parameter": ["fc1.weight", ""],
            "role": ["optimizer_state", "other"],
            "which": ["first_order", ""],
        },
    )
    # two IPUs, overlapping blocks (a SyncAns over the others), nested ones, a hostile name
    trace = make_frame(
        "trace",
        {
            "ipu": [0, 0, 0, 1, 1],
            "cycles_from": [0, 0, 600, 0, 300],
            "cycles_to": [600, 1200, 1200, 300, 1200],
            "type": ["OnTileExecute", "SyncAns", "InternalSync", "StreamCopyBegin", "GlobalExchange"],
            "name": ["Convolve", "SyncAns", "Internal Sync", "Begin", "x</script><b>y</b>"],
            "program": ["matmul/1", "SyncAns", "matmul/1", "host_load", "x</script><b>y</b>"],
            "parent": ["matmul/1", "", "matmul/1", "host_load", ""],
            "depth": [1, 0, 1, 1, 0],
        },
    )
    # a program tree: two roots, nesting, a program on no known IPU, a hostile name
    programs = programs_from_rows([
        (0, None, 0, "Sequence", "WeightsFromHost", "", None),
        (1, 0, 1, "StreamCopyMid", "WeightsFromHost/w/Mid", "", 0),
        (2, None, 0, "Sequence", "main", "", None),
        (3, 2, 1, "Sequence", "matmul/1", "matmul/1", 0),
        (4, 3, 2, "OnTileExecute", "matmul/1/Convolve", "matmul/1", 0),
        (5, 2, 1, "Call", "x</script><b>y</b>", "call", 1),
    ])
    # operations: one with everything, one with unknowns, a hostile name, the remainder row
    operations = operations_from_rows([
        ("matmul/1", "matmul/1", "MatMul", "popart", 0, 4096, 256, 1024, 5000, 2 * 512 * 784 * 8, 4, "model.py:12",
         "fc1.weight", "weight"),
        ("x</script><b>y</b>", "", "Gelu", "", None, 128, 0, 0, None, None, None, "", "", "activation"),
        (UNATTRIBUTED_OPERATION, "", "", "", None, 900, 12, 40, 77, None, None, ""),
    ])
    # vertex types, compute sets, exchanges: unknowns, a hostile name, remainder rows
    vertices = table_from_rows("vertices", [
        ("poplin::ConvPartial1x1Out<half,float>", 24, 1152, 6400, 4, 2),
        ("x</script><b>y</b>", 3, 0, 96, None, 1),
        (UNATTRIBUTED_VERTICES, 0, 32, 0, None, 0),
    ])
    compute_sets = table_from_rows("compute_sets", [
        ("matmul/1/Convolve", 4, "matmul/1", 0, 1, 24, 1152, 900, 4),
        ("x</script><b>y</b>", None, "", None, 1, 3, 0, None, None),
    ])
    exchanges = table_from_rows("exchanges", [
        ("matmul/1/Exchange", None, "matmul/1", 0, "DoExchange", 1024, 120, 4),
        ("WeightsFromHost/w/Mid", 1, "", 0, "StreamCopyMid", 40, None, 2),
    ])
    meta = ReportMeta(
        source="",
        format="store",
        producer="profcompare-sim 0.1.0",
        simulated=True,
        target=Target("Mk2", num_ipus=8, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9, num_replicas=4,
                      ipus_per_replica=2),
        oom=True,
        capabilities=frozenset({"tiles", "variables", "liveness", "code"}),
        workload="mnist",
        variant="onchip-sharded",
        config={"replicas": 4, "lr": 0.001, "name": "é</script>", "nested": {"a": [1, 2]}},
        samples_per_step=256,
        created="2024-01-02T03:04:05+00:00",
    )
    return Report.build(meta, tiles=tile_frame, categories=categories, variables=variables_frame, liveness=liveness,
                        code=code, execution=execution, remote_buffers=remote, trace=trace, programs=programs,
                        operations=operations, vertices=vertices, compute_sets=compute_sets, exchanges=exchanges)


def assert_reports_equal(left: Report, right: Report, *, ignore_meta: tuple[str, ...] = ("source",)) -> None:
    """Every table equal (pandas.testing, dtypes included; a text column a store keeps as codes,
    model.COMPACT_TEXT_COLUMNS, compared as text) and meta equal except ``ignore_meta``."""
    for table in ("tiles", "categories", "variables", "liveness", "code", "execution", "remote_buffers", "trace", "programs",
                  "operations", "vertices", "compute_sets", "exchanges"):
        pd.testing.assert_frame_equal(as_text(table, getattr(left, table)), as_text(table, getattr(right, table)),
                                      obj=table)
    blank = {k: {"format": "store", "workload": None, "variant": None, "created": None}.get(k, "") for k in ignore_meta}
    assert left.meta.replace(**blank) == right.meta.replace(**blank)


def as_text(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its compact text columns (model.COMPACT_TEXT_COLUMNS) as object columns, as
    another reader may give them."""
    compact = [c for c in frame.columns if (table, c) in COMPACT_TEXT_COLUMNS
               and isinstance(frame[c].dtype, pd.CategoricalDtype)]
    if not compact:
        return frame
    return frame.assign(**{c: frame[c].astype(object) for c in compact})


def assert_table_equal(table: str, left: pd.DataFrame, right: pd.DataFrame, **options: object) -> None:
    """``pd.testing.assert_frame_equal`` of two ``table`` frames, compact text columns as text."""
    pd.testing.assert_frame_equal(as_text(table, left), as_text(table, right), **options)  # type: ignore[arg-type]
