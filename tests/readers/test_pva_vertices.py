"""The pva reader's vertex types, compute sets and exchanges, from a stand-in report tree with the
documented attribute names (reference/pva.md "Programs, compute sets and vertices")."""

from __future__ import annotations

import pathlib
import sqlite3
from types import SimpleNamespace as NS

import pandas as pd
import pytest
from fake_pva import FakePva, build_report_tree

from profcompare.model import table_from_rows
from profcompare.readers.pva import read_pva
from profcompare.render.sections.document import unrecorded_tables


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "profile.pop"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE programs (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    return path


def _tree() -> NS:
    """The fake report (2 IPUs of 2 tiles per replica, a second replica's tiles after them) with
    vertices: fwd/matmul runs Convolve (48 B of state) on tiles 0-1 and Add (8 B) on tile 1, and
    the tiles hold their code."""
    tree = build_report_tree()
    fwd, exch = tree.compilation.programs[1], tree.compilation.programs[2]
    fwd.computeset = NS(vertices=[NS(type=NS(name="Convolve", size=48), countByTile=[6, 6, 0, 0, 9, 9, 9, 9]),
                                  NS(type=NS(name="Add", size=8), countByTile=[0, 2, 0, 0])],
                        estimatedCyclesByTile=[400, 420, 0, 0])
    exch.estimatedCyclesByTile = [30, 35, 20, 20]
    tiles = tree.compilation.tiles
    tiles[0].vertices = [NS(type=NS(name="Convolve"), codeBytes=60)]
    tiles[1].vertices = [NS(type=NS(name="Convolve"), codeBytes=70), NS(type=NS(name="Add"), codeBytes=40)]
    tiles[4].vertices = [NS(type=NS(name="Convolve"), codeBytes=999)]  # the second replica: not read
    return tree


def test_the_tables_come_from_the_documented_attributes(profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(_tree()))
    # Convolve: 12 instances x 48 B = 576 B, code 60 + 70 on 2 tiles; Add: 2 x 8 B = 16 B, 40 B on
    # tile 1; the report's vertexCode is 100 + 110 + 90 + 90 = 390 B: 390 - 170 = 220 B left
    expected_vertices = table_from_rows("vertices", [
        ("Convolve", 12, 576, 130, 2, 1),
        ("Add", 2, 16, 40, 1, 1),
        ("(not attributed to a vertex type)", 0, 0, 220, None, 0),
    ])
    pd.testing.assert_frame_equal(report.vertices, expected_vertices)
    # both vertex types on tiles 0-1, IPU 0; its cycles the largest of estimatedCyclesByTile
    expected_sets = table_from_rows("compute_sets", [("fwd/matmul", 11, "", 0, 2, 14, 592, 420, 2)])
    pd.testing.assert_frame_equal(report.compute_sets, expected_sets)
    # the DoExchange's codeBytesByTile (300 B on 4 tiles, both IPUs) and the StreamCopyMid's (14 B)
    expected_exchanges = table_from_rows("exchanges", [
        ("fwd/exchange", 12, "", None, "DoExchange", 300, 35, 4),
        ("host/copy", 13, "", 0, "StreamCopyMid", 14, None, 2),
    ])
    pd.testing.assert_frame_equal(report.exchanges, expected_exchanges)
    assert "vertices" in report.meta.capabilities


def test_a_profile_without_compute_sets_records_none(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    for prog in tree.compilation.programs:
        if hasattr(prog, "codeBytesByTile"):
            del prog.codeBytesByTile
    report = read_pva(profile, pva_module=FakePva(tree))
    assert report.vertices.empty and report.compute_sets.empty and report.exchanges.empty
    assert "vertices" not in report.meta.capabilities
    assert "vertices" in unrecorded_tables(report)
