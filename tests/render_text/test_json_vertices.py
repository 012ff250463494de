"""The vertex types, compute sets and exchanges in the JSON exports (schema version 8): ``show``
lists the Report tables, ``compare`` the paired rows, and ``sections`` holds the section."""

from __future__ import annotations

import dataclasses
import json

from render_text_helpers import samples

from profcompare.comparison import compare
from profcompare.model import table_from_rows
from profcompare.render.base import get_renderer

VERTICES = table_from_rows("vertices", [("popops::ScaledAdd2D<float>", 12, 192, 800, 4, 1)])
EXCHANGES = table_from_rows("exchanges", [("fc1/ExchangePre", 4, "fc1", 0, "DoExchange", 1024, 100, 4)])


def test_show_json_lists_the_tables() -> None:
    report = dataclasses.replace(samples.build_report("onchip"), vertices=VERTICES, exchanges=EXCHANGES)
    data = json.loads(get_renderer("json").render(report))
    assert data["schema_version"] == 9
    assert data["vertices"] == [{"name": "popops::ScaledAdd2D<float>", "instances": 12, "vertex_state_bytes": 192,
                                 "code_bytes": 800, "tiles": 4, "compute_sets": 1}]
    assert data["compute_sets"] == []
    assert data["exchanges"] == [{"name": "fc1/ExchangePre", "program": 4, "op": "fc1", "ipu": 0, "type": "DoExchange",
                                  "code_bytes": 1024, "cycles": 100, "tiles": 4}]
    section = next(s for s in data["sections"] if s["id"] == "vertices")
    assert section["title"] == "Vertices, compute sets and exchanges"
    assert [t["id"] for t in section["tables"]] == ["vertices-vertices", "vertices-exchanges"]


def test_compare_json_lists_the_paired_rows() -> None:
    base = dataclasses.replace(samples.build_report("onchip"), exchanges=EXCHANGES)
    grown = table_from_rows("exchanges", [("fc1/ExchangePre", 4, "fc1", 0, "DoExchange", 2048, 100, 4)])
    new = dataclasses.replace(samples.build_report("offchip-sharded"), exchanges=grown)
    data = json.loads(get_renderer("json").render(compare(base, new)))
    assert [(r["name"], r["type"], r["base_code_bytes"], r["new_code_bytes"], r["delta_code_bytes"], r["status"])
            for r in data["exchanges"]] == [("fc1/ExchangePre", "DoExchange", 1024, 2048, 1024, "grew")]
    assert data["vertices"] == [] and data["compute_sets"] == []
