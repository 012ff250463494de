"""Large kernels computed in parts of the replica axis on several threads
(profcompare.emulator.popxl.replica_threads) give the bits of one whole call, and the float16
softmax in float32 steps (float16_math.softmax_half) gives the bits of numpy's float16 steps."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import float16_math as half
from profcompare.emulator.popxl import ops, replica_threads


def _numpy_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """numpy's own float16 steps, as the simulator computed the softmax before."""
    e = x - x.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 3000.0])
def test_float16_softmax_is_numpys_bit_for_bit(scale: float) -> None:
    rng = np.random.default_rng(int(scale * 1000))
    for rows, n in ((1, 1), (3, 7), (5, 100), (2, 512), (4, 1000)):
        x = (rng.standard_normal((rows, n)) * scale).astype(np.float16)
        masked = x.copy()
        masked[rng.random(x.shape) < 0.4] = np.float16(-65504)  # attention masks: many exp underflows
        for value in (x, masked):
            assert _same_bits(half.softmax_half(value, -1), _numpy_softmax(value, -1))
            assert _same_bits(half.softmax_half(value, 1), _numpy_softmax(value, 1))


def test_float16_softmax_edge_values_and_other_axes() -> None:
    x = np.array([[1.0, -np.inf, 2.0, -np.inf], [np.inf, 1.0, 0.0, -1.0], [np.nan, 1.0, 0.0, 0.0],
                  [-np.inf, -np.inf, -np.inf, -np.inf], [6e-8, -6e-8, 0.0, -0.0]], np.float16)
    with np.errstate(invalid="ignore"):
        assert _same_bits(half.softmax_half(x, -1), _numpy_softmax(x, -1))
        # the first axis (numpy's float16 sum rounds each step there) and a transposed view
        assert _same_bits(half.softmax_half(x, 0), _numpy_softmax(x, 0))
        assert _same_bits(half.softmax_half(x.T, -1), _numpy_softmax(x.T, -1))
    # a hand-worked row: exp(0) / (exp(0) + exp(-inf)) = 1, exp(-inf) = 0
    np.testing.assert_array_equal(half.softmax_half(np.array([[0.0, -np.inf]], np.float16), -1), [[1.0, 0.0]])
    x32 = np.array([[1.0, 2.0, 3.0]], np.float32)
    assert _same_bits(half.softmax_half(x32, -1), _numpy_softmax(x32, -1))


def test_parts_cut_the_replica_axis_evenly() -> None:
    assert replica_threads.parts(2, 2) == [slice(0, 1), slice(1, 2)]
    assert replica_threads.parts(5, 2) == [slice(0, 2), slice(2, 5)]
    assert replica_threads.parts(3, 8) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    assert replica_threads.parts(4, 1) == [slice(0, 4)]


def test_thread_count_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replica_threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "3"}) == 3
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "1"}) == 1
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "64"}) == replica_threads.MAX_THREADS
    # off unless asked for
    assert replica_threads.thread_count({}) == 1
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "0"}) == 1
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "many"}) == 1
    monkeypatch.setattr(replica_threads.os, "sched_getaffinity", lambda pid: {0, 1})
    assert replica_threads.thread_count({replica_threads.ENV_VAR: "3"}) == 2


def test_by_replica_gives_the_whole_calls_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(replica_threads.ENV_VAR, "3")
    monkeypatch.setattr(replica_threads.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 300, 257)).astype(np.float16)
    b = rng.standard_normal((1, 300, 257)).astype(np.float16)  # broadcast along the replicas
    assert a.size >= replica_threads.MIN_ELEMENTS
    with np.errstate(over="ignore"):
        assert _same_bits(replica_threads.by_replica(np.multiply, a, b), a * b)
        assert _same_bits(replica_threads.by_replica(lambda x: half.softmax_half(x, -1), a), _numpy_softmax(a, -1))


def test_by_replica_applies_the_callers_error_handling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(replica_threads.ENV_VAR, "2")
    monkeypatch.setattr(replica_threads.os, "sched_getaffinity", lambda pid: {0, 1})
    big = np.full((2, replica_threads.MIN_ELEMENTS), 60000.0, np.float16)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        replica_threads.by_replica(np.add, big, big)


def _attention_program(values: np.ndarray) -> np.ndarray:
    """scores @ v with a float16 softmax, a scale and a mask on 2 replicas holding different
    rows (an h2d stream): the kernels the T5 attention spends its time in."""
    ir = popxl.Ir()
    ir.replication_factor = 2
    shape = values.shape[1:]
    with ir.main_graph:
        stream = popxl.h2d_stream(shape, popxl.float16, "x")
        x = ops.host_load(stream, "x")
        s = ops.softmax(x * popxl.constant(np.float16(0.125)) + x, axis=-1)
        y = ops.gelu(s @ x)
        out = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(out, y)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run({stream: values})[out]


def test_threaded_kernels_compute_the_same_program_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    values = (np.random.default_rng(5).standard_normal((2, 2, 512, 512)) * 4).astype(np.float16)
    monkeypatch.setattr(replica_threads.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv(replica_threads.ENV_VAR, "1")
    alone = _attention_program(values)
    monkeypatch.setenv(replica_threads.ENV_VAR, "2")
    threaded = _attention_program(values)
    assert _same_bits(alone, threaded)
    # replica 1 holds other rows than replica 0: the parts are not one replica's copy
    assert not np.array_equal(alone[0], alone[1])
