"""PopART session options in the compile model and the report's meta (hand-checked)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device
from profcompare.errors import ReportFormatError
from profcompare.readers.store import read_report, write_report

MK2 = get_device("mk2")


def _matmul_report(partials: str | None, op_partials=None):
    """(16 x 4096) @ (4096 x 16) in float16: the plan splits the 4096-long contraction 256 ways
    to use the tiles its 256-element output cannot fill."""
    ir = popxl.Ir()
    opts = ir._pb_ir.getSessionOptions()
    if partials is not None:
        opts.partialsTypeMatMuls = partials
    opts.engineOptions["target.syncReplicasIndependently"] = "true"
    with ir.main_graph:
        a = popxl.variable(np.ones((16, 4096), np.float16), name="a")
        b = popxl.variable(np.ones((4096, 16), np.float16), name="b")
        c = ops.matmul(a, b, partials_type=op_partials)
        s = popxl.d2h_stream(c.shape, c.dtype, "c")
        ops.host_store(s, c)
    return compile_program(lower(ir), MK2).report


def _partials_bytes(report) -> int:
    v = report.variables
    return int(v.loc[v["name"].str.endswith("/partials"), "bytes"].sum())


def test_half_partials_halve_the_matmul_partials() -> None:
    # by hand: 16 x 16 outputs x 256 contraction splits = 65,536 partials; 4 B each in float
    # (PopLibs' default), 2 B with partialsTypeMatMuls="half"
    assert _partials_bytes(_matmul_report(None)) == 65536 * 4
    assert _partials_bytes(_matmul_report("float")) == 65536 * 4
    assert _partials_bytes(_matmul_report("half")) == 65536 * 2
    # an op's own partials type overrides the session's, as in PopART
    assert _partials_bytes(_matmul_report("half", popxl.float32)) == 65536 * 4


def test_session_options_are_in_the_meta_and_survive_the_store(tmp_path) -> None:
    report = _matmul_report("half")
    assert report.meta.session_options["partialsTypeMatMuls"] == "half"
    assert report.meta.session_options["engineOptions"] == {"target.syncReplicasIndependently": "true"}
    path = write_report(report, tmp_path / "r.sqlite")
    again = read_report(path)
    assert dict(again.meta.session_options) == dict(report.meta.session_options)
    assert again.meta.to_dict()["session_options"]["numIOTiles"] == 0


def test_stores_without_session_options_open_with_none(tmp_path) -> None:
    from tests.readers.test_store_execution_mode import _edit_meta

    path = write_report(_matmul_report("half"), tmp_path / "old.sqlite")
    _edit_meta(path, "DELETE FROM meta WHERE key = 'session_options'")  # as written before the field
    assert dict(read_report(path).meta.session_options) == {}
    _edit_meta(path, "INSERT INTO meta (key, value) VALUES ('session_options', ?)", "[1]")
    with pytest.raises(ReportFormatError, match="meta.session_options is a list, expected an object"):
        read_report(path)
