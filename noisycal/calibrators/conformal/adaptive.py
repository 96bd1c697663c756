r"""The adaptive ("Ada") threshold's transform of :class:`SplitConformal`.

See :mod:`noisycal.calibrators.conformal` for :class:`SplitConformal`. The transform is
:math:`w(x) = |\mathrm{MLP}(z(x))|` fitted by least squares to the scores, and the
factor :math:`\gamma + w(x)` of the threshold ("Adaptive Set-Mass Calibration with
Conformal Prediction", Section 3.3)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.types import Seed

__all__ = ["fit_adaptive", "adaptive_scale"]

_GAMMA = 1e-3


def _init_mlp(key: jax.Array, sizes: tuple[int, ...]) -> list:
    params = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k1, k2 = jax.random.split(key, 3)
        lim = 1.0 / math.sqrt(a)
        params.append((jax.random.uniform(k1, (a, b), minval=-lim, maxval=lim),
                       jax.random.uniform(k2, (b,), minval=-lim, maxval=lim)))
    return params


def _mlp(params: list, x: jax.Array) -> jax.Array:
    for W, b in params[:-1]:
        x = jax.nn.relu(x @ W + b)
    W, b = params[-1]
    return jnp.abs((x @ W + b)[:, 0])


@partial(jax.jit, static_argnames=("n_steps", "batch"))
def _train(params: list, key: jax.Array, X: jax.Array, s: jax.Array, lr: float, *,
           n_steps: int, batch: int) -> tuple[list, jax.Array]:
    """Adam on the mean squared error of w(x) to the score, minibatches of ``batch``."""
    def loss(p: list, idx: jax.Array) -> jax.Array:
        return jnp.mean((s[idx] - _mlp(p, X[idx])) ** 2)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)

    def step(carry: tuple, t: jax.Array) -> tuple:
        p, m, v, k = carry
        k, sub = jax.random.split(k)
        idx = jax.random.randint(sub, (batch,), 0, X.shape[0])
        g = jax.grad(loss)(p, idx)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        c1, c2 = 1 - 0.9 ** (t + 1.0), 1 - 0.999 ** (t + 1.0)
        p = jax.tree_util.tree_map(
            lambda w, a, b: w - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8), p, m, v)
        return (p, m, v, k), None

    (params, _, _, _), _ = jax.lax.scan(step, (params, zeros, zeros, key),
                                        jnp.arange(n_steps, dtype=jnp.float64))
    return params, jnp.mean((s - _mlp(params, X)) ** 2)


def fit_adaptive(X: np.ndarray, s: np.ndarray, *, hidden: tuple[int, ...], n_steps: int,
                 lr: float, seed: Seed, max_restarts: int = 10) -> tuple[list, float, int]:
    """Fit w(x) = |MLP(x)| to the scores; restart with lr / 10 on a NaN or a loss above 10.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (the base logits).
    s : ndarray of shape (n,)
        Scores.
    hidden : tuple of int
    n_steps : int
    lr : float
    seed : int or jax key
    max_restarts : int, default=10

    Returns
    -------
    params, mse, restarts
        The layer weights, the final mean squared error and the number of restarts.
    """
    sizes = (X.shape[1], *hidden, 1)
    key = as_key(seed)
    with x64():
        Xj, sj = jnp.asarray(X), jnp.asarray(s)
        for r in range(max_restarts + 1):
            key, k_init, k_run = jax.random.split(key, 3)
            params = _init_mlp(k_init, sizes)
            params, mse = _train(params, k_run, Xj, sj, lr / 10**r, n_steps=n_steps,
                                 batch=max(1, X.shape[0] // 5))
            mse = float(mse)
            if math.isfinite(mse) and mse <= 10.0:
                return [(np.asarray(W), np.asarray(b)) for W, b in params], mse, r
    return [(np.asarray(W), np.asarray(b)) for W, b in params], mse, max_restarts


def adaptive_scale(params: list, X: np.ndarray) -> np.ndarray:
    """:math:`\\gamma + w(x)` of each row (the factor of the adaptive threshold).

    Parameters
    ----------
    params : list
        From :func:`fit_adaptive`.
    X : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)
    """
    with x64():
        w = np.asarray(_mlp([(jnp.asarray(W), jnp.asarray(b)) for W, b in params],
                            jnp.asarray(X)))
    return _GAMMA + w
