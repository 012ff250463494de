"""popxl-addons 3.4 Module gradients: build_grad with aux and var_grad, call_module (outlined
modules, differentiated through the Call), called_graphs_grad_info, recompute_graph, and autodiff
of a popxl graph that calls another graph. Every number is checked against numpy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 3)).astype(np.float32)
W = RNG.normal(size=(3, 2)).astype(np.float32)
B = RNG.normal(size=(2,)).astype(np.float32)
DY = RNG.normal(size=(4, 2)).astype(np.float32)


class Affine(addons.Module):
    """y = x @ w + b with a hand-written gradient that scales dx by ``dx_scale`` (so a test can
    tell the hand-written gradient from autodiff's)."""

    def __init__(self, dx_scale: float = 1.0, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.dx_scale = dx_scale

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("w", lambda: W, popxl.float32)
        b = self.add_variable_input("b", lambda: B, popxl.float32)
        self.aux["x"] = x
        self.aux["w"] = w
        return x @ w + b

    def build_grad(self, dy: popxl.Tensor) -> popxl.Tensor:
        self.var_grad["w"] = self.aux["x"].T @ dy
        self.var_grad["b"] = ops.sum(dy, 0)
        return (dy @ self.aux["w"].T) * self.dx_scale


class Doubled(addons.Module):
    """z = 2 * affine(x), the affine layer outlined with call_module."""

    def __init__(self, dx_scale: float = 1.0) -> None:
        super().__init__()
        self.dx_scale = dx_scale

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        (y,) = self.call_module(Affine(self.dx_scale), name="inner")(x)
        return y * 2.0


def _run(ir: popxl.Ir, tensors: dict[str, popxl.Tensor]) -> dict[str, np.ndarray]:
    with ir.main_graph:
        streams = {name: addons.host_store(t) for name, t in tensors.items()}
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return {name: out[s] for name, s in streams.items()}


def test_build_grad_gives_hand_written_gradients_and_aux_connections() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        dy = popxl.variable(DY)
        facts, fwd = Affine(dx_scale=3.0).create_graph(x)
        n_out = len(fwd.graph.outputs)
        grad = fwd.autodiff()
        assert len(fwd.graph.outputs) == n_out + 2  # aux x and w became forward outputs
        kinds = [e.connection_type.name for e in grad.grad_graph_info.expected_inputs]
        assert kinds == ["FwdGrad", "Fwd", "Fwd"]
        call = fwd.bind(facts.init()).call_with_info(x)
        dx, dw, db = grad.call(dy, args=grad.grad_graph_info.inputs_dict(call))
        y = call.outputs[0]
    out = _run(ir, {"y": y, "dx": dx, "dw": dw, "db": db})
    np.testing.assert_allclose(out["y"], X @ W + B, rtol=1e-5)
    np.testing.assert_allclose(out["dx"], 3.0 * DY @ W.T, rtol=1e-5)
    np.testing.assert_allclose(out["dw"], X.T @ DY, rtol=1e-5)
    np.testing.assert_allclose(out["db"], DY.sum(0), rtol=1e-5)


def test_call_module_outlines_and_autodiff_uses_the_called_grad_graph() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        dz = popxl.variable(DY)
        facts, fwd = Doubled(dx_scale=5.0).create_graph(x)
        assert sorted(facts.to_dict()) == ["inner.b", "inner.w"]
        assert [op.type for op in fwd.graph._ops].count("Call") == 1
        called = fwd.called_graphs_grad_info
        fwd.called_graphs_grad_info = {}
        with pytest.raises(ValueError, match="unsafe to autodiff"):
            fwd.autodiff()
        fwd.called_graphs_grad_info = called
        grad = fwd.autodiff(grads_required=[fwd.graph.inputs[0], fwd.args.inner.w])
        call = fwd.bind(facts.init()).call_with_info(x)
        dx, dw = grad.call(dz, args=grad.grad_graph_info.inputs_dict(call))
    out = _run(ir, {"z": call.outputs[0], "dx": dx, "dw": dw})
    np.testing.assert_allclose(out["z"], 2 * (X @ W + B), rtol=1e-5)
    # the hand-written gradient (dx scaled by 5) is the one used through the Call
    np.testing.assert_allclose(out["dx"], 5.0 * (2 * DY) @ W.T, rtol=1e-5)
    np.testing.assert_allclose(out["dw"], X.T @ (2 * DY), rtol=1e-5)


def test_inlining_a_build_grad_module_is_refused_or_warned() -> None:
    class Inlines(addons.Module):
        def __init__(self, mode: str) -> None:
            super().__init__()
            self.inner = Affine(grad_inlining_error=mode)

        def build(self, x: popxl.Tensor) -> popxl.Tensor:
            return self.inner(x)

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        with pytest.raises(Exception, match="`build_grad` has been implemented"):
            Inlines("error").create_graph(x)
        with pytest.warns(UserWarning, match="`build_grad` has been implemented"):
            Inlines("warning").create_graph(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            facts, _ = Inlines("none").create_graph(x)
        assert sorted(facts.to_dict()) == ["inner.b", "inner.w"]
        with pytest.raises(ValueError, match="grad_inlining_error should be one of"):
            Affine(grad_inlining_error="loud")
        with pytest.raises(ValueError, match="graph caching"):
            Affine(cache=True)


def test_var_grad_and_output_checks() -> None:
    class WrongShape(Affine):
        def build_grad(self, dy: popxl.Tensor) -> popxl.Tensor:
            self.var_grad["w"] = self.aux["x"].T @ dy
            self.var_grad["b"] = ops.sum(dy, 0)
            return ops.sum(dy, 1)  # (4,), not x's (4, 3)

    class MissingVar(Affine):
        def build_grad(self, dy: popxl.Tensor) -> popxl.Tensor:
            self.var_grad["w"] = self.aux["x"].T @ dy
            return dy @ self.aux["w"].T

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        _, fwd = WrongShape().create_graph(x)
        with pytest.raises(ValueError, match="output Tensor at position 0"):
            fwd.autodiff()
        _, fwd = MissingVar().create_graph(x)
        with pytest.raises(Exception, match="Variables missing gradients"):
            fwd.autodiff()
        _, fwd = MissingVar().create_graph(x)
        # asking only for dx and dw: b's gradient is not needed
        grad = fwd.autodiff(grads_required=[fwd.graph.inputs[0], fwd.args.w])
        assert len(grad.graph.outputs) == 2
        module = Affine()
        with pytest.raises(Exception, match="only get items within"):
            module.aux["x"]  # noqa: B018


def test_module_lists_and_from_variable_factories() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)

        class Stack(addons.Module):
            def __init__(self) -> None:
                super().__init__()
                self.layers = addons.Module.from_list([Affine(grad_inlining_error="none"),
                                                       Affine(grad_inlining_error="none")])

            def build(self, x: popxl.Tensor) -> popxl.Tensor:
                y = self.layers[0](x)
                return self.layers.get(1)(ops.sum(y, 1, keepdims=True) @ popxl.constant(np.ones((1, 3), np.float32)))

        facts, graph = Stack().create_graph(x)
        assert sorted(facts.to_dict()) == ["layers.0.b", "layers.0.w", "layers.1.b", "layers.1.w"]
        assert len(list(Stack().layers)) == 2
        with pytest.raises(AttributeError, match="from_list"):
            iter(Affine())
        y, = graph.bind(facts.init()).call(x)
    out = _run(ir, {"y": y})
    h = (X @ W + B).sum(1, keepdims=True) @ np.ones((1, 3), np.float32)
    np.testing.assert_allclose(out["y"], h @ W + B, rtol=1e-5)


def test_autodiff_differentiates_through_a_called_graph() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        spec_x = popxl.TensorSpec((4, 3), popxl.float32)
        spec_w = popxl.TensorSpec((3, 2), popxl.float32)
        inner = ir.create_graph(lambda x, w: ops.gelu(x @ w), spec_x, spec_w)

        def outer(x: popxl.Tensor, w: popxl.Tensor) -> popxl.Tensor:
            (h,) = ops.call(inner, x, w)
            return h * h

        graph = ir.create_graph(outer, spec_x, spec_w)
        infos = popxl.transforms.autodiff(graph, return_all_grad_graphs=True)
        assert set(infos) == {graph, inner}
        info = infos[graph]
        x, w = popxl.variable(X), popxl.variable(W)
        call = ops.call_with_info(graph, x, w)
        dx, dw = ops.call(info.graph, popxl.constant(np.ones((4, 2), np.float32)), inputs_dict=info.inputs_dict(call))
    out = _run(ir, {"dx": dx, "dw": dw})

    def gelu(z: np.ndarray) -> np.ndarray:
        return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))

    def loss(xv: np.ndarray, wv: np.ndarray) -> float:
        return float((gelu(xv @ wv) ** 2).sum())

    def numeric(f: object, a: np.ndarray) -> np.ndarray:
        a = a.astype(np.float64)
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            hi, lo = a.copy(), a.copy()
            hi[i] += 1e-4
            lo[i] -= 1e-4
            g[i] = (f(hi) - f(lo)) / 2e-4  # type: ignore[operator]
        return g

    np.testing.assert_allclose(out["dx"], numeric(lambda a: loss(a, W.astype(np.float64)), X), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(out["dw"], numeric(lambda a: loss(X.astype(np.float64), a), W), rtol=1e-3, atol=1e-4)


class TwoMatMul(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w1 = self.add_variable_input("w1", lambda: W @ W.T, popxl.float32)
        w2 = self.add_variable_input("w2", lambda: W, popxl.float32)
        return ops.gelu((x + 1.0) @ w1) @ w2


@pytest.mark.parametrize("recompute", [False, True])
def test_recompute_graph_gives_the_same_gradients(recompute: bool) -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        facts, fwd = TwoMatMul().create_graph(x)
        grad = addons.autodiff(fwd)
        if recompute:
            plain_inputs = len(grad.graph.inputs)
            grad = addons.recompute_graph(grad)
            assert grad.graph.name.startswith("TwoMatMul_bwd_recomp")
            kinds = [e.connection_type.name for e in grad.grad_graph_info.expected_inputs]
            # the activations are gone: one gradient input, then the three forward inputs
            assert kinds == ["FwdGrad", "Fwd", "Fwd", "Fwd"] and plain_inputs > 4
        call = fwd.bind(facts.init()).call_with_info(x)
        dx, dw1, dw2 = grad.call(popxl.constant(DY), args=grad.grad_graph_info.inputs_dict(call))
    out = _run(ir, {"dx": dx, "dw1": dw1, "dw2": dw2})

    w1 = W @ W.T
    a = (X + 1.0) @ w1
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (a + 0.044715 * a ** 3))
    dgelu = 0.5 * (1 + t) + 0.5 * a * (1 - t ** 2) * c * (1 + 3 * 0.044715 * a ** 2)
    g = 0.5 * a * (1 + t)
    da = (DY @ W.T) * dgelu
    np.testing.assert_allclose(out["dw2"], g.T @ DY, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["dw1"], (X + 1.0).T @ da, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["dx"], da @ w1.T, rtol=1e-4, atol=1e-5)


def test_graph_cache_keys_modules_by_hash_and_tensors_by_spec() -> None:
    class Add(addons.Module):
        def __init__(self, tag: int) -> None:
            self.tag = tag  # no Module.__init__: allowed with a GraphCache

        def build(self, a: popxl.Tensor, b: popxl.Tensor) -> popxl.Tensor:
            return a + b

        def __hash__(self) -> int:
            return hash(self.tag)

    ir = popxl.Ir()
    cache = addons.GraphCache()
    with ir.main_graph:
        a, b = popxl.variable(np.ones(2, np.float32)), popxl.variable(np.ones(2, np.float32))
        g = cache.create_graph(Add(0), a, b)
        assert cache.create_graph(Add(0), a, b) is g
        assert cache.create_graph(Add(1), a, b) is not g
        c = popxl.variable(np.ones(3, np.float32))
        assert cache.create_graph(Add(0), c, c) is not g
        assert len(cache) == 3


def test_module_methods_new_in_34_are_absent_under_30(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert not hasattr(addons.Module, "call_module")
    assert not hasattr(addons.Module, "create_grad_graph")
    assert not hasattr(addons, "seed_variable") and not hasattr(addons, "shard")
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    assert callable(addons.Module.call_module) and callable(addons.seed_variable)
