"""popxl_addons.optimizers.AdamOptimizerStep on a replica-sharded variable: the optimiser state
is sharded like the variable (a shard of ``meta_shape`` elements / replicas per replica, in
both generations) and the full weights after two steps are AdamW on the whole variable,
computed here in numpy."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl_addons import NamedTensors
from profcompare.emulator.popxl_addons.optimizers import AdamOptimizerStep

WEIGHTS = np.arange(1, 9, dtype=np.float32).reshape(2, 4) / 4
GRADS = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def _adamw(w: np.ndarray, g: np.ndarray, steps: int, lr: float, wd: float, beta1: float = 0.9,
           beta2: float = 0.999, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, first moment, second moment) after ``steps`` AdamW steps with the same gradient,
    in float32 as PopART computes them (step counter incremented before bias correction)."""
    f = np.float32
    w = w.astype(f)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        m = f(beta1) * m + f(1 - beta1) * g
        v = f(beta2) * v + f(1 - beta2) * g * g
        m_hat, v_hat = m / (f(1) - f(beta1) ** f(t)), v / (f(1) - f(beta2) ** f(t))
        w = w - f(lr) * (m_hat / (np.sqrt(v_hat) + f(eps)) + f(wd) * w)
    return w, m, v


def _run_sharded(replicas: int, steps: int) -> tuple[dict, np.ndarray, dict[str, np.ndarray]]:
    """Shard WEIGHTS over ``replicas``, give replica r the r-th slice of the flattened GRADS and
    run the optimiser ``steps`` times. Returns ({state name: (shard shape, meta_shape)}, the
    full weights, {state name: full state value})."""
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        full_w, shard_w = popxl.replica_sharded_variable(WEIGHTS, popxl.float32, "w")
        grad = popxl.variable(GRADS.reshape(replicas, -1), popxl.float32, "g",
                              replica_grouping=ir.replica_grouping(group_size=1))
        facts, graph = AdamOptimizerStep().create_graph(shard_w, grad, lr=0.1, weight_decay=0.01,
                                                        first_order_dtype=popxl.float32)
        layout = {k: (tuple(f.shape), tuple(f.meta_shape or ())) for k, f in facts.to_dict().items()}
        full_state, shard_state = {}, {}
        for name, f in facts.to_dict().items():
            if f.meta_shape:
                full_state[name], shard_state[name] = popxl.replica_sharded_variable(
                    np.zeros(f.meta_shape, np.float32), f.dtype, name)
            else:
                full_state[name] = shard_state[name] = popxl.variable(np.zeros(f.shape, np.float32), f.dtype, name)
        graph.bind(NamedTensors.from_dict(shard_state)).call(shard_w, grad)
    with popxl.Session(ir, "ipu_hw") as session:
        for _ in range(steps):
            session.run()
    values = session.get_tensors_data(list(full_state.values()))
    return layout, session.get_tensor_data(full_w), {k: values[t] for k, t in full_state.items()}


@pytest.mark.parametrize("generation", ["3.0", "3.4"])
@pytest.mark.parametrize("replicas", [2, 4])
def test_sharded_state_has_the_variables_shard_shape(replicas: int, generation: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", generation)
    layout, _, _ = _run_sharded(replicas, steps=1)
    shard = (8 // replicas,)
    assert layout == {"first_order": (shard, (2, 4)), "second_order": (shard, (2, 4)), "step": ((), ())}


@pytest.mark.parametrize("replicas", [2, 4])
def test_sharded_weights_and_state_follow_adamw_on_the_whole_variable(replicas: int) -> None:
    _, w, state = _run_sharded(replicas, steps=2)
    want_w, want_m, want_v = _adamw(WEIGHTS, GRADS, steps=2, lr=0.1, wd=0.01)
    assert w.shape == state["first_order"].shape == state["second_order"].shape == (2, 4)
    np.testing.assert_allclose(w, want_w, rtol=1e-6)
    np.testing.assert_allclose(state["first_order"], want_m, rtol=1e-6)
    np.testing.assert_allclose(state["second_order"], want_v, rtol=1e-6)
    assert float(state["step"]) == 2.0
    # by hand: with one gradient every step m_hat = g and v_hat = g*g (to 1e-5), so w[0, 0]
    # (g = -1) moves by lr = 0.1 a step less the decay 0.1 * 0.01 * w (w = 0.25, then 0.35)
    assert float(w[0, 0]) == pytest.approx(0.25 + 2 * 0.1 - 0.001 * (0.25 + 0.35), abs=1e-5)
