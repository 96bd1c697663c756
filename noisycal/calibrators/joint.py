"""The auxiliary Joint map: score-bin prevalences of the joint score-bin EM.

Paper 003, spec section 5.4: ``g_Joint(z) = mu_hat_{g(z)}``, the fitted prevalence of the
joint score-bin EM group (spec section 3.7) that contains the score ``z``. The groups are
``n_bins`` equal-width bins of the original score; a grouped Dawid–Skene model with shared
binary channels ``(a_j, b_j)`` and one prevalence ``mu_g`` per non-empty bin is fitted to
the annotations, and empty bins get the overall fitted posterior mean ``(1/n) sum_i tau_i``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._typing import ArrayLike, Seed
from .._validation import check_array, check_choice, check_int
from .._warnings import ConvergenceWarning, IdentifiabilityWarning, NoisycalWarning
from ..data import Annotations
from ..metrics.binning import equal_width_bins
from .scaling import _Base

__all__ = ["JointMap"]


def _check_scores(probs: ArrayLike) -> np.ndarray:
    z = check_array(probs, "probs", ndim=1)
    if z.shape[0] < 1:
        raise ValueError("probs must contain at least one score, got shape (0,)")
    if np.any((z < 0) | (z > 1)):
        raise ValueError(f"probs must lie in [0, 1], got values in [{z.min():g}, {z.max():g}]")
    return z


def _as_annotations(annotations: object) -> Annotations:
    """An Annotations object, or one built from an (n, J) 0/1 wide matrix (-1 = missing)."""
    if isinstance(annotations, Annotations):
        ann = annotations
    else:
        try:
            m = np.asarray(annotations)
        except Exception as exc:  # pragma: no cover - exotic inputs
            raise ValueError(f"annotations could not be converted to an array: {exc}") from exc
        if m.ndim != 2 or m.dtype.kind not in "biuf":
            raise ValueError("annotations must be a noisycal.Annotations or a numeric "
                             "(n_items, n_annotators) matrix of 0/1 labels with -1 for "
                             f"missing; got {type(annotations).__name__} of shape {m.shape}")
        try:
            ann = Annotations.from_wide(m.astype(np.int64) if m.dtype.kind == "b" else m,
                                        missing=-1, classes=[0, 1])
        except ValueError as exc:
            raise ValueError(f"annotations (wide 0/1 matrix, -1 = missing): {exc}") from exc
    if ann.n_classes != 2:
        raise ValueError(f"annotations must be binary (2 classes); got {ann.n_classes} "
                         f"classes {list(ann.classes)}")
    if ann.n_annotators < 2:
        raise ValueError("annotations must have at least 2 annotators: with one annotator "
                         "the shared channel and the bin prevalences are not identified, "
                         f"got {ann.n_annotators}")
    return ann


class JointMap(_Base):
    r"""Auxiliary Joint map: the bin prevalences of the joint score-bin EM.

    Paper 003, spec section 5.4 (the fit is section 3.7).
    :math:`g_{\mathrm{Joint}}(z) = \hat\mu_{g(z)}`, where :math:`g(z)` is the
    equal-width score bin containing ``z``. The model is a grouped Dawid–Skene with
    shared binary channels,

    .. math:: p_\theta(s \mid g) = \mu_g \prod_j b_j^{s_j}(1-b_j)^{1-s_j}
              + (1-\mu_g) \prod_j a_j^{s_j}(1-a_j)^{1-s_j},

    with one prevalence :math:`\mu_g` per *non-empty* bin. It is fitted by EM
    (:class:`~noisycal.GroupedDawidSkene` with ``channels='shared'``).
    Empty bins get the overall fitted posterior mean :math:`(1/n)\sum_i \tau_i`.
    Binary only. Unlike the other recalibrators it needs no target: it is fitted to the
    annotations themselves.

    Parameters
    ----------
    n_bins : int, default=10
        Number J of equal-width bins on the score (the tabular setting; the CIFAR
        setting uses 5).
    n_starts : int, default=10
        EM starts (the first from the soft vote, the others random); the largest
        log-likelihood wins.
    max_iter : int, default=1000
        EM iteration limit per start.
    tol : float, default=1e-8
        EM stops when the mean log-likelihood per item changes by less than ``tol``.
    random_state : int or jax key, default=0
        Seed of the random EM starts (scikit-learn's name, as for every recalibrator).
    orientation : {'anchor', 'vote'}, default='anchor'
        How the latent class is named: annotator ``anchor`` has a positive gap
        ``b_j - a_j > 0`` (spec section 3.6), or the latent classes are matched to the
        majority vote.
    anchor : int, default=0
        Position of the anchor annotator in ``annotations.annotators`` (sorted ids).

    Attributes
    ----------
    values_ : ndarray of shape (n_bins,)
        The map's value in each bin: the fitted prevalence ``mu_g`` of a non-empty bin,
        ``fallback_`` for an empty one.
    counts_ : ndarray of shape (n_bins,)
        Fitting items in each bin.
    fallback_ : float
        The overall fitted posterior mean ``(1/n) sum_i tau_i``, ``tau_i = P(Y=1 | A_i, G_i)``.
    fit_ : AnnotatorFit
        The grouped Dawid–Skene fit; its ``group_prevalence`` rows are the non-empty bins in
        increasing order.
    status_ : str
        ``fit_.status`` (``'ok'``, ``'not_converged'``, ``'small_gap'``, ``'nonfinite'``,
        ``'boundary'``), or ``'not_identified'`` (two annotators and a single non-empty
        bin).
    objective_ : float
        The spec's objective ``L_n``: the maximised log-likelihood per item,
        ``fit_.loglik / n``.

    Warns
    -----
    ConvergenceWarning
        When the selected EM start stopped at ``max_iter`` before meeting ``tol``.
    IdentifiabilityWarning
        When the fit is otherwise not accepted: an annotator gap ``|b_j - a_j| <= 1e-4``,
        non-finite estimates, a boundary prevalence, or a non-identified design.

    Notes
    -----
    Choices where the spec is silent (gaps, spec section 8), all documented here:

    - Bin edges are those of :class:`HistogramBinning`
      (:func:`noisycal.metrics.binning.equal_width_bins`).
    - Items are aligned by position: ``probs[i]`` is the score of ``annotations.items[i]``
      (the sorted item ids; for a wide matrix, row ``i``).
    - The positive class is ``annotations.classes[1]``, the larger of the two sorted labels.
    - Start selection and acceptance follow the tabular rule of spec section 3.7: every
      start is oriented by the anchor's gap and screened (every gap > 1e-4;
      ``screen_gaps=True`` of :meth:`~noisycal.DawidSkene.fit`), the largest
      log-likelihood among the screened starts is selected, and that start alone is
      checked for convergence and its gaps. A fit that is not accepted is kept and
      used, with ``status_`` set and a warning; it is never silently accepted.
    - When only one bin is non-empty, the grouped model has one group and is the marginal
      Dawid–Skene (:class:`~noisycal.DawidSkene`), which is fitted instead.
    - Two annotators identify the channels only together with two separated non-empty bins
      (spec section 3.7, identification (a)); with two annotators and a single non-empty
      bin the fit is flagged ``'not_identified'``. One annotator is refused.

    References
    ----------
    Spec of paper 003 ("Noisy-label calibration with multiple unreliable labels"),
    sections 3.6, 3.7, 5.4 and 8.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> t = nc.simulate.gaussian_toy(4000, seed=0)
    >>> jm = nc.calibrators.JointMap(n_bins=5).fit(probs=t.z, annotations=t.annotations)
    >>> jm.values_.shape, jm.status_
    ((5,), 'ok')
    """

    _param_names = ("n_bins", "n_starts", "max_iter", "tol", "random_state", "orientation",
                    "anchor")

    def __init__(self, *, n_bins: int = 10, n_starts: int = 10, max_iter: int = 1000,
                 tol: float = 1e-8, random_state: Seed = 0, orientation: str = "anchor",
                 anchor: int = 0) -> None:
        self.n_bins = n_bins
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.orientation = orientation
        self.anchor = anchor

    def fit(self, *, probs: ArrayLike, annotations: Annotations | ArrayLike) -> JointMap:
        """Fit the joint score-bin EM and store the bin prevalences.

        Parameters
        ----------
        probs : array-like of shape (n_items,)
            Scores in [0, 1] of the fitting items.
        annotations : Annotations or array-like of shape (n_items, n_annotators)
            Binary ratings of the same items: an :class:`~noisycal.Annotations` with two
            classes whose ``items[i]`` is the item scored ``probs[i]``, or a wide matrix of
            0/1 labels with ``-1`` for a missing rating (row ``i`` is item ``i``).

        Returns
        -------
        self : JointMap

        Raises
        ------
        ValueError
            If ``probs`` is not 1-D in [0, 1], ``annotations`` is not binary, has fewer
            than 2 annotators or a different number of items than ``probs``, or a
            parameter is invalid.
        """
        J = check_int(self.n_bins, "n_bins", minimum=1)
        check_choice(self.orientation, "orientation", ("anchor", "vote"))
        z = _check_scores(probs)
        ann = _as_annotations(annotations)
        if ann.n_items != z.shape[0]:
            raise ValueError(f"annotations must cover the items of probs: annotations have "
                             f"{ann.n_items} items, probs has {z.shape[0]} scores")
        bins = equal_width_bins(z, J)
        counts = np.bincount(bins, minlength=J)
        nonempty = np.flatnonzero(counts)
        kwargs = dict(method="em", n_starts=self.n_starts, max_iter=self.max_iter,
                      tol=self.tol, seed=self.random_state, orientation=self.orientation,
                      anchor=self.anchor, screen_gaps=True)
        from ..annotators import DawidSkene, GroupedDawidSkene

        # The engine warns about a rejected fit itself; collect its warnings and report the
        # status once, from here, pointing at the caller.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if nonempty.size >= 2:
                fit = GroupedDawidSkene(2, channels="shared").fit(ann, groups=bins, **kwargs)
            else:
                fit = DawidSkene(2).fit(ann, **kwargs)
        for w in caught:
            if not issubclass(w.category, NoisycalWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

        status, message = fit.status, fit.message
        if status == "ok" and nonempty.size < 2 and ann.n_annotators < 3:
            status = "not_identified"
            message = ("two annotators and a single non-empty score bin: the shared channels "
                       "and the prevalence are not identified (spec section 3.7)")
        if status != "ok":
            category = ConvergenceWarning if status == "not_converged" else \
                IdentifiabilityWarning
            warnings.warn(f"JointMap: the joint score-bin EM fit is not accepted "
                          f"(status {status!r}): {message}", category, stacklevel=2)

        tau = np.asarray(fit.item_posterior)[:, 1]
        fallback = float(np.mean(tau))
        values = np.full(J, fallback)
        values[nonempty] = np.asarray(fit.group_prevalence)[:, 1]
        self.values_ = values
        self.counts_ = counts
        self.fallback_ = fallback
        self.fit_ = fit
        self.status_ = status
        self.objective_ = float(fit.loglik) / z.shape[0]
        return self

    def predict_proba(self, *, probs: ArrayLike | None = None,
                      logits: ArrayLike | None = None) -> np.ndarray:
        """The map's value at each score: ``values_`` of the score's bin.

        Parameters
        ----------
        probs : array-like of shape (n,)
            Scores in [0, 1].
        logits : None
            Not accepted (the bins are on the probability scale); present to give a
            clear error.

        Returns
        -------
        ndarray of shape (n,)
        """
        self._check_fitted()
        if logits is not None or probs is None:
            raise ValueError("JointMap takes probs= (scores in [0, 1]), not logits=")
        z = _check_scores(probs)
        return self.values_[equal_width_bins(z, len(self.values_))]
