"""Programs that do not fit are still reported, flagged oom, with the tiles over budget."""

from __future__ import annotations

import json

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.engine import Engine
from profcompare.emulator.targets import MK1, MK2
from profcompare.errors import IpuOutOfMemoryError
from profcompare.readers.store import read_report


def _big_program():
    # 80M float32 = 320 MB of weights: more than a Mk1 IPU (304 MiB), well inside a Mk2 (897 MiB)
    b = ProgramBuilder()
    w = b.variable("huge.weight", (80_000, 1000))
    (x,) = b.op("HostLoad", [], [("x", (8, 80_000), "float32")], attrs={"stream": "x"})
    (y,) = b.op("MatMul", [x, w], [("y", (8, 1000), "float32")], flops=2 * 8 * 80_000 * 1000)
    b.op("HostStore", [y], attrs={"stream": "y"})
    return b.build()


def test_too_big_for_mk1_fits_mk2():
    mk1 = compile_program(_big_program(), MK1)
    mk2 = compile_program(_big_program(), MK2)
    assert mk1.oom and mk1.report.meta.oom and not mk2.oom and not mk2.report.meta.oom
    tiles = mk1.report.tiles
    over = tiles[tiles["bytes_including_gaps"] > MK1.bytes_per_tile]
    assert len(over) == mk1.tiles_over_budget > 0
    assert mk1.report.summary()["tiles_over_budget"] == len(over)
    assert tiles.loc[mk1.worst_tile, "bytes_including_gaps"] == mk1.worst_tile_bytes == tiles["bytes_including_gaps"].max()
    assert len(tiles) == MK1.tiles_per_ipu


def test_engine_writes_report_then_raises(tmp_path):
    env = {"POPLAR_ENGINE_OPTIONS": json.dumps({"autoReport.all": "true", "autoReport.directory": str(tmp_path)}),
           "PROFCOMPARE_SIM_TARGET": "mk1"}
    with pytest.raises(IpuOutOfMemoryError) as err:
        Engine(_big_program(), environ=env)
    msg = str(err.value)
    assert "does not fit" in msg and "tiles over budget" in msg and "worst tile" in msg
    assert err.value.report_path == str(tmp_path / "profile.sqlite")
    report = read_report(tmp_path / "profile.sqlite")
    assert report.meta.oom and report.meta.simulated
    assert report.summary()["tiles_over_budget"] > 0


def test_allow_out_of_memory_does_not_raise(tmp_path):
    env = {"POPLAR_ENGINE_OPTIONS": json.dumps({"autoReport.all": True, "autoReport.directory": str(tmp_path),
                                                "debug.allowOutOfMemory": "true"}),
           "PROFCOMPARE_SIM_TARGET": "mk1"}
    engine = Engine(_big_program(), environ=env)
    assert engine.compiled.oom
    assert read_report(tmp_path / "profile.sqlite").meta.oom


def test_oom_without_autoreport_raises_without_path():
    with pytest.raises(IpuOutOfMemoryError) as err:
        Engine(_big_program(), environ={"PROFCOMPARE_SIM_TARGET": "mk1"})
    assert err.value.report_path is None
