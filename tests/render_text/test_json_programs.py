"""The program tree in the JSON exports: ``show`` lists Report.programs, ``compare`` lists
Comparison.programs, row for row."""

from __future__ import annotations

import dataclasses
import json

from render_text_helpers import samples

from profcompare.comparison import compare
from profcompare.model import programs_from_rows
from profcompare.render.base import get_renderer

TREE = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "matmul/100", "matmul", 0),
    (2, 1, 2, "OnTileExecute", "matmul/100/Convolve", "matmul", 0),
])


def test_show_json_lists_the_program_tree() -> None:
    report = dataclasses.replace(samples.build_report("onchip"), programs=TREE)
    data = json.loads(get_renderer("json").render(report))
    assert data["programs"] == [
        {"id": 0, "parent": None, "depth": 0, "kind": "Sequence", "name": "main", "op": "", "ipu": None},
        {"id": 1, "parent": 0, "depth": 1, "kind": "Sequence", "name": "matmul/100", "op": "matmul", "ipu": 0},
        {"id": 2, "parent": 1, "depth": 2, "kind": "OnTileExecute", "name": "matmul/100/Convolve", "op": "matmul",
         "ipu": 0},
    ]


def test_compare_json_lists_the_aligned_trees() -> None:
    base = dataclasses.replace(samples.build_report("onchip"), programs=TREE)
    new = dataclasses.replace(samples.build_report("offchip-sharded"), programs=TREE.iloc[:2].reset_index(drop=True))
    data = json.loads(get_renderer("json").render(compare(base, new)))
    assert [(row["name"], row["status"], row["base_programs"], row["new_programs"], row["delta_programs"])
            for row in data["programs"]] == [
        ("main", "changed", 3, 2, -1), ("matmul/100", "changed", 2, 1, -1),
        ("matmul/100/Convolve", "removed", 1, 0, -1)]
    assert data["programs"][2]["new_id"] is None and data["programs"][2]["base_id"] == 2
