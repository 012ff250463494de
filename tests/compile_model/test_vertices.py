"""The simulated vertex types, compute sets and exchanges (Report.vertices, compute_sets,
exchanges): one program counted by hand from the code and cycle rules (code.py, cycles.py), and
the columns reconciling with the report's categories."""

from __future__ import annotations

import pandas as pd
import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.model import table_from_rows
from tests.compile_model.test_operations import TINY, _gelu_program
from workloads import mnist
from workloads._mnist_program import build_program


def test_the_gelu_program_counted_by_hand():
    report = compile_program(_gelu_program(), TINY).report
    assert (TINY.vertex_state_bytes, TINY.worker_contexts, TINY.codelet_bytes["nonlinearity"]) == (16, 6, 320)
    # gelu: one compute set on the 4 tiles, 512 B per tile gives min(512 / 8, 6) = 6 vertices of
    # 16 B on each tile: 24 vertices, 384 B of state; the nonlinearity codelet, 320 B, on each of
    # the 4 tiles: 1,280 B, the report's vertexCode; its compute phase is 626 cycles (the 720 of
    # the op less its internal sync's 94)
    expected_vertices = table_from_rows("vertices", [("codelets:nonlinearity", 24, 384, 1280, 4, 1)])
    pd.testing.assert_frame_equal(report.vertices, expected_vertices)
    expected_sets = table_from_rows("compute_sets", [("gelu", 6, "gelu", 0, 1, 24, 384, 626, 4)])
    pd.testing.assert_frame_equal(report.compute_sets, expected_sets)
    # the host load and store: each Mid holds 96 B of host exchange code on each of the 4 tiles
    # and takes 1,605 cycles of host I/O
    expected_exchanges = table_from_rows("exchanges", [
        ("load_x/Mid", 3, "load_x", 0, "StreamCopyMid", 384, 1605, 4),
        ("store_y/Mid", 10, "store_y", 0, "StreamCopyMid", 384, 1605, 4),
    ])
    pd.testing.assert_frame_equal(report.exchanges, expected_exchanges)
    assert "vertices" in report.meta.capabilities


def _category(report, *names: str) -> int:
    categories = report.categories.set_index("category")["bytes"]
    return int(sum(int(categories.get(name, 0)) for name in names))


@pytest.mark.parametrize("variant", ["onchip", "offchip-sharded"])
def test_the_mnist_tables_reconcile_with_the_categories(variant):
    config = {k.name: k.default for k in mnist.KNOBS}
    config.update({"replicas": 4, "grad_accum": 2, "micro_batch": 4, "hidden": 64, "layers": 1,
                   "sharded_threshold": 64})
    report = compile_program(lower(build_program(variant, config).ir, "ipu_hw")).report
    assert int(report.vertices["code_bytes"].sum()) == _category(report, "vertexCode")
    assert int(report.vertices["vertex_state_bytes"].sum()) == _category(report, "vertexInstanceState")
    assert int(report.compute_sets["vertex_state_bytes"].sum()) == _category(report, "vertexInstanceState")
    assert int(report.exchanges["code_bytes"].sum()) == _category(
        report, "internalExchangeCode", "hostExchangeCode", "globalExchangeCode")
    # exact by construction: no remainder rows
    assert not report.vertices["name"].str.startswith("(not attributed").any()
    assert not report.exchanges["name"].str.startswith("(not attributed").any()
    assert int(report.vertices["instances"].sum()) == int(report.compute_sets["vertices"].sum())
    assert int(report.vertices["compute_sets"].sum()) == len(report.compute_sets)
    assert set(report.vertices["name"]) >= {"codelets:matmul", "codelets:copy"}


def test_a_graph_loaded_by_remote_code_load_keeps_the_tables_reconciled():
    from tests.compile_model.test_loaded_code import _doubling_program

    _, loading, _ = _doubling_program(1, load=True, reduce=True)
    report = loading.report
    # the body's exchange code is loaded at run time, not always live: no row, as no category holds it
    assert _category(report, "internalExchangeCode") == 0
    assert not (report.exchanges["type"] == "DoExchange").any()
    assert not report.exchanges["name"].str.endswith("/exchange").any()
    assert int(report.exchanges["code_bytes"].sum()) == _category(
        report, "internalExchangeCode", "hostExchangeCode", "globalExchangeCode")
    # its vertices stay: vertex state is not loaded code
    assert int(report.compute_sets["vertex_state_bytes"].sum()) == _category(report, "vertexInstanceState")
    assert int(report.vertices["code_bytes"].sum()) == _category(report, "vertexCode")
