"""MLP temperature scaling: one temperature per item from a small network on its scores.

The Ada-TS baseline of "Adaptive Set-Mass Calibration with Conformal Prediction"
(Appendix F): a per-item temperature ``T(z)`` from a multilayer perceptron on the logits
(the sample-dependent temperature of Joy et al., 2023, in the form of a network), trained
by minibatch Adam on the log loss. :class:`~noisycal.calibrators.AdaptiveTemperatureScaling`
is the feature-based ATS of Joy et al. (2023) in the form of "Confidence Calibration under
Ambiguous Ground Truth"; this module is the MLP form.

References
----------
Joy, T., Pinto, F., Lim, S.-N., Torr, P. H. S. & Dokania, P. K. (2023). Sample-dependent
adaptive temperature scaling for improved calibration. AAAI.

Kingma, D. P. & Ba, J. (2015). Adam: a method for stochastic optimization. ICLR.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

import jax
import jax.numpy as jnp

from ..._util.jax import as_key, x64
from ..._util.types import ArrayLike, Seed
from ..._util.validation import check_int, check_real, check_seed
from ...exceptions import ConvergenceWarning, IdentifiabilityWarning
from .._inputs import EPS, SoftmaxMap
from .multiclass import _doc, _PerItemTemperature

__all__ = ["MLPTemperatureScaling", "MLP_MIN_TEMPERATURE"]

#: The temperature floor of the MLP form, ``T = softplus(mlp(z)) + 1e-6``.
MLP_MIN_TEMPERATURE = 1e-6
#: Adam's moment decays and denominator floor (Kingma & Ba, 2015; PyTorch's defaults).
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def _mlp_temperature(params: list, S: jax.Array) -> jax.Array:
    """``softplus(mlp(S)) + 1e-6``: ReLU hidden layers, one linear output unit."""
    h = S
    for W, b in params[:-1]:
        h = jax.nn.relu(h @ W + b)
    W, b = params[-1]
    return jax.nn.softplus((h @ W + b)[:, 0]) + MLP_MIN_TEMPERATURE


def _item_losses(params: list, S: jax.Array, T: jax.Array, loss: str,
                 binary: bool) -> jax.Array:
    """Each item's loss of ``softmax(S / T(S))`` against its target row."""
    logq = jax.nn.log_softmax(S / _mlp_temperature(params, S)[:, None], axis=1)
    if loss == "log":
        return -jnp.sum(T * logq, axis=1)
    q = jnp.exp(logq)
    return jnp.sum(q * q - 2.0 * q * T + T, axis=1) * (0.5 if binary else 1.0)


def _batch_loss(params: list, S: jax.Array, T: jax.Array, w: jax.Array, loss: str,
                binary: bool) -> jax.Array:
    """Weighted mean loss of a batch (padding rows have weight 0)."""
    return jnp.sum(w * _item_losses(params, S, T, loss, binary)) / jnp.sum(w)


@functools.partial(jax.jit, static_argnames=("n", "batch_size", "loss", "binary"))
def _epoch(params: list, m: list, v: list, step: jax.Array, order: jax.Array, S: jax.Array,
           T: jax.Array, w: jax.Array, lr: float, weight_decay: float, *, n: int,
           batch_size: int, loss: str, binary: bool) -> tuple:
    """One epoch of minibatch Adam: the n items in the shuffled ``order`` (a permutation
    of 0..n-1), padded to whole batches (the padded rows of ``S``, ``T``, ``w`` after row
    n, weight 0), scanned over the batches.

    Returns the new parameters, moments and step count, the weighted mean of the batch
    losses (each batch weighted by its items) and whether it and the parameters are
    finite."""
    n_pad = S.shape[0]
    order = jnp.concatenate([order, jnp.arange(n, n_pad)])
    shape = (n_pad // batch_size, batch_size)
    Sb, Tb = S[order].reshape(*shape, -1), T[order].reshape(*shape, -1)
    wb = w[order].reshape(shape)
    b1, b2 = ADAM_BETAS
    grad_fn = jax.value_and_grad(_batch_loss)

    def one(carry: tuple, batch: tuple) -> tuple:
        p, m1, m2, t = carry
        value, g = grad_fn(p, *batch, loss, binary)
        # PyTorch's Adam weight decay: the l2 gradient added to the loss gradient
        g = jax.tree_util.tree_map(lambda gi, pi: gi + weight_decay * pi, g, p)
        t = t + 1
        m1 = jax.tree_util.tree_map(lambda a, gi: b1 * a + (1 - b1) * gi, m1, g)
        m2 = jax.tree_util.tree_map(lambda a, gi: b2 * a + (1 - b2) * gi * gi, m2, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(
            lambda pi, a, s: pi - lr * (a / c1) / (jnp.sqrt(s / c2) + ADAM_EPS), p, m1, m2)
        return (p, m1, m2, t), value * jnp.sum(batch[2])

    (params, m, v, step), values = jax.lax.scan(one, (params, m, v, step), (Sb, Tb, wb))
    value = jnp.sum(values) / n
    finite = jnp.isfinite(value) & jnp.all(jnp.array(
        [jnp.all(jnp.isfinite(a)) for a in jax.tree_util.tree_leaves(params)]))
    return params, m, v, step, value, finite


@functools.partial(jax.jit, static_argnames=("loss", "binary"))
def _mean_loss(params: list, S: jax.Array, T: jax.Array, loss: str, binary: bool) -> jax.Array:
    return jnp.mean(_item_losses(params, S, T, loss, binary))


_temperature_jit = jax.jit(_mlp_temperature)


def _init(rng: np.random.Generator, sizes: tuple[int, ...]) -> list:
    """PyTorch's default ``nn.Linear`` initialisation: weights and biases uniform on
    ``+-1 / sqrt(fan_in)``, float64."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        r = 1.0 / math.sqrt(fan_in)
        params.append((jnp.asarray(rng.uniform(-r, r, (fan_in, fan_out))),
                       jnp.asarray(rng.uniform(-r, r, fan_out))))
    return params


def _check_hidden(hidden: object) -> tuple[int, ...]:
    ok = isinstance(hidden, (tuple, list)) and len(hidden) > 0 and all(
        isinstance(h, numbers.Integral) and not isinstance(h, bool) and h >= 1 for h in hidden)
    if not ok:
        raise ValueError(f"hidden must be a non-empty tuple of positive integers (the widths "
                         f"of the hidden layers), got {hidden!r}")
    return tuple(int(h) for h in hidden)


class MLPTemperatureScaling(_PerItemTemperature, SoftmaxMap):
    """Temperature scaling with one temperature per item from an MLP on its scores.

    The Ada-TS of "Adaptive Set-Mass Calibration with Conformal Prediction" (Appendix F,
    after Joy et al., 2023, "Sample-dependent adaptive temperature scaling for improved
    calibration"):

    .. math:: T(z) = \\operatorname{softplus}(\\mathrm{mlp}(z)) + 10^{-6},
              \\qquad q = \\operatorname{softmax}(z / T(z)),

    with ``mlp`` a perceptron on the score row ``z`` (logits as given; ``probs=`` enter
    as ``log(max(p, eps))``, binary 1-D scores as two-column log-probabilities) with
    ReLU hidden layers ``hidden`` and one linear output. It is trained by minibatch Adam
    (PyTorch's moment decays 0.9, 0.999 and floor 1e-8, its coupled weight decay) on the
    mean loss against the target: the log loss for targets on the simplex (the NLL with
    hard labels, the soft cross-entropy with soft ones), the affine Brier loss for targets
    that leave it (``loss='auto'``). The defaults are the paper's settings: hidden (128,
    64), learning rate 5e-4, no weight decay, 100 epochs, batches of 256.

    Our choices where the paper is silent: PyTorch's default initialisation (uniform on
    ``+-1/sqrt(fan_in)``, drawn from ``seed``), a fresh seeded shuffle every epoch with a
    last partial batch (padded with weight-0 rows, so one compiled epoch serves every
    epoch), float64 throughout. The map keeps the parameters after the last epoch (no
    early stopping, no validation split). Unlike the affine maps the loss is not convex
    and the result depends on the seed.

    Parameters
    ----------
    hidden : tuple of int, default=(128, 64)
        Widths of the hidden layers.
    lr : float, default=5e-4
        Adam's learning rate (> 0).
    epochs : int, default=100
        Passes over the fitting items (>= 1).
    batch_size : int, default=256
        Items per minibatch (>= 1; the last batch of an epoch holds the remainder).
    weight_decay : float, default=0.0
        Coupled l2 weight decay, as ``torch.optim.Adam(weight_decay=)`` (>= 0).
    seed : int or jax key, default=0
        Seed of the initialisation and of the shuffles.
    eps : float, default=1e-6
        Floor of ``probs=`` before the logarithm (``0 < eps < 0.5``); logits are never
        clipped.
    loss : {'auto', 'log', 'brier'}, default='auto'
        As for :class:`TemperatureScaling`.

    Attributes
    ----------
    params_ : list of (ndarray, ndarray)
        Weight matrix and bias of each layer (float64), input to output.
    loss_history_ : ndarray of shape (n_epochs_run,)
        Mean training loss of each epoch (over its minibatches, as they were seen); its
        length is ``epochs_run_``.
    epochs_run_ : int
        Epochs completed with finite loss and parameters.
    objective_ : float
        Mean fitting loss of the final map on all fitting items.
    mean_temperature_ : float
        Mean of ``T(z_i)`` over the fitting items.
    n_classes_, binary_, input_, eps_, loss_ :
        As for :class:`TemperatureScaling`.
    status_, message_, statuses_ : str, str, tuple of str
        ``'ok'``; ``'nonfinite'`` when the training loss or the parameters became
        non-finite (training diverged: the map keeps the parameters of the last finite
        epoch, the initial ones if none); ``'not_identified'`` when every score row is
        constant (the temperature does not enter the map). Any status but 'ok' warns.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 4)) * 3
    >>> y = (np.exp(z / 2).cumsum(1) / np.exp(z / 2).sum(1, keepdims=True)
    ...      > rng.random((2000, 1))).argmax(1)
    >>> mlp = nc.calibrators.MLPTemperatureScaling(epochs=20).fit(logits=z, target=y)
    >>> mlp.status_, mlp.predict_temperature(logits=z).shape
    ('ok', (2000,))
    """

    def __init__(self, *, hidden: tuple[int, ...] = (128, 64), lr: float = 5e-4,
                 epochs: int = 100, batch_size: int = 256, weight_decay: float = 0.0,
                 seed: Seed = 0, eps: float = EPS, loss: str = "auto") -> None:
        self.hidden = hidden
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.seed = seed
        self.eps = eps
        self.loss = loss

    def _temperatures(self, S: np.ndarray) -> np.ndarray:
        with x64():
            p = [(jnp.asarray(W), jnp.asarray(b)) for W, b in self.params_]
            return np.asarray(_temperature_jit(p, jnp.asarray(S, dtype=jnp.float64)))


    @_doc
    def fit(self, *, probs: ArrayLike | None = None, logits: ArrayLike | None = None,
            target: object) -> MLPTemperatureScaling:
        """Train the temperature network on a target by minibatch Adam."""
        hidden = _check_hidden(self.hidden)
        lr = check_real(self.lr, "lr", minimum=0.0, strict=True)
        epochs = check_int(self.epochs, "epochs", minimum=1)
        batch = check_int(self.batch_size, "batch_size", minimum=1)
        wd = check_real(self.weight_decay, "weight_decay", minimum=0.0)
        check_seed(self.seed)
        x, T = self._prepare(probs, logits, target)
        S = x.S
        n, K = S.shape
        n_pad = -(-n // batch) * batch
        pad = n_pad - n
        with x64():
            # one numpy stream from the seed (as a JAX key) for the initialisation and
            # the shuffles: no PRNG kernel to compile
            rng = np.random.default_rng(
                np.asarray(jax.random.key_data(as_key(self.seed))).ravel().tolist())
            params = _init(rng, (K, *hidden, 1))
            m = [(jnp.zeros_like(W), jnp.zeros_like(b)) for W, b in params]
            v = list(m)
            Sj = jnp.asarray(np.vstack([S, np.zeros((pad, K))]), dtype=jnp.float64)
            Tj = jnp.asarray(np.vstack([T, np.zeros((pad, K))]), dtype=jnp.float64)
            wj = jnp.asarray(np.r_[np.ones(n), np.zeros(pad)], dtype=jnp.float64)
            step = jnp.asarray(0, dtype=jnp.int64)
            history: list[float] = []
            diverged = None
            for e in range(epochs):
                order = jnp.asarray(rng.permutation(n))
                new = _epoch(params, m, v, step, order, Sj, Tj, wj, lr, wd, n=n,
                             batch_size=batch, loss=self.loss_, binary=self.binary_)
                if not bool(new[5]):
                    diverged = e + 1
                    break
                params, m, v, step = new[:4]
                history.append(float(new[4]))
            objective = float(_mean_loss(params, Sj[:n], Tj[:n], self.loss_, self.binary_))
        self.params_ = [(np.asarray(W), np.asarray(b)) for W, b in params]
        self.loss_history_ = np.asarray(history, dtype=np.float64)
        self.epochs_run_ = len(history)
        self.objective_ = objective
        self.mean_temperature_ = float(np.mean(self._temperatures(S)))
        if diverged is not None:
            kept = (f"the parameters after epoch {diverged - 1}" if diverged > 1
                    else "the initial parameters")
            self._set_status("nonfinite", f"training diverged: the loss or the parameters "
                             f"became non-finite in epoch {diverged} of {epochs} (lower lr, "
                             f"or rescale the scores); the map keeps {kept}",
                             ConvergenceWarning)
        elif not np.any(np.ptp(S, axis=1) > 0):
            self._set_status("not_identified", "every score row is constant, so the "
                             "temperatures do not enter the map", IdentifiabilityWarning)
        elif not math.isfinite(objective):
            self._set_status("nonfinite", f"the fitting loss of the trained map is "
                             f"{objective} (a target outside [0, 1] with loss='log'?)",
                             ConvergenceWarning)
        else:
            self._set_status("ok", "", None)
        return self
