"""The operations in the JSON exports: ``show`` lists Report.operations, ``compare`` lists
Comparison.operations, row for row."""

from __future__ import annotations

import dataclasses
import json

from render_text_helpers import samples

from profcompare.comparison import compare
from profcompare.model import operations_from_rows
from profcompare.render.base import get_renderer

OPS = operations_from_rows([
    ("fc1/matmul", "fc1/matmul", "MatMul", "", 0, 4096, 256, 1024, 5000, 802816, 4, "model.py:12", "fc1.weight",
     "weight"),
    ("(not attributed to an op)", "", "", "", None, 3136, 0, 0, 100, None, None, ""),
])


def test_show_json_lists_the_operations() -> None:
    report = dataclasses.replace(samples.build_report("onchip"), operations=OPS)
    data = json.loads(get_renderer("json").render(report))
    assert data["operations"] == [
        {"name": "fc1/matmul", "debug_name": "fc1/matmul", "type": "MatMul", "layer": "", "ipu": 0,
         "code_bytes": 4096, "vertex_state_bytes": 256, "exchange_code_bytes": 1024, "cycles": 5000,
         "flops": 802816, "tiles": 4, "source": "model.py:12", "parameter": "fc1.weight", "role": "weight"},
        {"name": "(not attributed to an op)", "debug_name": "", "type": "", "layer": "", "ipu": None,
         "code_bytes": 3136, "vertex_state_bytes": 0, "exchange_code_bytes": 0, "cycles": 100, "flops": None,
         "tiles": None, "source": "", "parameter": "", "role": ""},
    ]
    # the ledger's code and cycles: the op's row, then the remainder's (schema_version 8)
    assert data["schema_version"] == 9
    assert data["ledger_code"] == [
        {"parameter": "fc1.weight", "role": "weight", "code_bytes": 4096, "cycles": 5000, "ops": 1, "bytes_moved": 0},
        # the sample's host transfers move no parameter's data: a row of their own, without ops
        {"parameter": "(activations)", "role": "", "code_bytes": 0, "cycles": None, "ops": 0, "bytes_moved": 57856},
        {"parameter": "(not attributed to an op)", "role": "", "code_bytes": 3136, "cycles": 100, "ops": 0,
         "bytes_moved": 0},
    ]


def test_compare_json_lists_the_paired_operations() -> None:
    base = dataclasses.replace(samples.build_report("onchip"), operations=OPS)
    new = dataclasses.replace(samples.build_report("offchip-sharded"), operations=OPS.iloc[1:].reset_index(drop=True))
    data = json.loads(get_renderer("json").render(compare(base, new)))
    assert [(r["name"], r["status"], r["base_code_bytes"], r["new_code_bytes"], r["delta_cycles"])
            for r in data["operations"]] == [
        ("fc1/matmul", "removed", 4096, 0, -5000), ("(not attributed to an op)", "unchanged", 3136, 3136, 0)]
    assert [(r["parameter"], r["role"], r["delta_code_bytes"], r["delta_cycles"], r["status"], r["largest_op"],
             r["base_bytes_moved"], r["new_bytes_moved"], r["delta_bytes_moved"])
            for r in data["ledger_code"]] == [
        ("fc1.weight", "weight", -4096, -5000, "removed", "fc1/matmul", 0, 0, 0),
        ("(activations)", "", 0, None, "unchanged", "", 57856, 74240, 16384),
        ("(not attributed to an op)", "", 0, 0, "unchanged", "", 0, 0, 0)]
