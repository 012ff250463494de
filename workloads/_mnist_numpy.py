"""The MNIST ``onchip`` training step written directly in numpy (no popxl).

A reference for the emulator: the same arithmetic as one weight update of the ``onchip``
variant (forward, softmax cross-entropy, backward, gradient accumulation with
``accumulate_mean``, all-reduce mean over replicas, Adam with an fp16 first moment and bias
correction). Used by the emulator proofs and by ``benchmarks/bench_emulator_step.py``.
Replicas are a leading batch dimension; every replica holds the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# tanh form of GELU, as popxl's ops.gelu (reference popxl.md section 1.6)
_GELU_C = np.float32(0.7978845608)
_GELU_C3 = np.float32(0.035677408136)


def gelu(x: np.ndarray) -> np.ndarray:
    """Return the tanh-approximation GELU of ``x`` (same dtype)."""
    return np.float32(0.5) * x * (np.float32(1.0) + np.tanh(_GELU_C * x + _GELU_C3 * x * x * x))


def gelu_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Return dL/dx of the tanh-approximation GELU given dL/dy."""
    t = np.tanh(_GELU_C * x + _GELU_C3 * x * x * x)
    dt = (np.float32(1.0) - t * t) * (_GELU_C + np.float32(3.0) * _GELU_C3 * x * x)
    return dy * (np.float32(0.5) * (np.float32(1.0) + t) + np.float32(0.5) * x * dt)


def layer_names(layers: int) -> list[str]:
    """Return the linear layer names fc1..fc{layers+1} (the last one is the classifier)."""
    return [f"fc{i + 1}" for i in range(layers + 1)]


@dataclass
class AdamState:
    """Adam state of one variable: first moment (fp16), second moment (fp32), step (fp32)."""

    first: np.ndarray
    second: np.ndarray
    step: np.float32 = field(default_factory=lambda: np.float32(0.0))


@dataclass
class NumpyTrainer:
    """The onchip training step in numpy. ``params`` maps ``fc1.weight`` ... to fp32 arrays."""

    params: dict[str, np.ndarray]
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-5
    state: dict[str, AdamState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.params = {k: np.array(v, dtype=np.float32) for k, v in self.params.items()}
        for name, value in self.params.items():
            self.state.setdefault(
                name, AdamState(np.zeros(value.shape, np.float16), np.zeros(value.shape, np.float32))
            )
        self.layers = sorted({k.split(".")[0] for k in self.params}, key=lambda n: int(n[2:]))

    def _forward_backward(self, images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """images (R, B, 28, 28), labels (R, B) -> (loss per replica (R,), grads (R, ...) per param)."""
        replicas, batch = labels.shape
        x = images.reshape(replicas, batch, -1).astype(np.float32)
        acts = []  # (input of layer, pre-activation)
        for i, name in enumerate(self.layers):
            # weights are the same on every replica: one 2-D matmul over all replicas' rows
            pre = (x.reshape(replicas * batch, -1) @ self.params[f"{name}.weight"]).reshape(replicas, batch, -1)
            pre += self.params[f"{name}.bias"]
            acts.append((x, pre))
            x = gelu(pre) if i < len(self.layers) - 1 else pre
        logits = x
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exp = np.exp(shifted)
        probs = exp / exp.sum(axis=-1, keepdims=True)
        picked = np.take_along_axis(probs, labels[..., None].astype(np.int64), axis=-1)[..., 0]
        loss = -np.log(picked).mean(axis=-1).astype(np.float32)
        onehot = np.zeros_like(probs)
        np.put_along_axis(onehot, labels[..., None].astype(np.int64), 1.0, axis=-1)
        dy = ((probs - onehot) / np.float32(batch)).astype(np.float32)
        grads: dict[str, np.ndarray] = {}
        for i in reversed(range(len(self.layers))):
            name = self.layers[i]
            inp, pre = acts[i]
            if i < len(self.layers) - 1:
                dy = gelu_grad(pre, dy)
            grads[f"{name}.weight"] = np.matmul(inp.transpose(0, 2, 1), dy)
            grads[f"{name}.bias"] = dy.sum(axis=1)
            if i > 0:
                dy = (dy.reshape(replicas * batch, -1) @ self.params[f"{name}.weight"].T).reshape(replicas, batch, -1)
        return loss, grads

    def step(self, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Run one weight update on images (GA, R, B, 28, 28) and labels (GA, R, B) int;
        returns the losses (GA, R) and updates ``params`` and ``state`` in place."""
        grad_accum = labels.shape[0]
        accum: dict[str, np.ndarray] = {}
        losses = []
        for ga in range(grad_accum):
            loss, grads = self._forward_backward(images[ga], labels[ga])
            losses.append(loss)
            counter = np.float32(ga)
            for name, grad in grads.items():
                if ga == 0:
                    accum[name] = grad
                else:
                    # accumulate_mean_: t = t * step/(step+1) + X/(step+1)
                    acc = accum[name]
                    acc *= counter / (counter + 1)
                    grad *= np.float32(1) / (counter + 1)
                    acc += grad
        for name, value in self.params.items():
            grad = accum[name].mean(axis=0, dtype=np.float32)  # all-reduce 'mean' over replicas
            st = self.state[name]
            b1, b2 = np.float32(self.beta1), np.float32(self.beta2)
            g16 = grad.astype(np.float16)
            st.first = (np.float16(b1) * st.first + np.float16(1 - b1) * g16).astype(np.float16)
            st.second = b2 * st.second + (np.float32(1) - b2) * grad * grad
            st.step = np.float32(st.step + 1)
            b1c = np.float16(1 - b1**st.step)
            b2c = np.float32(1 - b2**st.step)
            m_hat = (st.first / b1c).astype(np.float16).astype(np.float32)
            updater = (m_hat / (np.sqrt(st.second / b2c) + np.float32(self.eps))).astype(np.float16)
            value += np.float32(-self.lr) * updater.astype(np.float32)
        return np.stack(losses)


def init_params(hidden: int, layers: int, seed: int) -> dict[str, np.ndarray]:
    """Return fp32 MLP parameters 784-(hidden x layers)-10: weights N(0, 0.02), biases zero."""
    rng = np.random.default_rng(seed)
    sizes = [28 * 28] + [hidden] * layers + [10]
    params = {}
    for i, name in enumerate(layer_names(layers)):
        params[f"{name}.weight"] = rng.normal(0, 0.02, (sizes[i], sizes[i + 1])).astype(np.float32)
        params[f"{name}.bias"] = np.zeros(sizes[i + 1], np.float32)
    return params
