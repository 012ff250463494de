"""popxl.ops losses and statistics on the simulator: nll_loss, nll_loss_with_softmax_grad
(ignore_index), histogram, increment_mod(_), median, lamb_square and print_tensor. Values
against numpy written here from PopART's definitions, popxl 3.4's signatures, gradients through
autodiff, and numbers pinned by hand."""

from __future__ import annotations


import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .signatures import plain_signature

from .run_program import run
from .test_autodiff import grads_via_program

POPXL_34_SIGNATURES = {
    "nll_loss": "(probs, labels, ignore_index=None, reduction='mean', log_prob=False)",
    "nll_loss_with_softmax_grad": "(probs, labels, loss_grad=1, ignore_index=None, reduction='mean')",
    "histogram": "(t, levels, absolute_of_input)",
    "increment_mod": "(t, increment, modulus)",
    "increment_mod_": "(t, increment, modulus)",
    "median": "(t, axis=None, keepdims=False)",
    "lamb_square": "(t)",
    "print_tensor": "(t, title=None, print_self=True, print_gradient=False, summarise_threshold=1000, edge_items=3, "
                    "max_line_width=75, digits=8, float_format='auto', separator=' ', open_bracket='[', "
                    "close_bracket=']')",
}


@pytest.mark.parametrize("name", sorted(POPXL_34_SIGNATURES))
def test_signatures_match_popxl_3_4(name: str) -> None:
    assert plain_signature(getattr(ops, name)) == POPXL_34_SIGNATURES[name]


# --- nll_loss ------------------------------------------------------------------------------
PROBS = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.25, 0.25, 0.5]], np.float32)
LABELS = np.array([1, 2, 0, 2], np.int32)


def ref_nll(p: np.ndarray, labels: np.ndarray, ignore: int | None, reduction: str) -> np.ndarray:
    n, c = p.shape
    picked = np.array([p[i, labels[i]] if 0 <= labels[i] < c else 0.0 for i in range(n)])
    items = -np.log(np.maximum(picked, 1e-7))
    kept = np.ones(n) if ignore is None else (labels != ignore).astype(np.float64)
    items = items * kept
    if reduction == "none":
        return items
    if reduction == "sum":
        return items.sum()
    return items.sum() / max(kept.sum(), 1.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [None, 2, 7])
def test_nll_loss_matches_numpy(reduction: str, ignore: int | None) -> None:
    (got,) = run(lambda p, lab: ops.nll_loss(p, lab, ignore_index=ignore, reduction=reduction), PROBS, LABELS)
    assert got.dtype == np.float32 and got.shape == (() if reduction != "none" else (4,))
    np.testing.assert_allclose(got, ref_nll(PROBS, LABELS, ignore, reduction), rtol=1e-6)


def test_nll_loss_pinned_values() -> None:
    # -(log .5 + log .8 + log .6 + log .5) / 4 and, ignoring label 2, -(log .5 + log .6) / 2
    (mean,) = run(lambda p, lab: ops.nll_loss(p, lab), PROBS, LABELS)
    (ignored,) = run(lambda p, lab: ops.nll_loss(p, lab, ignore_index=2), PROBS, LABELS)
    assert float(mean) == pytest.approx(0.530066, abs=1e-6)
    assert float(ignored) == pytest.approx(0.601987, abs=1e-6)


def test_nll_loss_of_log_probabilities_negates_the_picked_value() -> None:
    logp = np.log(PROBS)
    (got,) = run(lambda p, lab: ops.nll_loss(p, lab, reduction="sum", log_prob=True), logp, LABELS)
    np.testing.assert_allclose(got, -logp[np.arange(4), LABELS].sum(), rtol=1e-6)


def test_nll_loss_floors_zero_probabilities_at_1e_7() -> None:
    (got,) = run(lambda p, lab: ops.nll_loss(p, lab, reduction="none"),
                 np.array([[0.0, 1.0]], np.float32), np.array([0], np.int32))
    assert float(got[0]) == pytest.approx(-np.log(1e-7), rel=1e-6)


def _float16_nll_and_grad(p: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nll_loss(reduction='sum') of float16 ``p`` and its autodiff gradient (upstream 1)."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        fwd = ir.create_graph(lambda t: ops.nll_loss(t, popxl.constant(labels), reduction="sum"),
                              popxl.TensorSpec(p.shape, popxl.float16))
        info = popxl.transforms.autodiff(fwd)
        call = ops.call_with_info(fwd, popxl.variable(p))
        (grad,) = ops.call(info.graph, popxl.constant(np.float16(1)), inputs_dict=info.inputs_dict(call))
        streams = []
        for t in (call.outputs[0], grad):
            streams.append(popxl.d2h_stream(t.shape, t.dtype, "out"))
            ops.host_store(streams[-1], t)
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    return out[streams[0]], out[streams[1]]


def test_nll_loss_floors_float16_zero_probabilities_at_6_104e_05() -> None:
    # PopART's nllx.cpp: float16 takes eps = 6.104e-05 in both the loss, -log(max(p, eps)), and
    # the gradient, -1 / max(p, eps) (float32: 1e-7 and 1e-10, which would give 16.12 and -inf)
    loss, grad = _float16_nll_and_grad(np.array([[0.0, 1.0]], np.float16), np.array([0], np.int32))
    assert loss.dtype == grad.dtype == np.float16
    eps = np.float16(6.104e-05)  # the smallest normal float16, 6.1035e-05
    assert float(loss) == float(-np.log(eps)) == 9.703125
    assert grad.tolist() == [[float(np.float16(-1) / eps), 0.0]] == [[-16384.0, 0.0]]


def test_nll_loss_ignoring_every_label_gives_zero() -> None:
    (got,) = run(lambda p, lab: ops.nll_loss(p, lab, ignore_index=5), PROBS, np.full(4, 5, np.int32))
    assert float(got) == 0.0


@pytest.mark.parametrize("reduction,ignore", [("mean", None), ("sum", None), ("mean", 2), ("sum", 0)])
def test_nll_loss_gradient_is_minus_one_over_p_at_the_label(reduction: str, ignore: int | None) -> None:
    labels = LABELS

    def fn(p: popxl.Tensor) -> popxl.Tensor:
        return ops.nll_loss(p, popxl.constant(labels), ignore_index=ignore, reduction=reduction)

    _, (g,) = grads_via_program(fn, [PROBS], np.array(2.0, np.float32))
    kept = np.ones(4) if ignore is None else (labels != ignore).astype(np.float64)
    scale = 2.0 / (kept.sum() if ignore is not None else 4.0) if reduction == "mean" else 2.0
    want = np.zeros_like(PROBS, dtype=np.float64)
    for i, lab in enumerate(labels):
        want[i, lab] = -scale * kept[i] / PROBS[i, lab]
    np.testing.assert_allclose(g, want, rtol=1e-6)


def test_nll_loss_refuses_bad_reductions_and_label_shapes() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        p = popxl.variable(PROBS)
        with pytest.raises(ValueError, match="Not a valid reduction: foo"):
            ops.nll_loss(p, popxl.variable(LABELS), reduction="foo")
        with pytest.raises(ValueError, match="must have shape"):
            ops.nll_loss(p, popxl.variable(LABELS[:3]))
        with pytest.raises(TypeError, match="integer"):
            ops.nll_loss(p, popxl.variable(LABELS.astype(np.float32)))


# --- nll_loss_with_softmax_grad -------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_with_softmax_grad_ignore_index(reduction: str) -> None:
    loss, dx = run(lambda p, lab: ops.nll_loss_with_softmax_grad(p, lab, loss_grad=3.0, ignore_index=2,
                                                                 reduction=reduction), PROBS, LABELS)
    kept = (LABELS != 2).astype(np.float64)
    items = -np.log(PROBS[np.arange(4), LABELS] + 1e-7) * kept
    want_loss = {"mean": items.sum() / kept.sum(), "sum": items.sum(), "none": items}[reduction]
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
    scale = 3.0 / kept.sum() if reduction == "mean" else 3.0
    want_dx = (PROBS - np.eye(3)[LABELS]) * (scale * kept)[:, None]
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6, atol=1e-7)
    assert np.all(dx[LABELS == 2] == 0)


def test_nll_loss_with_softmax_grad_pinned_mean_with_ignored_rows() -> None:
    loss, dx = run(lambda p, lab: ops.nll_loss_with_softmax_grad(p, lab, ignore_index=2), PROBS, LABELS)
    assert float(loss) == pytest.approx(0.601987, abs=1e-6)  # -(log .5 + log .6) / 2
    np.testing.assert_allclose(dx[0], [0.1, -0.25, 0.15], rtol=1e-6)


def test_nll_loss_with_softmax_grad_adds_1e_7_to_an_underflowed_probability() -> None:
    # softmax of [0, -200] puts exp(-200) = 0 (float32) at label 1; PopART's softmaxx.cpp takes
    # log(p + 1e-7), so the loss is -log(1e-7) in float32, not inf
    def fn(x: popxl.Tensor, lab: popxl.Tensor) -> tuple:
        return ops.nll_loss_with_softmax_grad(ops.softmax(x, axis=1), lab, reduction="none")

    loss, dx = run(fn, np.array([[0.0, -200.0]], np.float32), np.array([1], np.int32))
    assert loss.tolist() == [float(-np.log(np.float32(1e-7)))] == [float(np.float32(16.118095))]
    assert dx.tolist() == [[1.0, -1.0]]


def test_nll_loss_with_softmax_grad_mean_gradient_divides_by_probs_first_dimension() -> None:
    # PopART scales the 'mean' gradient by 1 / probs.shape[0] (2 here), the loss by 1 / items (6)
    p = np.full((2, 3, 4), 0.25, np.float32)
    labels = np.zeros((2, 3), np.int32)
    loss, dx = run(lambda a, b: ops.nll_loss_with_softmax_grad(a, b), p, labels)
    assert float(loss) == pytest.approx(np.log(4.0), rel=1e-6)
    assert float(dx[0, 0, 0]) == pytest.approx(-0.375)  # (0.25 - 1) / 2
    assert float(dx[1, 2, 3]) == pytest.approx(0.125)


def test_cross_entropy_of_the_addons_accepts_ignore_index() -> None:
    from profcompare.emulator.popxl_addons.ops.cross_entropy import cross_entropy_with_grad

    logits = np.log(PROBS)
    loss, _dx = run(lambda x, lab: cross_entropy_with_grad(x, lab, ignore_index=2), logits, LABELS)
    assert float(loss) == pytest.approx(0.601987, abs=1e-5)


# --- histogram -------------------------------------------------------------------------------
def test_histogram_counts_half_open_bins_with_open_ends() -> None:
    x = np.array([-3.0, -1.0, 0.0, 0.2, 0.5, 1.0, 7.0, np.nan], np.float32)
    (got,) = run(lambda t: ops.histogram(t, [0.0, 0.5, 1.0], absolute_of_input=False), x)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, [2, 2, 1, 3])  # <0 | [0,.5) | [.5,1) | >=1 and NaN
    (absolute,) = run(lambda t: ops.histogram(t, [0.0, 0.5, 1.0], absolute_of_input=True), x)
    np.testing.assert_array_equal(absolute, [0, 2, 1, 5])


def test_histogram_matches_numpy_searchsorted_on_random_data() -> None:
    x = np.random.default_rng(3).normal(size=(6, 7)).astype(np.float32)
    levels = [-1.0, -0.25, 0.1, 0.8]
    (got,) = run(lambda t: ops.histogram(t, levels, False), x)
    edges = np.array([-np.inf, *levels, np.inf])
    want = [int(((x >= lo) & (x < hi)).sum()) for lo, hi in zip(edges[:-1], edges[1:])]
    np.testing.assert_array_equal(got, want)


def test_histogram_refuses_unordered_levels() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="not a monotonically increasing"):
        ops.histogram(popxl.variable(np.zeros(3, np.float32)), [1.0, 0.5], False)


# --- increment_mod ---------------------------------------------------------------------------
def test_increment_mod_keeps_the_dividends_sign_and_truncates_for_integers() -> None:
    (ints,) = run(lambda t: ops.increment_mod(t, 3.7, 5.9), np.array([1, 2, 3, -9], np.int32))
    np.testing.assert_array_equal(ints, [4, 0, 1, -1])  # increment 3, modulus 5
    (floats,) = run(lambda t: ops.increment_mod(t, 0.5, 2.0), np.array([1.0, 1.5, -3.0], np.float32))
    np.testing.assert_allclose(floats, [1.5, 0.0, -0.5])


def test_increment_mod_inplace_updates_its_input() -> None:
    def fn(t: popxl.Tensor) -> tuple:
        y = ops.increment_mod_(t, 1, 3)
        return y, t + 0
    y, t = run(fn, np.array([0, 1, 2], np.uint32))
    np.testing.assert_array_equal(y, [1, 2, 0])
    np.testing.assert_array_equal(t, [1, 2, 0])


def test_increment_mod_inplace_is_an_alias_in_the_lowering() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        ops.increment_mod_(popxl.variable(np.zeros(4, np.int32), name="counter"), 1, 4)
    program = lower(ir)
    (op,) = [o for o in program.ops.values() if o.type == "IncrementModInplace"]
    assert op.attrs["aliases"] == {op.outputs[0]: op.inputs[0]}


# --- median ----------------------------------------------------------------------------------
def test_median_takes_the_lower_middle_value() -> None:
    x = np.array([[3.0, 1.0, 2.0, 4.0], [5.0, 5.0, 0.0, 1.0]], np.float32)
    (rows,) = run(lambda t: ops.median(t, axis=1), x)
    np.testing.assert_array_equal(rows, [2.0, 1.0])
    (everything,) = run(lambda t: ops.median(t, keepdims=True), x)
    assert everything.shape == (1, 1) and float(everything[0, 0]) == 2.0


@pytest.mark.parametrize("axis", [None, 0, (0, 2), -1])
def test_median_matches_numpy_on_odd_counts_and_lower_median_on_even(axis) -> None:
    x = np.random.default_rng(0).permutation(60).astype(np.float32).reshape(3, 4, 5)
    (got,) = run(lambda t: ops.median(t, axis=axis), x)
    axes = tuple(range(3)) if axis is None else tuple(np.atleast_1d(axis) % 3)
    moved = np.moveaxis(x, axes, range(-len(axes), 0)).reshape(*[s for i, s in enumerate(x.shape) if i not in axes],
                                                                 -1)
    n = moved.shape[-1]
    want = np.sort(moved, axis=-1)[..., (n - 1) // 2]
    np.testing.assert_array_equal(got, want)


def test_median_gradient_goes_to_the_median_element() -> None:
    x = np.array([[3.0, 1.0, 2.0, 4.0], [5.0, 7.0, 0.0, 1.0]], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.median(t, axis=1), [x], np.array([10.0, 20.0], np.float32))
    np.testing.assert_array_equal(g, [[0, 0, 10, 0], [0, 0, 0, 20]])


# --- lamb_square -----------------------------------------------------------------------------
def test_lamb_square_is_a_float32_sum_of_squares() -> None:
    (got,) = run(lambda t: ops.lamb_square(t), np.array([[1.0, -2.0], [3.0, 0.5]], np.float16))
    assert got.dtype == np.float32 and got.shape == ()
    assert float(got) == 14.25


# --- print_tensor ----------------------------------------------------------------------------
def test_print_tensor_passes_values_through_and_prints_each_run(capsys) -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.5, -2.0, 3.0], np.float32), name="x")
        y = ops.print_tensor(x, separator=",")
        s = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(s, y)
    with popxl.Session(ir, "cpu") as session:
        first = session.run()[s]
        session.run()
    np.testing.assert_array_equal(first, [1.5, -2.0, 3.0])
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["print_x: [ 1.5,-2. , 3. ]"] * 2


def test_print_tensor_prints_the_gradient_only_when_asked(capsys) -> None:
    def fn(t: popxl.Tensor) -> popxl.Tensor:
        return ops.print_tensor(t, title="w", print_self=False, print_gradient=True) * 2.0

    _, (g,) = grads_via_program(fn, [np.ones(2, np.float32)], np.array([1.0, 3.0], np.float32))
    np.testing.assert_array_equal(g, [2.0, 6.0])
    assert capsys.readouterr().out.splitlines() == ["w_gradient: [2. 6.]"]


def test_print_tensor_refuses_multi_character_brackets() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="open_bracket must be 1 character"):
        ops.print_tensor(popxl.variable(np.zeros(2, np.float32)), open_bracket="<<")
