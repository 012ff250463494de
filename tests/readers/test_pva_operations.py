"""The pva reader's operations table, from a stand-in ``OperationAnalysis`` with the documented
attribute names (reference/pva.md "OperationAnalysis"; docs/pva-adapter.md)."""

from __future__ import annotations

import json
import pathlib
import sqlite3
from types import SimpleNamespace as NS

import pandas as pd
import pytest
from fake_pva import FakePva, build_report_tree, program

from profcompare.model import operations_from_rows
from profcompare.readers.pva import read_pva
from profcompare.render.sections.document import unrecorded_tables


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "profile.pop"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE programs (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    (tmp_path / "debug.cbor").write_bytes(b"\xa0")
    return path


def _operation(name: str, context_id: int, programs: list[NS], *, custom: dict | None = None,
               layer: str = "", where: tuple[str, int] | None = None) -> NS:
    location = NS(fileName=where[0], lineNumber=where[1]) if where else None
    context = NS(id=context_id, json=json.dumps(custom or {}), layer=json.dumps({"layer": layer}) if layer else "",
                 parents=[], location=location)
    return NS(name=name, debugContext=context, replacedDebugContext=[], programs=lambda: programs)


class _PvaWithOperations(FakePva):
    """The fake pva module with ``OperationAnalysis(report).operations``."""

    def __init__(self, operations: list[NS]) -> None:
        super().__init__(build_report_tree())
        self._operations = operations

    def OperationAnalysis(self, report: NS) -> NS:  # noqa: N802 - pva's name
        assert report is self.tree
        return NS(operations=self._operations)


def _analysis() -> list[NS]:
    tree = build_report_tree()
    fwd, exch = tree.compilation.programs[1], tree.compilation.programs[2]
    fwd.computeset = NS(vertices=[NS(type=NS(name="Convolve", size=48), countByTile=[6, 6, 0, 0])])
    matmul = _operation("fc1/matmul", 7, [fwd], custom={"op_name": "fc1/matmul", "op_type": "MatMul"},
                        layer="poptorch", where=("model.py", 12))
    send = _operation("Call", 8, [exch])
    again = _operation("Call", 8, [exch])  # the same debug context listed twice: one row
    other = _operation("Call", 9, [program("x", "Sync", control=[0, 0, 0, 0])])
    return [matmul, send, again, other]


def test_operations_come_from_operation_analysis(profile: pathlib.Path) -> None:
    fake = _PvaWithOperations(_analysis())
    report = read_pva(profile, profile.with_name("debug.cbor"), pva_module=fake)
    # fc1/matmul: control 4 x 10 = 40 B, vertex state 48 x 12 = 576 B on tiles 0 and 1 (control on all 4)
    # Call (context 8): DoExchange control 4 x 1 + exchange 100 + 100 + 50 + 50 = 304 B
    # the report's code categories: vertexCode 390 + controlCode 80 = 470 B -> 470 - 40 - 304 = 126 left
    expected = operations_from_rows([
        ("fc1/matmul", "fc1/matmul", "MatMul", "poptorch", None, 40, 576, 0, None, None, 4, "model.py:12"),
        ("Call@1", "", "", "", None, 304, 0, 300, None, None, 4, ""),
        ("Call@2", "", "", "", None, 0, 0, 0, None, None, 0, ""),
        ("(not attributed to an op)", "", "", "", None, 126, 0, 0, None, None, None, ""),
    ])
    pd.testing.assert_frame_equal(report.operations, expected)
    assert "operations" in report.meta.capabilities


def test_without_debug_cbor_there_are_no_operations(profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=_PvaWithOperations(_analysis()))
    assert report.operations.empty and "operations" not in report.meta.capabilities
    assert "operations" in unrecorded_tables(report)


def test_an_sdk_without_operation_analysis_records_none(profile: pathlib.Path) -> None:
    report = read_pva(profile, profile.with_name("debug.cbor"), pva_module=FakePva())
    assert report.operations.empty and "operations" not in report.meta.capabilities
