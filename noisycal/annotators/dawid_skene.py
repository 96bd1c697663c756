"""Annotator models: Dawid–Skene, one-coin Dawid–Skene and grouped Dawid–Skene.

Model object -> ``fit(annotations, method=...)`` -> :class:`~noisycal.engines.results.AnnotatorFit`
(STYLE rule 8). Methods: ``'em'`` (EM, or MAP-EM when Dirichlet priors are given),
``'mle'`` (gradient MLE/MAP on the NumPyro log density, a cross-check of EM) and
``'nuts'`` (NumPyro NUTS, Stan User's Guide priors by default).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

import jax
import jax.numpy as jnp

from .._jax import as_key, as_numpy_rng, x64
from .._typing import ArrayLike, Seed
from .._validation import check_array, check_choice, check_int
from .._warnings import ConvergenceWarning, IdentifiabilityWarning
from ..data import Annotations
from ..engines.em import (
    bootstrap_em,
    collapse_patterns,
    e_step,
    fit_em,
    loglik_at,
    posteriors_at,
    vote_agreement,
)
from ..engines.results import AnnotatorFit

__all__ = ["DawidSkene", "OneCoinDawidSkene", "GroupedDawidSkene"]

#: Gap threshold of the binary acceptance rule (spec-003 section 3.6): delta_j > 1e-4.
GAP_THRESHOLD = 1e-4
#: A marginal prevalence below this is reported as a boundary estimate.
BOUNDARY = 1e-6


def _ds_data(ann: Annotations, group: np.ndarray | None, n_groups: int) -> Any:
    from noisycal.models.dawid_skene import make_data

    arr = ann.engine_arrays()
    return make_data(arr.item, arr.annotator, arr.label, n_items=arr.n_items,
                     n_annotators=arr.n_annotators, n_classes=arr.n_classes, group=group,
                     n_groups=n_groups)


def _moment_start(ann: Annotations, group: np.ndarray | None, L: int, anchor: int
                  ) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """Binary channels and group prevalences from the closed-form triple moments.

    Paper 003, Proposition D.2 (spec section 3.4) on the anchor and the two annotators
    that co-rate most items with it: mu and the anchor's gap from the triple, every other
    annotator's gap from its covariance with the anchor, a_j = q_j - mu delta_j, and
    mu_g = (q_{anchor,g} - a_anchor) / delta_anchor. Moments use the items each pair or
    triple co-rated (valid when missingness is unrelated to the truth). Rates are clipped
    to [0.01, 0.99] and prevalences to [0.01, 0.99] (it is a starting point). Returns
    (prevalence (L, 2), confusion (J, 2, 2), '') or (None, None, reason).
    """
    try:
        wide = ann.to_wide(missing=-1)
    except ValueError:
        return None, None, "repeated ratings: the moment start needs one rating per pair"
    seen = wide >= 0
    X = np.where(seen, wide, 0).astype(np.float64)
    co = (seen[:, [anchor]] & seen).sum(0).astype(float)
    co[anchor] = -1
    others = [int(j) for j in np.argsort(-co, kind="stable")[:2]]
    j1, j2 = others
    both = seen[:, anchor] & seen[:, j1] & seen[:, j2]
    if both.sum() < 3:
        return None, None, "fewer than 3 items rated by the anchor triple"
    from .hui_walter import _triple_core

    core = _triple_core(X[both][:, [anchor, j1, j2]])
    if core is None:
        return None, None, "the anchor triple is not informative (C12 C13 C23 <= 0)"
    mu, d_anchor, _, _ = core
    v = mu * (1 - mu)
    J = ann.n_annotators
    delta = np.empty(J)
    q = np.empty(J)
    for j in range(J):
        pair = seen[:, anchor] & seen[:, j]
        q[j] = X[seen[:, j], j].mean()
        if j == anchor:
            delta[j] = d_anchor
        elif pair.sum() >= 2:
            xa, xj = X[pair, anchor], X[pair, j]
            delta[j] = np.mean((xa - xa.mean()) * (xj - xj.mean())) / (v * d_anchor)
        else:
            delta[j] = 0.0
    a = np.clip(q - mu * delta, 0.01, 0.99)
    b = np.clip(a + delta, 0.01, 0.99)
    g = np.zeros(ann.n_items, np.int64) if group is None else group
    mu_g = np.empty(L)
    for k in range(L):
        rows = (g == k) & seen[:, anchor]
        mean = X[rows, anchor].mean() if rows.any() else q[anchor]
        mu_g[k] = (mean - a[anchor]) / (b[anchor] - a[anchor])
    mu_g = np.clip(np.nan_to_num(mu_g, nan=mu), 0.01, 0.99)
    prev = np.stack([1 - mu_g, mu_g], 1)
    conf = np.stack([np.stack([1 - a, a], 1), np.stack([1 - b, b], 1)], 1)
    return prev, conf, ""


def _group_index(group: np.ndarray | None, n_items: int) -> np.ndarray:
    """Each item's group code (zeros for a marginal model), as stored in fit details."""
    return np.zeros(n_items, np.int64) if group is None else np.asarray(group, np.int64)


def _orient_to_vote(post: np.ndarray, vote: np.ndarray) -> np.ndarray:
    """Permutation ``perm`` with latent class perm[c] relabelled as class c (Hungarian)."""
    K = post.shape[1]
    agree = post.T @ np.eye(K)[vote]  # agree[latent, vote class]
    rows, cols = linear_sum_assignment(-agree)
    perm = np.empty(K, dtype=int)
    perm[cols] = rows
    return perm


class DawidSkene:
    """Dawid–Skene model: K classes, one confusion matrix per annotator.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes K; checked against the annotations' class set when given.
    alpha : array-like of shape (K,), optional
        Dirichlet prior on the prevalence. With EM, giving ``alpha`` or ``beta`` turns
        the fit into MAP-EM (pseudo-counts ``alpha - 1``); with NUTS the default is the
        Stan User's Guide prior (alpha = 3).
    beta : array-like of shape (K, K) or (n_annotators, K, K), optional
        Dirichlet prior on each confusion row (per annotator when 3-D: prior confusion
        counts); NUTS default 2.5 K on the diagonal and 1 elsewhere.

    Examples
    --------
    >>> import noisycal as nc
    >>> ann = nc.datasets.load_dawid_skene_1979()
    >>> fit = nc.DawidSkene(n_classes=4).fit(ann, init="soft_vote", n_starts=1)
    >>> fit.prevalence.round(2)
    array([0.4 , 0.42, 0.11, 0.07])
    """

    _model = "dawid_skene"
    _one_coin = False

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None) -> None:
        self.n_classes = n_classes
        self.alpha = alpha
        self.beta = beta

    # ------------------------------------------------------------------ validation
    def _check(self, ann: object, groups: ArrayLike | None
               ) -> tuple[Annotations, np.ndarray | None, int]:
        if not isinstance(ann, Annotations):
            raise ValueError("annotations must be a noisycal.Annotations "
                             f"(got {type(ann).__name__}); build one with "
                             "Annotations.from_long / from_wide / from_arrays")
        K = ann.n_classes
        if self.n_classes is not None:
            k = check_int(self.n_classes, "n_classes", minimum=2)
            if k != K:
                raise ValueError(f"n_classes={k} but the annotations have {K} classes "
                                 f"{list(ann.classes)}; pass classes= to the Annotations")
        if ann.n_items < 2:
            raise ValueError(f"annotations must cover at least 2 items, got {ann.n_items}")
        if groups is None:
            return ann, None, 1
        g = np.asarray(groups)
        if g.ndim != 1 or g.shape[0] != ann.n_items:
            raise ValueError(f"groups must have one entry per item ({ann.n_items}), got "
                             f"shape {g.shape}")
        levels, codes = np.unique(g, return_inverse=True)
        if levels.size < 2:
            raise ValueError("groups must contain at least two distinct groups")
        return ann, codes.astype(np.int32), int(levels.size)

    def _priors(self, K: int, J: int, method: str) -> tuple[np.ndarray | None, ...]:
        from noisycal.models.dawid_skene import default_priors

        alpha, beta = self.alpha, self.beta
        if method == "nuts":
            a0, b0 = default_priors(K)
            alpha = a0 if alpha is None else alpha
            beta = b0 if beta is None else beta
        if alpha is not None:
            alpha = check_array(alpha, "alpha", ndim=1)
            if alpha.shape != (K,) or np.any(alpha <= 0):
                raise ValueError(f"alpha must be positive with shape ({K},), got "
                                 f"{alpha.shape} with min {alpha.min():g}")
        if beta is not None:
            beta = check_array(beta, "beta", ndim=(2, 3))
            ok = beta.shape == (K, K) or (beta.shape == (J, K, K) and not self._one_coin)
            if not ok or np.any(beta <= 0):
                want = f"({K}, {K})" + ("" if self._one_coin else f" or ({J}, {K}, {K})")
                raise ValueError(f"beta must be positive with shape {want}, got {beta.shape}")
            if self._one_coin and method != "nuts" and not np.allclose(
                    beta - np.diag(np.diag(beta)), beta[0, 1] * (1 - np.eye(K))):
                raise ValueError("beta for the one-coin model must have one diagonal and one "
                                 "off-diagonal value")
        return alpha, beta

    def _gold(self, ann: Annotations, gold: object) -> np.ndarray | None:
        if gold is None:
            return None
        if not isinstance(gold, dict):
            raise ValueError("gold must be a dict {item id: class label}")
        out = np.full(ann.n_items, -1, dtype=np.int32)
        pos = {v: i for i, v in enumerate(ann.items.tolist())}
        cls = {v: i for i, v in enumerate(ann.classes.tolist())}
        for item, label in gold.items():
            if item not in pos:
                raise ValueError(f"gold names item {item!r}, which has no ratings")
            if label not in cls:
                raise ValueError(f"gold label {label!r} of item {item!r} is not a class "
                                 f"{list(ann.classes)}")
            out[pos[item]] = cls[label]
        return out

    # ------------------------------------------------------------------ fit
    def fit(self, annotations: Annotations, *, method: str = "em",
            groups: ArrayLike | None = None, gold: dict | None = None,
            init: str = "mixed", n_starts: int = 10, max_iter: int = 1000, tol: float = 1e-8,
            seed: Seed = 0, n_boot: int = 0, orientation: str = "vote", anchor: int = 0,
            num_chains: int = 4, num_warmup: int = 1000, num_samples: int = 1000,
            progress_bar: bool = True, rhat_threshold: float = 1.01,
            chain_method: str = "vectorized", screen_gaps: bool = False) -> AnnotatorFit:
        """Fit the model.

        Parameters
        ----------
        annotations : Annotations
        method : {'em', 'mle', 'nuts'}, default='em'
        groups : array-like of shape (n_items,), optional
            Group of each item (:class:`GroupedDawidSkene` only).
        gold : dict, optional
            Known true classes ``{item id: class label}``; their posteriors are clamped.
        init : {'mixed', 'soft_vote', 'moments'}, default='mixed'
            EM starts: 'soft_vote' is Dawid & Skene's own start (each item's share of
            ratings as its posterior); 'mixed' uses it for the first start and random
            diagonal-dominant channels (rows ~ Dirichlet(1 + 4 e_k)) for the others.
            'moments' (two classes, at least 3 annotators) puts the closed-form
            triple-moment estimate of paper 003 (Proposition D.2, anchored on
            ``anchor``) first, then the soft vote, then random starts; when the moment
            solution does not exist (an uninformative triple) it is left out and
            ``details['moment_start']`` says why.
        n_starts : int, default=10
            EM starts, run vmapped in one jitted call; the best log-likelihood wins.
        max_iter : int, default=1000
        tol : float, default=1e-8
            EM stops when the mean log-likelihood per item changes by less than ``tol``.
        seed : int or jax key, default=0
        n_boot : int, default=0
            EM only: bootstrap refits over items (started from the fit) stored as
            ``draws`` for :meth:`AnnotatorFit.conf_int`.
        orientation : {'vote', 'anchor'}, default='vote'
            How latent classes are named: matched to the majority vote (Hungarian), or,
            for two classes, so that annotator ``anchor`` has a positive gap
            (spec-003 section 3.6).
        num_chains, num_warmup, num_samples, progress_bar
            NUTS settings.
        chain_method : {'vectorized', 'sequential', 'parallel'}, default='vectorized'
            NUTS: how chains run. 'vectorized' compiles the sampler once for all chains
            (measured fastest on CPU for these small models); 'parallel' needs one JAX
            device per chain.
        rhat_threshold : float, default=1.01
            NUTS: the fit's status is 'not_converged' when the largest R-hat (computed
            after relabelling) reaches it, or when any transition diverged.
        screen_gaps : bool, default=False
            EM, two classes: the tabular acceptance rule of paper 003 (spec section
            3.7): orient every start by annotator ``anchor``'s gap and choose the
            largest likelihood among the starts whose every gap exceeds 1e-4; when no
            start passes, the best start is returned with status 'small_gap'.
            ``details['screened_starts']`` records which starts passed.

        Returns
        -------
        AnnotatorFit
        """
        check_choice(method, "method", ("em", "mle", "nuts"))
        check_choice(init, "init", ("mixed", "soft_vote", "moments"))
        check_choice(orientation, "orientation", ("vote", "anchor"))
        if groups is not None and self._model != "grouped":
            raise ValueError("groups= is for GroupedDawidSkene")
        if self._model == "grouped" and groups is None:
            raise ValueError("GroupedDawidSkene needs groups= (one group per item)")
        ann, group, L = self._check(annotations, groups)
        K, J = ann.n_classes, ann.n_annotators
        if orientation == "anchor":
            if K != 2:
                raise ValueError("orientation='anchor' is defined for two classes")
            check_int(anchor, "anchor", minimum=0)
            if anchor >= J:
                raise ValueError(f"anchor must index an annotator (0..{J - 1}), got {anchor}")
        if init == "moments" and (K != 2 or J < 3):
            raise ValueError("init='moments' needs two classes and at least 3 annotators, "
                             f"got {K} classes and {J} annotators")
        if init == "moments" and orientation != "anchor":
            check_int(anchor, "anchor", minimum=0)
            if anchor >= J:
                raise ValueError(f"anchor must index an annotator (0..{J - 1}), got {anchor}")
        alpha, beta = self._priors(K, J, method)
        gold_idx = self._gold(ann, gold)
        if J == 1 and L == 1:
            return self._not_identified(ann, method, "one annotator and no groups: the "
                                        "channel and the prevalence are not identified")
        if method == "nuts":
            return self._fit_nuts(ann, group, L, alpha, beta, num_chains=num_chains,
                                  num_warmup=num_warmup, num_samples=num_samples,
                                  seed=seed, progress_bar=progress_bar,
                                  orientation=orientation, anchor=anchor,
                                  rhat_threshold=rhat_threshold, chain_method=chain_method)
        if method == "mle":
            return self._fit_mle(ann, group, L, alpha, beta, seed=seed,
                                 orientation=orientation, anchor=anchor)
        n_starts = check_int(n_starts, "n_starts", minimum=1)
        max_iter = check_int(max_iter, "max_iter", minimum=1)
        n_boot = check_int(n_boot, "n_boot", minimum=0)
        if not tol > 0:
            raise ValueError(f"tol must be positive, got {tol}")
        if not isinstance(screen_gaps, bool | np.bool_):
            raise ValueError(f"screen_gaps must be True or False, got {screen_gaps!r}")
        if screen_gaps:
            if K != 2:
                raise ValueError("screen_gaps=True is the binary acceptance rule; it needs "
                                 f"two classes, got {K}")
            check_int(anchor, "anchor", minimum=0)
            if anchor >= J:
                raise ValueError(f"anchor must index an annotator (0..{J - 1}), got {anchor}")
        return self._fit_em(ann, group, L, alpha, beta, gold_idx, init=init,
                            n_starts=n_starts, max_iter=max_iter, tol=float(tol), seed=seed,
                            n_boot=n_boot, orientation=orientation, anchor=anchor,
                            screen_gaps=bool(screen_gaps))

    # ------------------------------------------------------------------ helpers
    def _n_params(self, K: int, J: int, L: int) -> int:
        return L * (K - 1) + (J if self._one_coin else J * K * (K - 1))

    def _not_identified(self, ann: Annotations, method: str, message: str) -> AnnotatorFit:
        warnings.warn(message, IdentifiabilityWarning, stacklevel=3)
        K, J = ann.n_classes, ann.n_annotators
        return AnnotatorFit(self._model, method, ann.classes, ann.annotators, ann.items,
                            np.full((1, K), np.nan), np.full((J, K, K), np.nan),
                            np.full((ann.n_items, K), np.nan), float("nan"),
                            self._n_params(K, J, 1), "not_identified", message, False, 0)

    def _orient(self, ann: Annotations, post: np.ndarray, conf: np.ndarray, orientation: str,
                anchor: int) -> np.ndarray:
        K = post.shape[1]
        if orientation == "anchor":
            gap = conf[anchor, 1, 1] - conf[anchor, 0, 1]
            return np.array([1, 0]) if gap < 0 else np.arange(2)
        return _orient_to_vote(post, np.asarray(ann.majority_vote(tie="lowest")))[:K]

    def _status(self, prev: np.ndarray, conf: np.ndarray, converged: bool, L: int
                ) -> tuple[str, str]:
        if not (np.all(np.isfinite(prev)) and np.all(np.isfinite(conf))):
            return "nonfinite", "the estimates are not finite"
        if not converged:
            return "not_converged", "the iteration limit was reached before the tolerance"
        if conf.shape[1] == 2:
            gaps = conf[:, 1, 1] - conf[:, 0, 1]
            small = np.flatnonzero(np.abs(gaps) <= GAP_THRESHOLD)
            if small.size:
                return "small_gap", (f"annotator(s) {small.tolist()} have |gap| <= "
                                     f"{GAP_THRESHOLD:g}: their channel carries no "
                                     "information about the class")
        if L == 1 and np.min(prev) < BOUNDARY:
            return "boundary", (f"a class prevalence is below {BOUNDARY:g}: the estimate "
                                "is on the boundary of the parameter space")
        return "ok", ""

    def _random_starts(self, rng: np.random.Generator, n: int, K: int, J: int, L: int
                       ) -> tuple[np.ndarray, np.ndarray]:
        prev = rng.dirichlet(np.ones(K), size=(n, L))
        conc = np.ones((K, K)) + 4.0 * np.eye(K)
        conf = np.stack([[[rng.dirichlet(conc[k]) for k in range(K)] for _ in range(J)]
                         for _ in range(n)])
        if self._one_coin:
            acc = rng.uniform(0.5, 0.95, size=(n, J))
            off = (1 - acc) / (K - 1)
            conf = acc[:, :, None, None] * np.eye(K) + off[:, :, None, None] * (1 - np.eye(K))
        return prev, conf

    def _fit_em(self, ann: Annotations, group: np.ndarray | None, L: int,
                alpha: np.ndarray | None, beta: np.ndarray | None, gold: np.ndarray | None, *,
                init: str, n_starts: int, max_iter: int, tol: float, seed: Seed, n_boot: int,
                orientation: str, anchor: int, screen_gaps: bool = False) -> AnnotatorFit:
        K, J = ann.n_classes, ann.n_annotators
        key = as_key(seed)
        k_init, k_boot = jax.random.split(key)
        rng = as_numpy_rng(k_init)
        from noisycal.models.dawid_skene import make_data

        arr = ann.engine_arrays()
        g_items = np.zeros(ann.n_items, np.int32) if group is None else group
        gold_items = np.full(ann.n_items, -1, np.int32) if gold is None else gold
        # EM on distinct rating patterns, weighted by their counts (exactly the same fit)
        pattern, rep, counts = collapse_patterns(
            arr.item.astype(np.int64), arr.annotator.astype(np.int64) * K + arr.label,
            ann.n_items, extra=(g_items, gold_items))
        P = rep.size
        keep = np.isin(arr.item, rep)
        pos = np.full(ann.n_items, -1, np.int64)
        pos[rep] = np.arange(P)
        with x64():
            data = make_data(pos[arr.item[keep]], arr.annotator[keep], arr.label[keep],
                             n_items=P, n_annotators=J, n_classes=K, group=g_items[rep],
                             n_groups=L)
            weights = jnp.asarray(counts, dtype=jnp.float64)
            jgold = None if gold is None else jnp.asarray(gold_items[rep])
            ja = None if alpha is None else jnp.asarray(alpha)
            jb = None if beta is None else jnp.asarray(beta)
            starts = [ann.soft_labels()[rep]]
            moment_note = None
            if init == "moments":
                m_prev, m_conf, moment_note = _moment_start(ann, group, L, anchor)
                if m_prev is not None:
                    starts.insert(0, np.asarray(posteriors_at(
                        jnp.asarray(m_prev)[None], jnp.asarray(m_conf)[None], data)[0]))
                    moment_note = "used as start 0"
            starts = starts[:n_starts]
            n_rand = n_starts - len(starts) if init != "soft_vote" else 0
            if n_rand:
                prevs, confs = self._random_starts(rng, n_rand, K, J, L)
                starts.extend(np.asarray(posteriors_at(jnp.asarray(prevs), jnp.asarray(confs),
                                                       data)))
            post0 = jnp.asarray(np.stack(starts))
            st = fit_em(post0, data, jgold, ja, jb, one_coin=self._one_coin,
                        max_iter=max_iter, tol=tol, weights=weights)
            objective = np.asarray(st.objective)
            finite = np.isfinite(objective)
            screened = None
            if screen_gaps:
                # spec-003 section 3.7: orient each start by the anchor's gap, then keep
                # the starts whose every gap exceeds the threshold
                gaps = np.asarray(st.confusion[:, :, 1, 1] - st.confusion[:, :, 0, 1])
                gaps = gaps * np.where(gaps[:, [anchor]] < 0, -1.0, 1.0)
                screened = np.all(gaps > GAP_THRESHOLD, axis=1) & finite
                if screened.any():
                    finite = screened
            best = int(np.argmax(np.where(finite, objective, -np.inf))) if finite.any() else 0
            post_pat = np.asarray(st.post[best])
            post = post_pat[pattern]
            prev = np.asarray(st.prevalence[best])
            conf = np.asarray(st.confusion[best])
            converged = bool(st.converged[best])
            n_iter = int(st.n_iter[best])
            loglik = float(st.loglik[best])
            perm = self._orient(ann, post, conf, orientation, anchor)
            post, prev, conf = post[:, perm], prev[:, perm], conf[:, perm, :]
            one_coin = self._one_coin
            # refits run in the latent labelling of the EM run (where the priors apply)
            # and are relabelled afterwards like the fit itself
            post_start = jnp.asarray(post_pat)
            jpattern = jnp.asarray(pattern)

            def refits(key: jax.Array, count: int) -> tuple[dict, dict]:
                """``count`` bootstrap refits over items, started from the fit."""
                with x64():
                    bs = bootstrap_em(key, post_start, data, jgold, ja, jb, jpattern,
                                      one_coin=one_coin, max_iter=max_iter, tol=tol,
                                      n_boot=count)
                    return ({"prevalence": np.asarray(bs.prevalence)[:, :, perm],
                             "confusion": np.asarray(bs.confusion)[:, :, perm, :]},
                            {"n_boot": count,
                             "boot_converged": float(np.mean(np.asarray(bs.converged)))})

            draws = None
            boot_info: dict[str, Any] = {}
            if n_boot:
                draws, boot_info = refits(k_boot, n_boot)
        status, message = self._status(prev, conf, converged, L)
        if screened is not None and not screened.any() and status in ("ok", "boundary"):
            status, message = "small_gap", (f"no EM start passed the gap screen (every "
                                            f"oriented gap > {GAP_THRESHOLD:g})")
        if status == "not_converged":
            warnings.warn(f"{self._model} EM: {message}", ConvergenceWarning, stacklevel=3)
        elif status in ("small_gap", "nonfinite"):
            warnings.warn(f"{self._model} EM: {message}", IdentifiabilityWarning, stacklevel=3)
        return AnnotatorFit(self._model, "em", ann.classes, ann.annotators, ann.items, prev,
                            conf, post, loglik, self._n_params(K, J, L), status, message,
                            converged, n_iter, draws, refit=refits,
                            details={"start_objectives": objective, "best_start": best,
                             "n_patterns": P,
                             "map": alpha is not None or beta is not None,
                             "orientation": orientation, "groups": L,
                             "group_index": g_items, "prior_alpha": alpha,
                             "prior_beta": beta, "latent_perm": perm,
                             "gold": gold is not None, "max_iter": max_iter, "tol": tol,
                             **({"moment_start": moment_note} if init == "moments" else {}),
                             **({"screened_starts": screened} if screen_gaps else {}),
                             **boot_info})

    def _model_kwargs(self, data: Any, L: int, alpha: np.ndarray | None,
                      beta: np.ndarray | None) -> dict:
        return dict(n_items=data.n_items, n_annotators=data.n_annotators,
                    n_classes=data.n_classes, group=data.group if L > 1 else None,
                    n_groups=L, alpha=None if alpha is None else jnp.asarray(alpha),
                    beta=None if beta is None else jnp.asarray(beta),
                    one_coin=self._one_coin)

    def _fit_mle(self, ann: Annotations, group: np.ndarray | None, L: int,
                 alpha: np.ndarray | None, beta: np.ndarray | None, *, seed: Seed,
                 orientation: str, anchor: int) -> AnnotatorFit:
        from noisycal.models.dawid_skene import dawid_skene, one_coin_confusion

        from ..engines.mle import fit_map

        K, J = ann.n_classes, ann.n_annotators
        use_prior = alpha is not None or beta is not None
        with x64():
            data = _ds_data(ann, group, L)
            res = fit_map(dawid_skene, model_args=(data.item, data.annotator, data.label),
                          model_kwargs=self._model_kwargs(data, L, alpha, beta), seed=seed,
                          prior=use_prior)
            prev = np.asarray(res.params["prevalence"]).reshape(L, K)
            conf = (np.asarray(one_coin_confusion(jnp.asarray(res.params["accuracy"]), K))
                    if self._one_coin else np.asarray(res.params["confusion"]))
            post = np.asarray(e_step(jnp.asarray(prev), jnp.asarray(conf), data, None)[0])
        perm = self._orient(ann, post, conf, orientation, anchor)
        post, prev, conf = post[:, perm], prev[:, perm], conf[:, perm, :]
        status, message = self._status(prev, conf, res.converged, L)
        if res.status != "ok" and status == "ok":
            status, message = res.status, res.message
        return AnnotatorFit(self._model, "mle", ann.classes, ann.annotators, ann.items, prev,
                            conf, post, float(res.loglik), self._n_params(K, J, L), status,
                            message, bool(res.converged), int(res.n_iter), None,
                            {"map": use_prior, "orientation": orientation, "groups": L,
                             "group_index": _group_index(group, ann.n_items)})

    def _fit_nuts(self, ann: Annotations, group: np.ndarray | None, L: int,
                  alpha: np.ndarray | None, beta: np.ndarray | None, *, num_chains: int,
                  num_warmup: int, num_samples: int, seed: Seed, progress_bar: bool,
                  orientation: str, anchor: int, rhat_threshold: float,
                  chain_method: str) -> AnnotatorFit:
        from noisycal.models.dawid_skene import dawid_skene

        from ..engines.nuts import _arviz, check_sampler_options, sample_nuts

        az = _arviz()

        K, J = ann.n_classes, ann.n_annotators
        num_chains, num_warmup, num_samples = check_sampler_options(
            num_chains, num_warmup, num_samples, chain_method, progress_bar, rhat_threshold,
            min_warmup=1)
        # start every chain at the MAP-EM estimate under the same priors, so that all
        # chains begin in the vote-aligned mode (the mirrored modes are relabelled below
        # if a chain still wanders into one)
        em = self._fit_em(ann, group, L, alpha, beta, None, init="mixed", n_starts=4,
                          max_iter=1000, tol=1e-8, seed=seed, n_boot=0,
                          orientation=orientation, anchor=anchor)
        init_conf = np.clip(em.confusion, 1e-4, None)
        init_conf /= init_conf.sum(-1, keepdims=True)
        init_prev = np.clip(em.group_prevalence, 1e-4, None)
        init_prev /= init_prev.sum(-1, keepdims=True)
        init_params = {"prevalence": init_prev}
        if self._one_coin:
            init_params["accuracy"] = np.clip(init_conf[:, 0, 0], 1e-4, 1 - 1e-4)
        else:
            init_params["confusion"] = init_conf
        with x64():
            data = _ds_data(ann, group, L)
            # diagnostics are computed below, after relabelling the chains
            samples, diverging = sample_nuts(
                dawid_skene, model_args=(data.item, data.annotator, data.label),
                model_kwargs=self._model_kwargs(data, L, alpha, beta),
                init_params=init_params, num_chains=num_chains, num_warmup=num_warmup,
                num_samples=num_samples, rng_key=as_key(seed), progress_bar=progress_bar,
                chain_method=chain_method, target_accept_prob=0.8, max_tree_depth=10,
                dense_mass=False)
            prev_s = np.array(samples["prevalence"]).reshape(num_chains, num_samples, L, K)
            conf_s = np.array(samples["confusion"]).reshape(num_chains, num_samples, J, K, K)
            # label-switching guard (STYLE pitfall 8): orient every draw to the majority
            # vote (Hungarian on posterior-vote agreement), or by the anchor's gap
            prev_f = prev_s.reshape(-1, L, K)
            conf_f = conf_s.reshape(-1, J, K, K)
            if orientation == "anchor":
                gaps = conf_f[:, anchor, 1, 1] - conf_f[:, anchor, 0, 1]
                perm_f = np.where((gaps < 0)[:, None], np.array([1, 0]), np.arange(2))
            else:
                vote1h = jnp.asarray(np.eye(K)[np.asarray(ann.majority_vote(tie="lowest"))])
                agree = np.asarray(vote_agreement(jnp.asarray(prev_f), jnp.asarray(conf_f),
                                                  data, vote1h))
                perm_f = np.empty((agree.shape[0], K), dtype=int)
                for d in range(agree.shape[0]):
                    rows, cols = linear_sum_assignment(-agree[d])
                    perm_f[d, cols] = rows
            ref = np.unique(perm_f, axis=0, return_counts=True)
            ref = ref[0][np.argmax(ref[1])]
            moved = np.any(perm_f != ref, axis=1).reshape(num_chains, num_samples)
            switched = [c for c in range(num_chains) if moved[c].any()]
            idx = np.arange(prev_f.shape[0])[:, None]
            prev_s = prev_f[idx[:, :, None], np.arange(L)[None, :, None],
                            perm_f[:, None, :]].reshape(num_chains, num_samples, L, K)
            conf_s = conf_f[idx[:, :, None, None], np.arange(J)[None, :, None, None],
                            perm_f[:, None, :, None],
                            np.arange(K)[None, None, None, :]].reshape(
                                num_chains, num_samples, J, K, K)
            prev_d = prev_s.reshape(-1, L, K)
            conf_d = conf_s.reshape(-1, J, K, K)
            post = np.asarray(posteriors_at(jnp.asarray(prev_d), jnp.asarray(conf_d), data,
                                            mean=True))
            prev, conf = prev_d.mean(0), conf_d.mean(0)
            loglik = float(loglik_at(jnp.asarray(prev)[None], jnp.asarray(conf)[None],
                                     data)[0])
        idata = az.from_dict(posterior={"prevalence": prev_s, "confusion": conf_s})
        rhat = az.rhat(idata)
        max_rhat = float(max(np.nanmax(rhat[v].values) for v in ("prevalence", "confusion")))
        ess = az.ess(idata)
        min_ess = float(min(np.nanmin(ess[v].values) for v in ("prevalence", "confusion")))
        n_div = int(diverging.sum())
        status, message = "ok", ""
        if switched:
            message = (f"chain(s) {switched} visited a different class order; "
                       f"{int(moved.sum())} draw(s) were relabelled to the "
                       f"{'anchor' if orientation == 'anchor' else 'majority-vote'} "
                       "orientation")
            warnings.warn(message, IdentifiabilityWarning, stacklevel=3)
        if num_chains > 1 and not max_rhat < rhat_threshold:
            status = "not_converged"
            message = ((message + "; " if message else "")
                       + f"max R-hat {max_rhat:.3f} >= {rhat_threshold:g}")
        if n_div:
            status = "not_converged"
            message = (message + "; " if message else "") + f"{n_div} divergent transitions"
        if status != "ok":
            warnings.warn(f"{self._model} NUTS: {message}", ConvergenceWarning, stacklevel=3)
        return AnnotatorFit(self._model, "nuts", ann.classes, ann.annotators, ann.items, prev,
                            conf, post, loglik, self._n_params(K, J, L), status, message,
                            status == "ok", num_warmup + num_samples,
                            {"prevalence": prev_d, "confusion": conf_d},
                            {"chains": num_chains, "max_rhat": max_rhat,
                             "min_ess_bulk": min_ess, "num_divergences": n_div,
                             "relabelled_chains": switched, "groups": L,
                             "group_index": _group_index(group, ann.n_items)})


def predict(fit: AnnotatorFit, annotations: Annotations,
            groups: ArrayLike | None = None) -> np.ndarray:
    """P(true class | ratings) for new items, using a fit's point estimates.

    The new annotations must use the fit's classes and a subset of its annotators.
    ``groups`` (grouped fits) gives each new item's group as an index into the fitted
    groups (default group 0).
    """
    from noisycal.models.dawid_skene import make_data

    if not isinstance(annotations, Annotations):
        raise ValueError("annotations must be a noisycal.Annotations")
    if not np.array_equal(np.asarray(annotations.classes), np.asarray(fit.classes)):
        raise ValueError(f"annotations have classes {list(annotations.classes)} but the fit "
                         f"has {list(fit.classes)}")
    pos = {v: i for i, v in enumerate(np.asarray(fit.annotators).tolist())}
    unknown = [a for a in annotations.annotators.tolist() if a not in pos]
    if unknown:
        raise ValueError(f"annotations name annotator(s) the fit has not seen: {unknown[:5]}")
    amap = np.array([pos[a] for a in annotations.annotators.tolist()], dtype=np.int32)
    arr = annotations.engine_arrays()
    L = fit.group_prevalence.shape[0]
    g = np.zeros(annotations.n_items, np.int32) if groups is None else np.asarray(groups)
    if g.shape != (annotations.n_items,) or g.min() < 0 or g.max() >= L:
        raise ValueError(f"groups must give each new item a group index in 0..{L - 1}")
    with x64():
        data = make_data(arr.item, amap[arr.annotator], arr.label, n_items=arr.n_items,
                         n_annotators=len(fit.annotators), n_classes=len(fit.classes),
                         group=g, n_groups=L)
        post, _ = e_step(jnp.asarray(fit.group_prevalence), jnp.asarray(fit.confusion),
                         data, None)
        return np.asarray(post)


class OneCoinDawidSkene(DawidSkene):
    """One-coin Dawid–Skene: one accuracy per annotator, errors uniform over other classes.

    ``confusion[j]`` has ``accuracy_j`` on the diagonal and ``(1 - accuracy_j) / (K - 1)``
    elsewhere. Priors: ``beta`` (K, K) with one diagonal and one off-diagonal value gives
    the accuracy a Beta(beta_kk, (K - 1) beta_kk') prior.
    """

    _model = "one_coin"
    _one_coin = True


class GroupedDawidSkene(DawidSkene):
    """Dawid–Skene with observed item groups: a prevalence per group.

    Groups are, for example, bins of a classifier's score (the joint score-bin model of
    paper 003, section 3.7). With two annotators, two groups and two classes and shared
    channels this is the Hui–Walter model.

    Parameters
    ----------
    n_classes, alpha, beta : see :class:`DawidSkene`
    channels : {'shared', 'group'}, default='shared'
        'shared': one confusion matrix per annotator, pooled over groups. 'group': one
        per annotator and group (marginal Dawid–Skene within each group, with one common
        orientation); the fit's annotators are then ``"<annotator>|<group>"`` labels
        and ``confusion`` has one matrix per (annotator, group) pair that has ratings.
    """

    _model = "grouped"

    def __init__(self, n_classes: int | None = None, *, alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None, channels: str = "shared") -> None:
        super().__init__(n_classes, alpha=alpha, beta=beta)
        self.channels = channels

    def fit(self, annotations: Annotations, **kwargs: Any) -> AnnotatorFit:  # noqa: D102
        check_choice(self.channels, "channels", ("shared", "group"))
        if self.channels == "group" and isinstance(annotations, Annotations):
            groups = kwargs.get("groups")
            ann, codes, _ = self._check(annotations, groups)
            if codes is not None:
                levels = np.unique(np.asarray(groups))
                arr = ann.engine_arrays()
                who = np.array([f"{ann.annotators[a]}|{levels[g]}" for a, g in
                                zip(arr.annotator, codes[arr.item], strict=True)])
                annotations = Annotations.from_arrays(ann.items[arr.item], who,
                                                      ann.classes[arr.label],
                                                      classes=ann.classes)
        return super().fit(annotations, **kwargs)

    fit.__doc__ = DawidSkene.fit.__doc__
