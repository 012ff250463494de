"""popxl's random ops on the simulator: create_seeds (host values as popxl's), dropout /
shaped_dropout, random_uniform / random_normal and split_random_seed. The simulator's numbers are
not Poplar's; what is checked is what popxl guarantees: same seed -> same numbers, different
seeds -> different numbers, dropout's keep probability and 1 / (1 - p) scaling, dtype rules and
errors, and dropout's gradient using the forward mask."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .signatures import plain_signature

from .test_autodiff import grads_via_program

SEED = np.array([17, 4242], np.uint32)


def outputs(build, seeds: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Run ``build(seed_tensor) -> tensors`` once per seed value; return each run's outputs."""
    ir = popxl.Ir()
    with ir.main_graph:
        seed = popxl.variable(SEED, popxl.uint32, name="seed")
        ts = build(seed)
        streams = []
        for t in ts:
            s = popxl.d2h_stream(t.shape, t.dtype)
            ops.host_store(s, t)
            streams.append(s)
    results = []
    with popxl.Session(ir, "cpu") as session:
        for value in seeds or [SEED]:
            session.write_variable_data(seed, value)
            out = session.run()
            results.append([out[s] for s in streams])
    return results


def test_create_seeds_are_popxls_host_values() -> None:
    one = popxl.create_seeds(5)
    assert one.shape == (2,) and one.dtype == np.uint32
    draw = int(np.random.default_rng(5).integers(0, 2**64 - 1, endpoint=True, dtype=np.uint64))
    assert one.tolist() == [draw >> 32, draw & 0xFFFFFFFF]
    assert popxl.create_seeds(5, offset=2).tolist() == popxl.create_seeds(7).tolist()
    assert popxl.create_seeds(1, batches_per_step=3, replicas=2).shape == (3, 2, 2)
    assert popxl.create_seeds(1, batches_per_step=2, gradient_accumulation_factor=3, replicas=4).shape == (2, 3, 4, 2)


def test_signatures_match_popxl_3_4() -> None:
    expected = {
        "dropout": "(t, seed_tensor, p)",
        "shaped_dropout": "(t, seed_tensor, shape, ratio)",
        "random_uniform": "(seed_tensor, shape, low=0.0, high=1.0, dtype=popxl.dtypes.float32)",
        "random_normal": "(seed_tensor, shape, mean=0.0, std=1.0, dtype=popxl.dtypes.float32)",
        "split_random_seed": "(seed, n=2)",
    }
    for name, text in expected.items():
        assert plain_signature(getattr(ops, name)) == text, name
    assert str(inspect.signature(popxl.create_seeds)).startswith(
        "(seed: 'int', offset: 'int' = 0, batches_per_step: 'int' = 1, gradient_accumulation_factor: 'int' = 1, "
        "replicas: 'int' = 1)")


def test_dropout_keeps_with_probability_one_minus_p_and_scales_exactly() -> None:
    x = np.linspace(0.5, 2.0, 20000, dtype=np.float32).reshape(100, 200)
    p = 0.3
    (first, again), (other,) = (outputs(lambda s: [ops.dropout(popxl.variable(x), s, p)] * 2)[0],
                                outputs(lambda s: [ops.dropout(popxl.variable(x), s, p)],
                                        [np.array([17, 4243], np.uint32)])[0])
    kept = first != 0
    np.testing.assert_array_equal(first[kept], x[kept] * np.float32(1 / (1 - p)))
    # binomial(20000, 0.7): standard deviation ~65 elements; 5 sigma
    assert abs(kept.sum() - 0.7 * x.size) < 5 * np.sqrt(x.size * p * (1 - p))
    np.testing.assert_array_equal(first, again)  # the same seed value, the same mask
    assert (kept != (other != 0)).mean() > 0.3  # a different seed value, a different mask


def test_same_seed_same_mask_across_runs_and_ops() -> None:
    x = np.ones((8, 16), np.float32)

    def build(s: popxl.Tensor) -> list[popxl.Tensor]:
        v = popxl.variable(x)
        return [ops.dropout(v, s, 0.5), ops.dropout(v, s, 0.5)]

    (a, b), (c, _), (d, _) = outputs(build, [SEED, SEED, np.array([1, 2], np.uint32)])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, d)


def test_dropout_zero_ratio_is_identity_and_errors() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ((y,),) = outputs(lambda s: [ops.dropout(popxl.variable(x), s, 0.0)])
    np.testing.assert_array_equal(y, x)
    ir = popxl.Ir()
    with ir.main_graph:
        seed = popxl.variable(SEED, popxl.uint32)
        t = popxl.variable(x)
        with pytest.raises(ValueError, match=r"ratio value 1.0 is not valid; use a value in the interval \[0, 1\)"):
            ops.dropout(t, seed, 1.0)
        with pytest.raises(ValueError, match=r"seed tensor must have shape=\(2,\) and dtype=uint32"):
            ops.dropout(t, popxl.variable(np.array([1, 2], np.int32)), 0.5)
        with pytest.raises(TypeError, match="float16 or float32"):
            ops.dropout(popxl.variable(np.ones(3, np.int32)), seed, 0.5)
        with pytest.raises(TypeError, match="dtype must be float16 or float32"):
            ops.random_uniform(seed, (2,), dtype=popxl.int32)


def test_shaped_dropout_drops_whole_broadcast_slices() -> None:
    x = np.ones((6, 50), np.float32)
    ((y,),) = outputs(lambda s: [ops.shaped_dropout(popxl.variable(x), s, (6, 1), 0.5)])
    rows = y[:, 0]
    assert set(np.unique(y).tolist()) <= {0.0, 2.0}
    np.testing.assert_array_equal(y, np.repeat(rows[:, None], 50, axis=1))
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match="is not broadcastable"):
            ops.shaped_dropout(popxl.variable(x), popxl.variable(SEED, popxl.uint32), (4, 1), 0.5)


def test_random_uniform_and_normal() -> None:
    def build(s: popxl.Tensor) -> list[popxl.Tensor]:
        return [ops.random_uniform(s, (200, 100), low=-2.0, high=3.0), ops.random_normal(s, (200, 100), 1.5, 0.5),
                ops.random_uniform(s, (4,), dtype=popxl.float16), ops.random_normal(s, (3, 2))]

    (u, n, h, std), (u_again, *_), (u_other, *_) = outputs(build, [SEED, SEED, np.array([3, 9], np.uint32)])
    assert u.dtype == n.dtype == np.float32 and h.dtype == np.float16 and std.shape == (3, 2)
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    assert abs(n.mean() - 1.5) < 0.02 and abs(n.std() - 0.5) < 0.02
    assert ((h >= 0) & (h <= 1)).all()
    np.testing.assert_array_equal(u, u_again)
    assert not np.array_equal(u, u_other)


def test_split_random_seed_keeps_the_first_word_and_differs_per_modifier() -> None:
    (results,) = outputs(lambda s: list(ops.split_random_seed(s, 3)) + [ops.split_random_seed(s)[0]])
    s0, s1, s2, s0_again = results
    assert all(s.dtype == np.uint32 and s.shape == (2,) for s in results)
    assert s0[0] == s1[0] == s2[0] == SEED[0]
    assert len({int(s0[1]), int(s1[1]), int(s2[1])}) == 3
    np.testing.assert_array_equal(s0, s0_again)

    # chained as in popxl's documentation: new seeds give new masks
    def chain(seed: popxl.Tensor) -> list[popxl.Tensor]:
        x = popxl.variable(np.ones((4, 32), np.float32))
        seed, a = ops.split_random_seed(seed)
        y = ops.dropout(x, a, 0.5)
        seed, b = ops.split_random_seed(seed)
        return [y, ops.dropout(x, b, 0.5)]

    ((y1, y2),) = outputs(chain)
    assert not np.array_equal(y1, y2)
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match=r"seed tensor must have shape=\(2,\)"):
            ops.split_random_seed(popxl.variable(np.zeros(3, np.uint32)))


def test_dropout_gradient_uses_the_forward_mask() -> None:
    x = np.linspace(1.0, 2.0, 64, dtype=np.float32).reshape(8, 8)
    up = np.full((8, 8), 3.0, np.float32)
    y, (g,) = grads_via_program(lambda t: ops.dropout(t, popxl.constant(SEED, popxl.uint32), 0.25), [x], up)
    kept = y != 0
    assert 0 < kept.sum() < x.size
    np.testing.assert_allclose(g, np.where(kept, up / 0.75, 0.0), rtol=1e-6)


def test_random_ops_lower_with_flops() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        seed = popxl.variable(SEED, popxl.uint32)
        d = ops.dropout(popxl.variable(np.ones((4, 5), np.float32)), seed, 0.1)
        r = ops.random_normal(seed, (3, 3))
    flops = {op.type: op.flops for op in lower(ir).ops.values()}
    assert flops["Dropout"] == 2 * d.nelms and flops["RandomNormal"] == 4 * r.nelms


def test_compatibility_page_says_the_values_are_not_poplars() -> None:
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "compat_table.py"
    spec = importlib.util.spec_from_file_location("compat_table_for_random", path)
    compat = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = compat  # its dataclasses look their module up
    spec.loader.exec_module(compat)
    for fn in (ops.dropout, ops.shaped_dropout, ops.random_uniform, ops.random_normal):
        status, note = compat.classify(True, fn)
        assert status == "supported" and "not Poplar's" in note and "same seed, same numbers" in note
