"""popxl_addons.optimizers.AdamOptimizerStep on the simulator: the weights after one and two
steps against AdamW written out by hand (PopART's moving averages, the step counter incremented
before bias correction, eps added to the square root), loss scaling, global-norm clipping,
the float16 first moment, and the state variables a user reads."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl_addons.optimizers import AdamOptimizerStep

VAR = np.array([1.0, -2.0, 0.5], np.float32)
GRAD = np.array([0.5, 0.25, -4.0], np.float32)


def _adamw(var: np.ndarray, grads: list[np.ndarray], lr: float, beta1: float = 0.9, beta2: float = 0.999,
           eps: float = 1e-5, wd: float = 1e-2, bias_correction: bool = True) -> np.ndarray:
    """AdamW in float32 as PopART computes it: the moving averages' factors 1 - beta are
    rounded to float32 from the exact value, the bias corrections 1 - beta**t are computed in
    float32 on the device (1 - float32(0.999) is 1.3e-5 off 0.001, which shows in the weights)."""
    f = np.float32
    b1, b2, w = f(beta1), f(beta2), var.astype(f)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + f(1 - beta1) * g
        v = b2 * v + f(1 - beta2) * g * g
        mh, vh = (m / (f(1) - b1 ** f(t)), v / (f(1) - b2 ** f(t))) if bias_correction else (m, v)
        w = w - f(lr) * (mh / (np.sqrt(vh) + f(eps)) + f(wd) * w)
    return w


def _run(steps: int, **kwargs: object) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    ir = popxl.Ir()
    with ir.main_graph:
        var = popxl.variable(VAR, name="w")
        grad = popxl.variable(GRAD, name="g")
        facts, graph = AdamOptimizerStep().create_graph(var, grad, **kwargs)
        state = facts.init()
        graph.bind(state).call(var, grad)
    with popxl.Session(ir, "ipu_hw") as session:
        for _ in range(steps):
            session.run()
    values = session.get_tensors_data(state.tensors)
    return session.get_tensor_data(var), {k: values[t] for k, t in state.to_dict().items()}


@pytest.mark.parametrize("steps", [1, 2])
def test_the_weights_follow_adamw(steps: int) -> None:
    w, state = _run(steps, lr=0.1, weight_decay=0.01, first_order_dtype=popxl.float32)
    np.testing.assert_allclose(w, _adamw(VAR, [GRAD] * steps, lr=0.1, wd=0.01), rtol=1e-6)
    assert state["step"] == steps


def test_one_step_by_hand() -> None:
    # step 1 with bias correction: m_hat = g, v_hat = g*g * (1 + 1.3e-5) (float32 1 - 0.999),
    # so the update is g / (|g| * (1 + 6.4e-6) + eps)
    w, state = _run(1, lr=2.0, weight_decay=0.0, eps=1e-5, first_order_dtype=popxl.float32)
    v_hat = GRAD.astype(np.float64) ** 2 * 0.001 / (1 - np.float64(np.float32(0.999)))
    np.testing.assert_allclose(w, VAR - 2.0 * GRAD / (np.sqrt(v_hat) + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(state["first_order"], 0.1 * GRAD, rtol=1e-6)
    np.testing.assert_allclose(state["second_order"], 0.001 * GRAD * GRAD, rtol=1e-6)


def test_without_bias_correction_there_is_no_step() -> None:
    w, state = _run(1, lr=0.5, weight_decay=0.0, eps=1e-3, bias_correction=False, first_order_dtype=popxl.float32)
    m, v = 0.1 * GRAD.astype(np.float64), 0.001 * GRAD.astype(np.float64) ** 2
    np.testing.assert_allclose(w, VAR - 0.5 * m / (np.sqrt(v) + 1e-3), rtol=1e-5)
    assert sorted(state) == ["first_order", "second_order"]


def test_loss_scaling_divides_the_gradient() -> None:
    eps = 0.5  # a large eps makes the update depend on the gradient's scale
    w, _ = _run(1, lr=1.0, weight_decay=0.0, eps=eps, loss_scaling=4.0, first_order_dtype=popxl.float32)
    g = GRAD / 4.0
    np.testing.assert_allclose(w, _adamw(VAR, [g], lr=1.0, eps=eps, wd=0.0), rtol=1e-6)
    np.testing.assert_allclose(w, VAR - g / (np.abs(g) + eps), rtol=1e-4)  # [-1/3, 2/3, 1/1.5]


def test_global_norm_clipping_scales_by_max_over_norm() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        var = popxl.variable(VAR)
        grad = popxl.variable(GRAD)
        norm = popxl.constant(np.float32(8.0))
        facts, graph = AdamOptimizerStep().create_graph(var, grad, lr=1.0, eps=1.0, weight_decay=0.0,
                                                        global_norm=norm, global_norm_max=2.0,
                                                        first_order_dtype=popxl.float32)
        graph.bind(facts.init()).call(var, grad, norm)  # the norm is an input of the graph
    with popxl.Session(ir, "ipu_hw") as session:
        session.run()
    g = GRAD * (2.0 / 8.0)
    np.testing.assert_allclose(session.get_tensor_data(var), _adamw(VAR, [g], lr=1.0, eps=1.0, wd=0.0), rtol=1e-6)
    np.testing.assert_allclose(session.get_tensor_data(var), [1 - 0.125 / 1.125, -2 - 0.0625 / 1.0625, 1.0], rtol=1e-5)


def test_the_default_first_moment_is_float16() -> None:
    w, state = _run(1, lr=0.1, weight_decay=0.0, eps=0.1)
    assert state["first_order"].dtype == np.float16 and state["second_order"].dtype == np.float32
    m = (np.float32(0.1) * GRAD).astype(np.float16)  # stored rounded to float16
    assert state["first_order"].tolist() == m.tolist()
    # the first moment is bias-corrected in its own dtype: float16(1 - 0.9) = 0.09998
    m_hat = (m / np.float16(np.float32(1) - np.float32(0.9))).astype(np.float32)
    v_hat = state["second_order"] / (np.float32(1) - np.float32(0.999))
    # and the updater has the first moment's dtype
    updater = (m_hat / (np.sqrt(v_hat) + np.float32(0.1))).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(w, VAR - np.float32(0.1) * updater, rtol=1e-6)


def test_the_optimiser_is_in_both_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    w, state = _run(2, lr=0.1, weight_decay=0.01, first_order_dtype=popxl.float32)
    np.testing.assert_allclose(w, _adamw(VAR, [GRAD] * 2, lr=0.1, wd=0.01), rtol=1e-6)
    assert sorted(state) == ["first_order", "second_order", "step"]
