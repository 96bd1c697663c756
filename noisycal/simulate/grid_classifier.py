"""The classifier of the synthetic experiment of the set-mass calibration paper.

The paper is "Adaptive Set-Mass Calibration with Conformal Prediction" (Section 5.1,
Appendix E). The classifier is random Fourier features of the 2-D input and a small
fully connected network trained with cross-entropy and AdamW (re-exported by
:mod:`noisycal.simulate`).

The paper gives the architecture in words; the sizes and the training schedule are those
of the authors' code, our defaults: F = 64 frequencies ``B ~ N(0, 0.5^2)`` (fixed),
``phi(x) = [x, sin(2 pi B^T x), cos(2 pi B^T x)]`` (130 inputs),
Linear(130, 256) - GELU - LayerNorm - Linear(256, 256) - GELU - LayerNorm - Linear(256, K),
15 epochs of minibatches of 1,024 (reshuffled every epoch, the last one smaller), AdamW
(learning rate 3e-3, weight decay 1e-2 on every parameter, betas (0.9, 0.999), eps 1e-8,
PyTorch's decoupled form), the learning rate cosine-annealed per epoch over the 15
epochs, label smoothing 0.1, PyTorch's default initialisation (uniform within
``1/sqrt(fan_in)``), and the epoch with the best validation accuracy kept.

The network is trained in float32 (the authors train in float16 autocast on a GPU; this
is a model being fitted, not an estimate, and float64 would double the cost on a CPU);
its logits are returned as float64.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from .._util.jax import as_key
from .._util.types import ArrayLike, Seed
from .._util.validation import check_array, check_int, check_labels, check_real, check_seed

__all__ = ["GridClassifier", "grid_classifier"]


class GridClassifier(NamedTuple):
    """A trained :func:`grid_classifier`.

    Attributes
    ----------
    params : list of tuple
        The network's parameters at the best epoch (float32 JAX arrays).
    frequencies : ndarray of shape (2, F)
        The fixed random Fourier frequencies B.
    valid_accuracy : ndarray of shape (epochs,)
        Validation accuracy after every epoch.
    best_epoch : int
        The epoch kept (0-based).
    """

    params: list
    frequencies: np.ndarray
    valid_accuracy: np.ndarray
    best_epoch: int

    def logits(self, x: ArrayLike, *, batch_size: int = 8192) -> np.ndarray:
        """The network's logits of inputs ``x``.

        Parameters
        ----------
        x : array-like of shape (n, 2)
        batch_size : int, default=8192
            Rows per forward pass (memory only).

        Returns
        -------
        ndarray of shape (n, K), float64
        """
        X = check_array(x, "x", ndim=2)
        if X.shape[1] != 2:
            raise ValueError(f"x must have 2 columns, got shape {X.shape}")
        b = check_int(batch_size, "batch_size", minimum=1)
        B = jnp.asarray(self.frequencies, jnp.float32)
        out = [np.asarray(_forward(self.params, _features(jnp.asarray(X[i:i + b], jnp.float32),
                                                          B)), dtype=np.float64)
               for i in range(0, X.shape[0], b)]
        return np.concatenate(out, axis=0)


def _features(x: jax.Array, B: jax.Array) -> jax.Array:
    proj = 2.0 * math.pi * (x @ B)
    return jnp.concatenate([x, jnp.sin(proj), jnp.cos(proj)], axis=1)


def _layer_norm(h: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    mu = h.mean(axis=1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=1, keepdims=True)
    return (h - mu) / jnp.sqrt(var + 1e-5) * g + b


def _forward(params: list, f: jax.Array) -> jax.Array:
    (W1, b1), (g1, c1), (W2, b2), (g2, c2), (W3, b3) = params
    h = _layer_norm(jax.nn.gelu(f @ W1 + b1, approximate=False), g1, c1)
    h = _layer_norm(jax.nn.gelu(h @ W2 + b2, approximate=False), g2, c2)
    return h @ W3 + b3


def _init(key: jax.Array, sizes: tuple[int, ...]) -> list:
    params = []
    keys = jax.random.split(key, 2 * (len(sizes) - 1))
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        bound = 1.0 / math.sqrt(m)
        W = jax.random.uniform(keys[2 * i], (m, n), jnp.float32, -bound, bound)
        b = jax.random.uniform(keys[2 * i + 1], (n,), jnp.float32, -bound, bound)
        params.append((W, b))
        if i < len(sizes) - 2:
            params.append((jnp.ones(n, jnp.float32), jnp.zeros(n, jnp.float32)))
    return params


def _loss(params: list, f: jax.Array, y: jax.Array, smoothing: float) -> jax.Array:
    logp = jax.nn.log_softmax(_forward(params, f), axis=1)
    nll = -jnp.take_along_axis(logp, y[:, None], axis=1)[:, 0]
    return jnp.mean((1.0 - smoothing) * nll - smoothing * logp.mean(axis=1))


_grad = jax.jit(jax.grad(_loss), static_argnums=3)
_predict = jax.jit(lambda p, f: jnp.argmax(_forward(p, f), axis=1))


@jax.jit
def _adamw(params: list, m: list, v: list, grads: list, t: jax.Array, lr: jax.Array,
           wd: jax.Array) -> tuple[list, list, list]:
    b1, b2, eps = 0.9, 0.999, 1e-8
    m = jax.tree.map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    c1, c2 = 1 - b1**t, 1 - b2**t
    params = jax.tree.map(lambda p, a, s: p * (1 - lr * wd) - lr * (a / c1)
                          / (jnp.sqrt(s / c2) + eps), params, m, v)
    return params, m, v


def grid_classifier(x: ArrayLike, labels: ArrayLike, n_classes: int, *,
                    x_valid: ArrayLike, labels_valid: ArrayLike, n_features: int = 64,
                    frequency_scale: float = 0.5, hidden: int = 256, epochs: int = 15,
                    batch_size: int = 1024, lr: float = 3e-3, weight_decay: float = 1e-2,
                    label_smoothing: float = 0.1, seed: Seed = 0) -> GridClassifier:
    """Train the synthetic experiment's classifier (module docstring) on ``(x, labels)``.

    Parameters
    ----------
    x, labels : array-like of shape (n, 2) and (n,)
        Training inputs and labels in {0, ..., K - 1} (e.g. from
        :func:`noisycal.simulate.gaussian_grid`).
    n_classes : int
        K.
    x_valid, labels_valid : array-like
        The validation draw whose accuracy picks the epoch kept.
    n_features : int, default=64
        F, the number of random frequencies.
    frequency_scale : float, default=0.5
        Standard deviation of the frequencies.
    hidden : int, default=256
    epochs : int, default=15
    batch_size : int, default=1024
    lr, weight_decay : float, default=3e-3, 1e-2
    label_smoothing : float, default=0.1
        In [0, 1).
    seed : int or jax key, default=0
        Frequencies, initialisation and minibatch order.

    Returns
    -------
    GridClassifier
    """
    X = check_array(x, "x", ndim=2)
    Xv = check_array(x_valid, "x_valid", ndim=2)
    for name, arr in (("x", X), ("x_valid", Xv)):
        if arr.shape[1] != 2:
            raise ValueError(f"{name} must have 2 columns, got shape {arr.shape}")
    K = check_int(n_classes, "n_classes", minimum=2)
    y = check_labels(labels, K, "labels")
    yv = check_labels(labels_valid, K, "labels_valid")
    if y.shape[0] != X.shape[0] or yv.shape[0] != Xv.shape[0]:
        raise ValueError("labels and labels_valid must have one label per row of x and "
                         "x_valid")
    F = check_int(n_features, "n_features", minimum=1)
    H = check_int(hidden, "hidden", minimum=1)
    n_epochs = check_int(epochs, "epochs", minimum=1)
    bs = check_int(batch_size, "batch_size", minimum=1)
    scale = check_real(frequency_scale, "frequency_scale", minimum=0.0, strict=True)
    lr0 = check_real(lr, "lr", minimum=0.0, strict=True)
    wd = check_real(weight_decay, "weight_decay", minimum=0.0)
    ls = check_real(label_smoothing, "label_smoothing", minimum=0.0)
    if ls >= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    k_freq, k_init, k_perm = jax.random.split(as_key(check_seed(seed)), 3)
    B = scale * jax.random.normal(k_freq, (2, F), jnp.float32)
    feats = _features(jnp.asarray(X, jnp.float32), B)
    feats_v = _features(jnp.asarray(Xv, jnp.float32), B)
    yj = jnp.asarray(y, jnp.int32)
    params = _init(k_init, (2 + 2 * F, H, H, K))
    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)
    acc, best, best_params, t = [], -1.0, params, 0
    n = X.shape[0]
    for epoch in range(n_epochs):
        lr_e = lr0 * 0.5 * (1.0 + math.cos(math.pi * epoch / n_epochs))
        order = jax.random.permutation(jax.random.fold_in(k_perm, epoch), n)
        for i in range(0, n, bs):
            idx = order[i:i + bs]
            t += 1
            g = _grad(params, feats[idx], yj[idx], ls)
            params, m, v = _adamw(params, m, v, g, jnp.float32(t), jnp.float32(lr_e),
                                  jnp.float32(wd))
        a = float(np.mean(np.asarray(_predict(params, feats_v)) == yv))
        acc.append(a)
        if a > best:
            best, best_params, best_epoch = a, params, epoch
    return GridClassifier(best_params, np.asarray(B, dtype=np.float64), np.array(acc),
                          best_epoch)
