"""Classifier-informed Dawid–Skene: annotator channels with each item's prior from a classifier.

The model of Raykar et al. (2010), "Learning From Crowds", with the classifier held
fixed (:mod:`models.classifier_informed`): item i's true class has the prior
``softmax(scale * z_i + bias)`` (``z_i`` the classifier's log-probabilities, ``scale``
and ``bias`` fitted so that a miscalibrated classifier does not dominate), and each
annotator labels through a Dawid–Skene confusion matrix. Fitted by EM
(:mod:`noisycal.engines.em.classifier_informed`, the default) or NUTS on the NumPyro
model (:mod:`noisycal.engines.density.classifier_informed`).

Circularity. The fit's item posteriors used each item's own score, so a posterior target
agrees with those scores by construction; a corrected target uses them only through the
channels, which were fitted with the scores as the items' priors, and still leans towards
them. The fit remembers them (``fit.score_probs``), every target built from it carries
the scores of its fitted rows, and a metric that compares the same scores with that
target gets the status ``'circular_target'`` (:mod:`noisycal.targets.circular`). The honest routes:

- a held-out classifier: fit with one classifier's scores (or none), evaluate another;
- cross-fitting: split the items in folds, fit on the other folds' items and scores, and
  build each fold's target from its own ratings (``nc.targets.corrected(ann_fold, fit)``,
  whose rows then used no score of their own item).

References
----------
Raykar, V. C., Yu, S., Zhao, L. H., Valadez, G. H., Florin, C., Bogoni, L. and Moy, L.
(2010). Learning From Crowds. Journal of Machine Learning Research 11, 1297-1322.
Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer
error-rates using the EM algorithm. Applied Statistics 28(1), 20-28.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._util.items import match_columns, prediction_items
from .._util.jax import x64
from .._util.progress import check_progress
from .._util.types import ArrayLike, Seed
from .._util.validation import check_seed, predictions
from ..annotations.core import Annotations
from ..annotations.matching import positions
from ..engines.density.nuts import extended_fit
from ..engines.identification import NUTS_NOTE
from ..engines.methods import EM, NUTS, as_method
from ..engines.results import (
    AnnotatorFit,
    ChannelRefits,
    check_fit,
    check_refit_inputs,
    every_status,
    refit_result,
)
from ..engines.summary import Summary
from ..exceptions import NotOffered
from .dawid_skene import DawidSkene, _ds_data, check_fit_size

__all__ = ["ClassifierInformedDawidSkene", "ClassifierInformedFit"]


@dataclass(frozen=True, eq=False)
class ClassifierInformedFit(AnnotatorFit):
    """A fitted :class:`ClassifierInformedDawidSkene` (an AnnotatorFit with the prior's
    parameters and the scores it used).

    Attributes
    ----------
    scale : float
        The fitted factor ``a > 0`` of the scores in the prior ``softmax(a z_i + c)``.
    bias : ndarray of shape (K,)
        The fitted class bias ``c``, centred (mean 0).
    item_prior : ndarray of shape (n_items, K)
        Each item's prior ``softmax(a z_i + c)`` over the true classes.
    score_probs : ndarray of shape (n_items, K)
        The classifier's probabilities the fit used, in the fit's item order (what the
        targets built from the fit remember, :mod:`noisycal.targets.circular`).

    Notes
    -----
    ``group_prevalence`` holds the prevalence-equivalent: the mean of the item priors,
    ``mean_i softmax(a z_i + c)`` (one row). The other fields are those of
    :class:`~noisycal.engines.results.AnnotatorFit`; ``influence`` is the sandwich of the
    marginal likelihood on the channels for an EM fit
    (:func:`noisycal.engines.em.ci_influence.classifier_informed_influence`) and the posterior
    influence from the draws for a NUTS fit, so the default NC-ECE interval of a
    corrected target carries the channel error; ``refit`` reruns this model's EM under
    item weights for an EM fit (so ``interval=nc.intervals.Refit()`` of a corrected
    target applies; a NUTS fit is refused, ``NotOffered``), ``predict`` scores fitted
    items only. A NUTS
    fit reports posterior means (``scale``, ``bias``, ``confusion``; ``item_prior`` and
    ``item_posterior`` averaged over the draws) and keeps the draws in ``draws``
    (``prevalence``, each draw's mean item prior, ``confusion``, ``scale`` and ``bias``;
    chains and samples merged).
    """

    scale: float = float("nan")
    bias: np.ndarray | None = None
    item_prior: np.ndarray | None = None
    score_probs: np.ndarray | None = None

    # ------------------------------------------------------------------ quality
    @property
    def label_quality(self) -> pd.DataFrame:
        """Per item: the majority label (ties: the lowest class index) and the posterior
        probability that it is the true class.

        Returns
        -------
        DataFrame
            Indexed by item id; columns ``label`` (a class label) and ``quality``.
        """
        vote = np.asarray(self.annotations.majority_vote(tie="lowest"))
        q = self.item_posterior[np.arange(self.n_items), vote]  # the fit's own classes
        return pd.DataFrame({"label": np.asarray(self.annotations.classes)[vote],
                             "quality": q}, index=pd.Index(self.items, name="item"))

    @property
    def rating_quality(self) -> pd.DataFrame:
        """Per rating: the posterior probability that the annotator's label is the true
        class.

        Returns
        -------
        DataFrame
            Columns ``item``, ``annotator``, ``label`` and ``quality``, one row per rating
            of the fitted annotations.
        """
        m = self.match(self.annotations)
        q = self.item_posterior[m.item, m.label]
        ann = self.annotations
        arr = ann.engine_arrays()
        return pd.DataFrame({"item": ann.items[arr.item],
                             "annotator": ann.annotators[arr.annotator],
                             "label": ann.classes[arr.label], "quality": q})

    @property
    def annotator_quality(self) -> pd.DataFrame:
        """Per annotator: the accuracy read off the channels, ``sum_k pi_k confusion[j, k,
        k]`` with ``pi`` the prevalence-equivalent, and the number of ratings.

        Returns
        -------
        DataFrame
            Indexed by annotator id; columns ``accuracy`` and ``n_ratings``.
        """
        pi = self.group_prevalence[0]
        acc = np.einsum("k,jkk->j", pi, self.confusion)
        n = np.bincount(self.annotations.engine_arrays().annotator,
                        minlength=len(self.annotators))
        return pd.DataFrame({"accuracy": acc, "n_ratings": n},
                            index=pd.Index(self.annotators, name="annotator"))

    # ------------------------------------------------------------------ overrides
    def influence(self, annotations: Any = None) -> Any:
        """The per-item influence of the fitted items on the channels.

        EM fits: the sandwich of the marginal likelihood given the scores
        (:func:`noisycal.engines.em.ci_influence.classifier_informed_influence`); NUTS
        fits: the posterior influence, as every NUTS fit
        (:meth:`AnnotatorFit.influence`).

        Parameters
        ----------
        annotations : Annotations, optional
            The data the fit was made on, when the fit does not carry them.

        Returns
        -------
        ChannelInfluence

        Raises
        ------
        NotOffered
            Saying why there is none.
        """
        if self.method == "nuts":
            return super().influence(annotations)
        from ..engines.em.ci_influence import classifier_informed_influence

        out = classifier_informed_influence(self, annotations)
        if isinstance(out, str):
            raise NotOffered(out)
        return out

    def refit(self, weights: ArrayLike, *, draw: Callable[..., Any] | None = None,
              statistic: Callable[..., Any] | None = None, args: Any = (),
              progress: bool | str = False) -> ChannelRefits:
        """The channels and the prevalence-equivalent refitted under item weights, one
        refit per row (the contract of :meth:`AnnotatorFit.refit`).

        Each row of ``weights`` weighs the fitted items (``fit.items`` order; a bootstrap
        resample is its multiplicities; the scores go with their items) and this model's
        EM is run again on the fit's ratings and scores with each item's log-likelihood
        weighted: the expected rating counts of the channels' M-step and the prior's
        Newton steps weighted (:func:`noisycal.engines.em.classifier_informed.run_ci_em`),
        under the same ``beta``, iteration limit and tolerance, started from the fitted
        posteriors, scale and bias (the classifier's columns name the classes, so the
        labelling cannot switch). All rows run in one compiled ``lax.map``. Offered by
        EM fits that carry their annotations; a NUTS fit is refused.

        Parameters
        ----------
        weights : array-like of shape (B, n_items) or (n_items,)
            Non-negative item weights, one replicate per row, each with a positive sum;
            with ``draw``, an array of shape (B, ...) of what ``draw`` makes them from.
        draw : callable, optional
            ``draw(x, args) -> (n_items,)``, as in :meth:`AnnotatorFit.refit`.
        statistic : callable, optional
            ``statistic(w, confusion, prevalence, args)``, as in
            :meth:`AnnotatorFit.refit`; ``prevalence`` (K,) is the replicate's
            prevalence-equivalent, the weighted mean of the refitted item priors
            ``sum_i w_i softmax(scale z_i + bias) / sum_i w_i``.
        args : pytree of arrays, default=()
            Passed to ``draw`` and ``statistic``.
        progress : bool or str, default=False
            A progress bar on stderr, one step per refit; a string is its label.

        Returns
        -------
        ChannelRefits
            As :meth:`AnnotatorFit.refit` (``group_prevalence`` (B, 1, K) holds the
            prevalence-equivalent); ``n_patterns`` is the number of items (each item its
            own pattern: the priors differ from item to item).

        Raises
        ------
        NotOffered
            For a NUTS fit, a fit without its annotations, or scores that underflowed
            to 0.
        ValueError
            Naming ``weights``, ``draw`` or ``statistic``.
        """
        import jax
        import jax.numpy as jnp

        from .._util.progress import ProgressBar
        from ..engines.em.classifier_informed import ci_weighted_refits

        refusal = self._refit_refusal()
        if refusal:
            raise NotOffered(refusal)
        with x64():
            W, label, progress = check_refit_inputs(weights, self.n_items, draw, statistic,
                                                    progress)
            beta = self.details.get("prior_beta")
            with ProgressBar(W.shape[0], label, enabled=progress):
                out = ci_weighted_refits(
                    W, self.item_posterior, self.scale, self.bias,
                    _ds_data(self.annotations, None, 1), np.log(self.score_probs), beta,
                    max_iter=int(self.details.get("max_iter", 1000)),
                    tol=float(self.details.get("tol", 1e-8)), draw=draw,
                    statistic=statistic, args=jax.tree.map(jnp.asarray, args),
                    progress=progress)
                out = jax.tree.map(np.asarray, out)
        return refit_result(tuple(out[:6]), weights, draw, self.n_items)

    def _refit_refusal(self) -> str:
        """Why this fit cannot be refitted ('' when it can)."""
        if self.method != "em":
            return ("refit reruns this model's EM under item weights; this fit is "
                    f"{self.model!r} by {self.method!r}")
        if self.annotations is None:
            return "the fit does not carry the annotations it was fitted on"
        if self.score_probs is None or not np.all(np.asarray(self.score_probs) > 0):
            return "some of the fit's classifier probabilities underflowed to 0"
        if not (np.all(np.isfinite(self.confusion)) and np.isfinite(self.scale)
                and np.all(np.isfinite(self.bias))):
            return "the fit has no finite estimates"
        return ""

    def predict(self, annotations: Any, groups: Any = None) -> np.ndarray:
        """P(true class | ratings, score) of fitted items, from other ratings of them.

        Each item keeps its fitted prior ``softmax(a z_i + c)``: a new item has no score
        in this fit, so only items the fit was fitted on are accepted. For a NUTS fit
        this is the plug-in at the posterior means (``item_prior`` and ``confusion``),
        not an average over the draws as ``item_posterior`` is.

        Parameters
        ----------
        annotations : Annotations
            Ratings of fitted items (matched by id; annotators by id, classes by name).
        groups : None
            This model has no groups.

        Returns
        -------
        ndarray of shape (n_items of annotations, K)
            Columns in the fit's class order.

        Raises
        ------
        ValueError
            Naming ``fit`` when the fit has no finite estimates, ``annotations`` for an
            item, annotator or class the fit does not know, ``groups`` when given.
        """
        from noisycal.models.dawid_skene import make_data

        from ..engines.em.classifier_informed import ci_posterior

        check_fit(self, "predict")
        if groups is not None:
            raise ValueError("groups: ClassifierInformedDawidSkene has no item groups")
        if not isinstance(annotations, Annotations):
            raise ValueError("annotations must be a noisycal.Annotations, got "
                             f"{type(annotations).__name__}")
        m = self.match(annotations, items="fitted")
        rows = np.asarray(m.item_index)
        with np.errstate(divide="ignore"):   # a prior that underflowed to 0 rules k out
            log_prior = np.log(self.item_prior[rows])
        with x64():
            data = make_data(m.item, m.channel, m.label, n_items=annotations.n_items,
                             n_annotators=len(self.annotators), n_classes=len(self.classes))
            post, _ = ci_posterior(log_prior, self.confusion, data)
            return np.asarray(post)

    def summary(self, *, level: float = 0.9, loo: bool | None = None) -> Summary:
        """The AnnotatorFit summary (:meth:`AnnotatorFit.summary`) with the prior's
        ``scale`` in the header and a ``prior`` table (the class bias).

        Parameters
        ----------
        level : float, default=0.9
        loo : bool, optional
            EM fit: not offered (True is a ``ValueError`` naming ``loo``). NUTS fit: as
            :meth:`AnnotatorFit.summary`, PSIS-LOO from each item's log-likelihood under
            its own prior.
        """
        base = super().summary(level=level, loo=loo)
        header = {**base.header, "scale": float(self.scale)}
        prior = pd.DataFrame({"bias": self.bias, "prior_mean": self.group_prevalence[0]},
                             index=pd.Index(self.classes, name="class"))
        prior.attrs.update(title="prior", caption="class prior softmax(scale z + bias): "
                           "bias (centred) and the mean prior")
        return Summary(base.title, header, (*base.tables, prior))

    def __repr__(self) -> str:
        status = (f"statuses={self.statuses!r}" if len(self.statuses) > 1
                  else f"status={self.status!r}")
        return (f"ClassifierInformedFit(method={self.method!r}, n_items={self.n_items}, "
                f"scale={self.scale:.4f}, {status}, loglik={self.loglik:.4f})")


class ClassifierInformedDawidSkene(DawidSkene):
    """Dawid–Skene channels with each item's class prior from a fixed classifier.

    Raykar et al. (2010), "Learning From Crowds", with the classifier held fixed: the
    prior of item i is ``softmax(scale * z_i + bias)`` over the K classes, ``z_i`` the
    classifier's log-probabilities (``logits=``, or ``log(probs)``), ``scale > 0`` and
    the class ``bias`` fitted, and every annotator has a confusion matrix as in
    :class:`~noisycal.DawidSkene`. With a good classifier this recovers the true class
    of items the annotators disagree on far better than the annotators alone.

    Parameters
    ----------
    n_classes : int, optional
        K; checked against the annotations' classes when given.
    beta : array-like of shape (K, K) or (n_annotators, K, K), optional
        Dirichlet prior on each confusion row: MAP-EM with pseudo-counts ``beta - 1``,
        as for :class:`~noisycal.DawidSkene` (default: none, maximum likelihood).

    Notes
    -----
    A target built from this fit used the classifier's scores: a calibration metric of
    the same scores against it gets the status ``'circular_target'``. Evaluate a held-out
    classifier, or cross-fit (fit on the other folds' items and build each fold's target
    from its own ratings), so that no item's target used that item's score
    (:mod:`noisycal.annotators.classifier_informed`).

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 300)
    >>> z = 2.0 * np.eye(3)[y] + rng.normal(size=(300, 3))       # a classifier's logits
    >>> conf = np.array([[[.8, .1, .1], [.1, .8, .1], [.1, .1, .8]]] * 3)
    >>> labels = np.stack([[rng.choice(3, p=conf[j, k]) for j in range(3)] for k in y])
    >>> ann = nc.Annotations.from_wide(labels, classes=[0, 1, 2])
    >>> fit = nc.annotators.ClassifierInformedDawidSkene().fit(ann, logits=z)
    >>> fit.status, fit.confusion.shape, bool(fit.scale > 0)
    ('ok', (3, 3, 3), True)
    """

    _model = "classifier_informed"
    _engines = (EM, NUTS)

    def __init__(self, n_classes: int | None = None, *, beta: ArrayLike | None = None
                 ) -> None:
        super().__init__(n_classes, beta=beta)

    def _n_params(self, K: int, J: int, L: int) -> int:
        return K + J * K * (K - 1)   # scale, K - 1 biases, the channels

    def fit(self, annotations: Annotations, *, logits: ArrayLike | None = None,  # noqa: D417
            probs: ArrayLike | None = None, items: ArrayLike | None = None,
            method: EM | NUTS | str | None = None, seed: Seed = 0,
            progress: bool = False) -> ClassifierInformedFit:
        """Fit the channels and the prior's scale and bias by EM or NUTS.

        Parameters
        ----------
        annotations : Annotations
        logits, probs : array-like of shape (n_scored, K), or (n_scored,) for two classes
            The classifier's scores, exactly one of them; columns in the annotations'
            class order (a DataFrame's columns are matched to the classes by label).
            Rows are matched to the annotations' items by id (``items=``, or a pandas
            index); without ids there must be one row per annotated item, in the
            annotations' item order. Every rated item needs a score and every scored
            item a rating. Probabilities must be positive (a zero would rule a class
            out whatever the annotators say: give logits).
        items : array-like of shape (n_scored,), optional
            Item ids of the score rows.
        method : EM or NUTS object, or {'em', 'nuts'}, optional
            EM (default): ``max_iter`` and ``tol`` apply; its starts are the soft vote
            and the classifier's probabilities (the better end point is kept; one start
            with ``n_starts=1``; ``n_starts`` other than 1, 2 or the default is a
            ``ValueError``). Any other EM field set away from its default (``init``,
            ``n_boot``, ``screen_gaps``, ``weak_threshold``, ``devices``) is a
            ``ValueError`` naming ``method`` and the field. NUTS: the NumPyro model
            :func:`models.classifier_informed.classifier_informed` (``log scale ~
            Normal(0, 1)``, ``bias ~ Normal(0, 1)``, the confusion rows Dirichlet with
            ``beta``, default the Stan User's Guide prior), every chain started at the
            MAP-EM estimate under the same ``beta``; rerun with longer chains as
            ``NUTS.extend`` says.
        seed : int or jax key, default=0
            The NUTS chains; checked for EM (deterministic).
        progress : bool, default=False
            EM: a bar of EM iterations per start; NUTS: a bar of transitions.

        Returns
        -------
        ClassifierInformedFit
            With the statuses of a Dawid–Skene EM fit (the data design, non-convergence,
            a prevalence-equivalent on the boundary, adversarial or degenerate
            channels); the identification check is not run
            (``details['identification']``). A NUTS fit: 'not_converged' when the
            largest R-hat of the channels, scale and bias exceeds the engine's
            ``rhat_threshold`` or a transition diverged, 'diagnostics_unavailable'
            without R-hat (the one NUTS rule,
            :func:`noisycal.engines.density.dawid_skene.chain_status`); its draws are not
            relabelled (the classifier's columns name the classes).

        Raises
        ------
        ValueError
            Naming the argument: ``logits``/``probs`` (both or neither, shape, values),
            ``items`` (ids that do not match the annotations' items), ``method`` (another
            engine, or an EM field this model does not read).
        """
        engine = as_method(method, self._engines, where=type(self).__name__)
        if engine.name == "em":
            _check_engine(engine)
        seed = check_seed(seed)
        progress = check_progress(progress)
        ann, _, _ = self._check(annotations, None)
        K = ann.n_classes
        check_fit_size(ann, engine)
        _, beta = self._priors(K, ann.n_annotators, engine.name)
        P, Z = _scores(ann, probs, logits, items)
        if engine.name == "nuts":   # rerun with longer chains until it converges
            return extended_fit(lambda nuts: self._fit_ci_nuts(
                ann, P, Z, beta, nuts, seed=seed, progress=progress), engine)
        return self._fit_ci(ann, P, Z, beta, engine, progress=progress)

    def _fit_ci_nuts(self, ann: Annotations, P: np.ndarray, Z: np.ndarray, beta: np.ndarray,
                     nuts: NUTS, *, seed: Seed, progress: bool) -> ClassifierInformedFit:
        from ..engines.density.classifier_informed import (
            ci_chain_diagnostics,
            item_loglik,
            prior_posterior,
            replicate_ratings,
            sample_classifier_informed,
        )

        # every chain starts at the MAP-EM estimate under the same channel prior
        em = self._fit_ci(ann, P, Z, beta, EM(max_iter=1000, tol=1e-8), quiet=True)
        conf = np.clip(em.confusion, 1e-4, None)
        init = {"scale": np.asarray(max(em.scale, 1e-3)), "bias": np.asarray(em.bias),
                "confusion": conf / conf.sum(-1, keepdims=True)}
        with x64():
            data = _ds_data(ann, None, 1)
        nd = sample_classifier_informed(data, Z, beta, init, seed=seed,
                                        progress_bar=progress, **nuts.sampler())
        diag = ci_chain_diagnostics(nd)
        K, J = ann.n_classes, ann.n_annotators
        conf_d, bias_d = nd.confusion.reshape(-1, J, K, K), nd.bias.reshape(-1, K)
        conf_m = conf_d.mean(0)
        status, message, chan, statuses = self._nuts_status(ann, 1, diag, nuts, conf_m,
                                                            nd.post)
        prev = nd.item_prior.mean(axis=0, keepdims=True)
        details = {"chains": nuts.num_chains, "max_rhat": diag["max_rhat"],
                   "min_ess_bulk": diag["min_ess_bulk"],
                   "num_divergences": diag["num_divergences"], "relabelled_chains": [],
                   "relabelling": "not applied: the prior softmax(scale z + bias) ties each "
                   "latent class to the classifier's column, so the classes cannot switch",
                   "groups": 1, "gold": False, "prior_beta": beta, "channels": chan,
                   "sample_stats": nd.sample_stats,
                   "arviz": {"log_likelihood": item_loglik, "replicate": replicate_ratings,
                             "posterior": prior_posterior}, "em_start": {
                       "scale": em.scale, "bias": em.bias, "loglik": em.loglik},
                   "identification": {"checked": False, "reason": NUTS_NOTE}}
        return ClassifierInformedFit(
            self._model, "nuts", ann.classes, ann.annotators, ann.items, prev, conf_m,
            nd.post, nd.loglik, self._n_params(K, J, 1), status, message, status == "ok",
            nuts.num_warmup + nuts.num_samples,
            {"prevalence": nd.prevalence.reshape(-1, 1, K), "confusion": conf_d,
             "scale": nd.scale.ravel(), "bias": bias_d}, details,
            annotations=ann, engine=nuts, statuses=statuses, scale=float(nd.scale.mean()),
            bias=bias_d.mean(0), item_prior=nd.item_prior, score_probs=P)

    def _fit_ci(self, ann: Annotations, P: np.ndarray, Z: np.ndarray,
                beta: np.ndarray | None, em: EM, *, quiet: bool = False,
                progress: bool = False) -> ClassifierInformedFit:
        from noisycal.models.classifier_informed import class_log_prior

        from ..engines.em.classifier_informed import fit_ci_em

        starts = [ann.soft_labels(), P][:1 if em.n_starts == 1 else 2]
        with x64():
            data = _ds_data(ann, None, 1)
            runs = [fit_ci_em(s, data, Z, beta, max_iter=em.max_iter, tol=em.tol,
                              progress=progress) for s in starts]
            best = int(np.argmax([r.objective if np.isfinite(r.objective) else -np.inf
                                  for r in runs]))
            st = runs[best]
            prior = np.asarray(class_log_prior({"scale": st.scale, "bias": st.bias}, Z))
        prior = np.exp(prior)
        prev = prior.mean(axis=0, keepdims=True)
        status, message, chan, seen = self._status(ann, prev, st.confusion, st.post,
                                                   st.converged, 1)
        seen.append((status, message))
        if not quiet:   # (quiet: the start of a NUTS fit, whose own status is reported)
            self._warn("EM", status, message)
        status, message, statuses = every_status(status, message, *seen)
        details = {"start_objectives": np.array([r.objective for r in runs]),
                   "best_start": best, "max_iter": em.max_iter, "tol": em.tol,
                   "map": beta is not None, "prior_beta": beta, "groups": 1,
                   "channels": chan, "gold": False,
                   "identification": {"checked": False, "reason": "not implemented for "
                                      "the classifier-informed model"}}
        return ClassifierInformedFit(
            self._model, "em", ann.classes, ann.annotators, ann.items, prev, st.confusion,
            st.post, st.loglik, self._n_params(ann.n_classes, ann.n_annotators, 1),
            status, message, st.converged, st.n_iter, None, details, annotations=ann,
            engine=em, statuses=statuses, scale=st.scale, bias=st.bias, item_prior=prior,
            score_probs=P)


#: The EM fields this model reads (``n_starts`` only as 1, 2 or the default: its starts
#: are the soft vote and the classifier's probabilities).
_EM_FIELDS = ("max_iter", "tol", "n_starts")


def _check_engine(em: EM) -> None:
    """Refuse the EM settings this model does not read (ValueError naming method and the
    field)."""
    default = EM()
    for f in dataclasses.fields(EM):
        value = getattr(em, f.name)
        if f.name not in _EM_FIELDS and value != getattr(default, f.name):
            raise ValueError(f"method: ClassifierInformedDawidSkene's EM reads only max_iter, "
                             f"tol and n_starts; {f.name}={value!r} does not apply (its "
                             "starts are the soft vote and the classifier's probabilities, "
                             "no bootstrap, no identification check)")
    if em.n_starts not in (1, 2, default.n_starts):
        raise ValueError(f"method: ClassifierInformedDawidSkene's EM has two starts (the soft "
                         f"vote and the classifier's probabilities); n_starts={em.n_starts!r} "
                         "does not apply: give 1 (the soft vote) or 2 (the default)")


def _scores(ann: Annotations, probs: Any, logits: Any, items: Any
            ) -> tuple[np.ndarray, np.ndarray]:
    """The classifier's probabilities and log-probabilities (n_items, K), rows in the
    annotations' item order (matched by id when the scores have ids)."""
    name = "probs" if probs is not None else "logits"
    if probs is not None and logits is not None or probs is None and logits is None:
        raise ValueError("give exactly one of probs= or logits= (the classifier's scores; "
                         "they are never guessed)")
    x = probs if probs is not None else logits
    if hasattr(x, "columns"):
        x = match_columns(x, ann.classes, name)
    ids = prediction_items(*((x, None) if probs is not None else (None, x)), items)
    P, logP, _ = predictions(*((x, None) if probs is not None else (None, x)))
    K = ann.n_classes
    if P.shape[1] != K:
        raise ValueError(f"{name} must have {K} columns (the annotations' classes "
                         f"{list(ann.classes)}), got shape {P.shape}")
    if not np.all(np.isfinite(logP)):
        raise ValueError(f"{name}: some probabilities are 0; the prior softmax(a log p + c) "
                         "would rule those classes out whatever the annotators say; give "
                         "logits= (finite)")
    if ids is None:
        if P.shape[0] != ann.n_items:
            raise ValueError(f"{name} must have one row per annotated item ({ann.n_items}, "
                             f"in the annotations' item order), got {P.shape[0]}; or give "
                             "items= to match rows by id")
        return P, logP
    want = np.asarray(ann.items)
    rows = positions(want, ids)   # each rated item's score row
    if np.any(rows < 0):
        missing = want[rows < 0]
        raise ValueError(f"items: {missing.size} rated item(s) have no score row, e.g. "
                         f"{missing[:3].tolist()}")
    if len(ids) != len(want):
        extra = np.asarray(ids)[positions(ids, want) < 0]
        raise ValueError(f"{name}: {extra.size} scored item(s) have no ratings, e.g. "
                         f"{extra[:3].tolist()}; give the scores of the rated items only")
    return P[rows], logP[rows]
