"""The host memory a numeric Session needs, estimated before it is allocated, and the refusal
naming the estimate and suggesting compile-only."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import host_memory
from profcompare.emulator.popxl.errors import SimulatorHostMemoryError
from profcompare.errors import ProfcompareError


def _program() -> tuple[popxl.Ir, popxl.Tensor]:
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        a = popxl.variable(np.zeros((8, 16), np.float32), name="a")
        popxl.variable(np.zeros((2, 4), np.float16), name="g", replica_grouping=ir.replica_grouping(group_size=2))
        buffer = popxl.remote_buffer((4, 4), popxl.float32, entries=3)
        popxl.remote_variable(np.zeros((4, 4), np.float32), buffer, 0, name="r")
        popxl.variable(np.zeros((2, 2), np.float32), name="b", retrieval_mode="all_replicas")
    return ir, a


def test_session_bytes_counts_every_copy_numeric_execution_makes(monkeypatch):
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    monkeypatch.delenv(host_memory.ENV_VAR, raising=False)
    ir, _ = _program()
    # a: 512 B, 2 host copies + 4 device copies = 3072
    # g: 8 B per group, 2 groups: 2 host copies of 16 B + 4 device copies of 8 B = 64
    # r: 64 B, 2 host copies = 128 (its device copies are the buffer's)
    # buffer: 4 replicas x 3 entries x 64 B = 768
    # b: 16 B, 2 host copies + 4 device copies + 4 per-replica host values = 160
    assert host_memory.session_bytes(ir) == 3072 + 64 + 128 + 768 + 160 == 4192
    # the running estimate while variables are created leaves the buffer to the Session:
    # a 3072, g 2 x 16 + 4 x 8 = 64, r 128 + 4 x 64 = 384, b 32 + 4 x 16 = 96
    assert ir._numeric_host_bytes == 3072 + 64 + 384 + 96 == 3616


def test_the_session_refuses_before_allocating(monkeypatch):
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    monkeypatch.setenv(host_memory.ENV_VAR, "4000")
    ir, _ = _program()  # 3616 bytes while creating variables: allowed
    with pytest.raises(SimulatorHostMemoryError) as caught:
        popxl.Session(ir, "ipu_model")
    assert str(caught.value) == (
        "numeric simulation needs at least 4.1 KiB (4,192 bytes) of host memory for the Session's copies of 4 "
        "variable(s) and 1 remote buffer(s) on 4 replica(s), more than the 3.9 KiB (4,000 bytes) available "
        "(PROFCOMPARE_SIM_HOST_MEMORY); profile it with --compile-only (or PROFCOMPARE_SIM_EXECUTION=compile-only): "
        "memory and time are modelled the same, no values are computed")
    assert not ir._prepared  # refused before lowering


def test_a_variable_past_the_limit_is_refused_when_created(monkeypatch):
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    monkeypatch.setenv(host_memory.ENV_VAR, "3100")
    with pytest.raises(SimulatorHostMemoryError, match=r"3,136 bytes\) of host memory for the 2 variables created"):
        _program()  # a: 3072, then g: 3136


def test_compile_only_is_not_limited(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    monkeypatch.setenv(host_memory.ENV_VAR, "1")
    ir, a = _program()
    with popxl.Session(ir, "ipu_model") as session:
        assert session.execution == "compile-only"


@pytest.mark.parametrize(("text", "expected"), [("1024", 1024), ("512MiB", 512 << 20), ("1.5 GiB", 3 << 29),
                                                ("2kib", 2048), ("7b", 7)])
def test_parse_bytes(text, expected):
    assert host_memory.parse_bytes(text) == expected


def test_a_bad_limit_is_one_line(monkeypatch):
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    monkeypatch.setenv(host_memory.ENV_VAR, "lots")
    with pytest.raises(ProfcompareError, match="^PROFCOMPARE_SIM_HOST_MEMORY must be a number of bytes .*got 'lots'$"):
        _program()


def test_without_an_override_the_limit_is_what_the_system_has_available(monkeypatch):
    monkeypatch.delenv(host_memory.ENV_VAR, raising=False)
    limit, source = host_memory.available_bytes()
    assert limit is not None and limit > 0 and source in ("MemAvailable", "available physical pages")
