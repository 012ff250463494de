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


def _temporaries(amp_session: str | None = None, amp_op: float | None = None) -> dict[str, int]:
    ir = popxl.Ir()
    if amp_session is not None:
        ir._pb_ir.getSessionOptions().matmulOptions["availableMemoryProportion"] = amp_session
    with ir.main_graph:
        a = popxl.variable(np.ones((16, 4096), np.float16), name="a")
        b = popxl.variable(np.ones((4096, 16), np.float16), name="b")
        c = ops.matmul(a, b, available_memory_proportion=amp_op)
        s = popxl.d2h_stream(c.shape, c.dtype, "c")
        ops.host_store(s, c)
    v = compile_program(lower(ir), MK2).report.variables
    return {n.rsplit("/", 1)[1]: int(b) for n, b in zip(v["name"], v["bytes"]) if "/" in n}


def test_available_memory_proportion_bounds_the_matmul_temporaries() -> None:
    # by hand: each operand is 16 x 4096 x 2 B = 128 KiB over 1024 tiles (128 B each, the
    # minimum), so the plan uses T = 1024 tiles; the smaller operand is copied ceil(sqrt(1024))
    # = 32 times (4 MiB) and the 256 outputs get 256 float partials (256 KiB): 4,456,448 B
    unbounded = {"operand_copies": 131072 * 32, "partials": 256 * 4 * 256}
    assert _temporaries() == unbounded  # within the default 0.6 x 624 KiB x 1024 tiles
    # 0.0001 of a tile's 638,976 B on 1024 tiles is 65,430 B: 4,456,448 / 65,430 -> 69 pieces
    bounded = {k: -(-b // 69) for k, b in unbounded.items()}
    assert _temporaries(amp_session="0.0001") == bounded == {"operand_copies": 60788, "partials": 3800}
    assert _temporaries(amp_op=0.0001) == bounded  # the op's own proportion
    assert _temporaries(amp_session="0.0001", amp_op=0.6) == unbounded  # overrides the session's
    with pytest.raises(ValueError, match=r"matmulOptions\['availableMemoryProportion'\] must be in \(0, 1\], got '2'"):
        _temporaries(amp_session="2")
