"""A plain numpy GPT (float64): forward loss, hand-written backward and one Adam step, the
reference the gpt workload's numerics are checked against.

Weights are the whole (unsharded) model, keyed as in the program with the phase entry first:
``embeddings.word`` (vocab, hidden), ``embeddings.position`` (seq, hidden),
``layers.<i>.ln_1.weight|bias``, ``layers.<i>.attention.q|k|v`` (hidden, hidden, heads in
order along the columns), ``layers.<i>.attention.out`` (hidden, hidden),
``layers.<i>.ln_2.weight|bias``, ``layers.<i>.feed_forward.intermediate`` (hidden, 4 hidden),
``layers.<i>.feed_forward.output`` (4 hidden, hidden), ``head.ln_f.weight|bias``,
``head.lm_head`` (hidden, vocab).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

LAYER_NORM_EPS = 1e-5
MASKED_SCORE = -1e4
_GELU_C = math.sqrt(2.0 / math.pi)


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple]:
    mu = x.mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + LAYER_NORM_EPS)
    xhat = (x - mu) * inv
    return xhat * g + b, (xhat, inv, g)


def _layer_norm_back(dy: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xhat, inv, g = cache
    dxhat = dy * g
    dx = inv * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


def _gelu(u: np.ndarray) -> np.ndarray:
    return 0.5 * u * (1.0 + np.tanh(_GELU_C * (u + 0.044715 * u**3)))


def _gelu_back(du_out: np.ndarray, u: np.ndarray) -> np.ndarray:
    t = np.tanh(_GELU_C * (u + 0.044715 * u**3))
    return du_out * (0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _GELU_C * (1.0 + 3 * 0.044715 * u * u))


def loss_and_grads(weights: Mapping[str, np.ndarray], tokens: np.ndarray, labels: np.ndarray, layers: int,
                   heads: int) -> tuple[float, dict[str, np.ndarray]]:
    """Return (mean cross-entropy over the tokens of ``tokens`` (batch, seq), the gradient of
    every weight of ``weights``)."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    batch, seq = tokens.shape
    hidden = w["embeddings.word"].shape[1]
    dh = hidden // heads
    n = batch * seq
    x = (w["embeddings.word"][tokens] + w["embeddings.position"][None]).reshape(n, hidden)
    mask = np.where(np.triu(np.ones((seq, seq), dtype=bool), k=1), MASKED_SCORE, 0.0)

    def split_heads(t: np.ndarray) -> np.ndarray:
        return t.reshape(batch, seq, heads, dh).transpose(0, 2, 1, 3)

    caches = []
    for i in range(layers):
        p = f"layers.{i}."
        a_in, ln1 = _layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        q, k, v = (split_heads(a_in @ w[p + f"attention.{m}"]) for m in "qkv")
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + mask
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(n, hidden)
        x1 = x + context @ w[p + "attention.out"]
        f_in, ln2 = _layer_norm(x1, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        u = f_in @ w[p + "feed_forward.intermediate"]
        act = _gelu(u)
        x2 = x1 + act @ w[p + "feed_forward.output"]
        caches.append((a_in, ln1, q, k, v, probs, context, f_in, ln2, u, act))
        x = x2
    h, lnf = _layer_norm(x, w["head.ln_f.weight"], w["head.ln_f.bias"])
    logits = h @ w["head.lm_head"]
    shifted = logits - logits.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    flat_labels = labels.reshape(n)
    loss = -logp[np.arange(n), flat_labels].mean()

    grads: dict[str, np.ndarray] = {}
    dlogits = np.exp(logp)
    dlogits[np.arange(n), flat_labels] -= 1.0
    dlogits /= n
    grads["head.lm_head"] = h.T @ dlogits
    dx, grads["head.ln_f.weight"], grads["head.ln_f.bias"] = _layer_norm_back(dlogits @ w["head.lm_head"].T, lnf)
    for i in reversed(range(layers)):
        p = f"layers.{i}."
        a_in, ln1, q, k, v, probs, context, f_in, ln2, u, act = caches[i]
        grads[p + "feed_forward.output"] = act.T @ dx
        du = _gelu_back(dx @ w[p + "feed_forward.output"].T, u)
        grads[p + "feed_forward.intermediate"] = f_in.T @ du
        dfin, grads[p + "ln_2.weight"], grads[p + "ln_2.bias"] = _layer_norm_back(
            du @ w[p + "feed_forward.intermediate"].T, ln2)
        dx1 = dx + dfin
        grads[p + "attention.out"] = context.T @ dx1
        dcontext = (dx1 @ w[p + "attention.out"].T).reshape(batch, seq, heads, dh).transpose(0, 2, 1, 3)
        dprobs = dcontext @ v.transpose(0, 1, 3, 2)
        dv = probs.transpose(0, 1, 3, 2) @ dcontext
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) / math.sqrt(dh)
        dq = dscores @ k
        dk = dscores.transpose(0, 1, 3, 2) @ q
        da_in = np.zeros_like(a_in)
        for name, d in (("q", dq), ("k", dk), ("v", dv)):
            d_flat = d.transpose(0, 2, 1, 3).reshape(n, hidden)
            grads[p + f"attention.{name}"] = a_in.T @ d_flat
            da_in += d_flat @ w[p + f"attention.{name}"].T
        dxa, grads[p + "ln_1.weight"], grads[p + "ln_1.bias"] = _layer_norm_back(da_in, ln1)
        dx = dx1 + dxa
    dx3 = dx.reshape(batch, seq, hidden)
    grads["embeddings.position"] = dx3.sum(0)
    dword = np.zeros_like(w["embeddings.word"])
    np.add.at(dword, tokens.reshape(n), dx)
    grads["embeddings.word"] = dword
    return float(loss), grads


def adam_step(weight: np.ndarray, grad: np.ndarray, lr: float, beta1: float = 0.9, beta2: float = 0.999,
              eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (new weight, first moment, second moment) after the first Adam step from zero state
    (bias-corrected, no weight decay)."""
    m = (1 - beta1) * grad
    v = (1 - beta2) * grad * grad
    update = (m / (1 - beta1)) / (np.sqrt(v / (1 - beta2)) + eps)
    return weight - lr * update, m, v
