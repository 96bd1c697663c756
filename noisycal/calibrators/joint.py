"""The auxiliary Joint map: score-bin prevalences of the joint score-bin EM.

``g_Joint(z) = mu_hat_{g(z)}``, the fitted prevalence of the joint score-bin EM group
that contains the score ``z`` ("Noisy-Label Calibration with Multiple Unreliable Labels",
Section 5 and Appendix G.3). The groups are ``n_bins`` equal-width bins of the original
score; a grouped Dawid–Skene model with shared binary channels ``(a_j, b_j)`` and one
prevalence ``mu_g`` per non-empty bin is fitted to the annotations, and empty bins get the
overall fitted posterior mean ``(1/n) sum_i tau_i``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._util.types import ArrayLike, Seed
from .._util.validation import check_choice, check_int, check_n_bins, check_real, check_seed
from ..annotations.core import Annotations
from ..annotators import DawidSkene, GroupedDawidSkene
from ..engines.methods import EM
from ..exceptions import ConvergenceWarning, IdentifiabilityWarning, NoisycalWarning
from ..metrics.binned.bins import equal_width_bins
from ._base import check_alignment, check_unit_scores
from .binning import _BinnedMap

__all__ = ["JointMap"]


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


class JointMap(_BinnedMap):
    r"""Auxiliary Joint map: the bin prevalences of the joint score-bin EM.

    :math:`g_{\mathrm{Joint}}(z) = \hat\mu_{g(z)}`, where :math:`g(z)` is the
    equal-width score bin containing ``z`` ("Noisy-Label Calibration with Multiple
    Unreliable Labels", Section 5; the joint score-bin EM is its Appendix G.3). The model
    is a grouped Dawid–Skene (Dawid & Skene, 1979) with shared binary channels,

    .. math:: p_\theta(s \mid g) = \mu_g \prod_j b_j^{s_j}(1-b_j)^{1-s_j}
              + (1-\mu_g) \prod_j a_j^{s_j}(1-a_j)^{1-s_j},

    with one prevalence :math:`\mu_g` per *non-empty* bin. It is fitted by EM
    (:class:`~noisycal.GroupedDawidSkene` with ``channels='shared'``).
    Empty bins get the overall fitted posterior mean :math:`(1/n)\sum_i \tau_i`.
    Binary only.

    Unlike the other recalibrators, :meth:`fit` takes ``annotations=`` instead of
    ``target=``: the map is fitted to the raw ratings themselves (it estimates the
    channels and the bin prevalences jointly), not to a target matrix built beforehand,
    and ``target=`` always means such a matrix in noisycal.

    Parameters
    ----------
    n_bins : int, default=10
        Number J of equal-width bins on the score (the paper's tabular setting; its
        image-annotation setting uses 5); at most 10 per fitting item.
    n_starts : int, default=10
        EM starts (the first from the soft vote, the others random); the largest
        log-likelihood wins.
    max_iter : int, default=1000
        EM iteration limit per start.
    tol : float, default=1e-8
        EM stops when the mean log-likelihood per item changes by less than ``tol``.
    seed : int or jax key, default=0
        Seed of the random EM starts.
    orientation : {'anchor', 'vote'}, default='anchor'
        How the latent class is named: annotator ``anchor`` has a positive gap
        ``b_j - a_j > 0``, or the latent classes are matched to the majority vote.
    anchor : int, default=0
        Position of the anchor annotator in ``annotations.annotators``; with
        ``orientation='vote'`` it must stay 0 (the starts are then screened by the first
        annotator's gap).

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
    message_ : str
        What the status means for this fit (``''`` when ok).
    objective_ : float
        The maximised log-likelihood per item, ``fit_.loglik / n``.

    Warns
    -----
    ConvergenceWarning
        When the selected EM start stopped at ``max_iter`` before meeting ``tol``.
    IdentifiabilityWarning
        When the fit is otherwise not accepted: an annotator gap ``|b_j - a_j| <= 1e-4``,
        non-finite estimates, a boundary prevalence, or a non-identified design.

    Notes
    -----
    Choices where the paper is silent, all documented here:

    - Bin edges are those of :class:`HistogramBinning`
      (:func:`noisycal.metrics.binned.bins.equal_width_bins`).
    - Items are aligned by position: ``probs[i]`` is the score of ``annotations.items[i]``
      (for a wide matrix, row ``i``); a pandas ``probs`` with an index other than the
      default ``RangeIndex`` must list ``annotations.items`` in that order.
    - The positive class is ``annotations.classes[1]``.
    - Start selection and acceptance follow the paper's tabular rule (Appendix G.3):
      every start is oriented by the anchor's gap and screened (every gap > 1e-4;
      ``screen_gaps=True`` of :meth:`~noisycal.DawidSkene.fit`), the largest
      log-likelihood among the screened starts is selected, and that start alone is
      checked for convergence and its gaps. A fit that is not accepted is kept and
      used, with ``status_`` set and a warning; it is never silently accepted.
    - When only one bin is non-empty, the grouped model has one group and is the marginal
      Dawid–Skene (:class:`~noisycal.DawidSkene`), which is fitted instead.
    - Two annotators identify the channels only together with two separated non-empty bins
      (the paper's Appendix D; three annotators are identified by its Proposition D.2);
      with two annotators and a single non-empty bin the fit is flagged
      ``'not_identified'``. One annotator is refused.

    References
    ----------
    "Noisy-Label Calibration with Multiple Unreliable Labels", Section 5, Appendices D
    and G.3.

    Dawid, A. P. & Skene, A. M. (1979). Maximum likelihood estimation of observer
    error-rates using the EM algorithm. Applied Statistics 28(1), 20-28.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> t = nc.simulate.gaussian_toy(4000, seed=0)
    >>> jm = nc.calibrators.JointMap(n_bins=5).fit(probs=t.z, annotations=t.annotations)
    >>> jm.values_.shape, jm.status_
    ((5,), 'ok')
    """

    _map_name = "JointMap"

    def __init__(self, *, n_bins: int = 10, n_starts: int = 10, max_iter: int = 1000,
                 tol: float = 1e-8, seed: Seed = 0, orientation: str = "anchor",
                 anchor: int = 0) -> None:
        self.n_bins = n_bins
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
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
            than 2 annotators or a different number of items than ``probs`` (or other
            item ids than the index of a pandas ``probs``), or a parameter is invalid.
        """
        J = check_int(self.n_bins, "n_bins", minimum=1)
        check_int(self.n_starts, "n_starts", minimum=1)
        check_int(self.max_iter, "max_iter", minimum=1)
        check_real(self.tol, "tol", minimum=0.0, strict=True)
        check_seed(self.seed)
        check_choice(self.orientation, "orientation", ("anchor", "vote"))
        z = check_unit_scores(probs, "probs")
        check_n_bins(J, z.size)
        ann = _as_annotations(annotations)
        if ann.n_items != z.shape[0]:
            raise ValueError(f"annotations must cover the items of probs: annotations have "
                             f"{ann.n_items} items, probs has {z.shape[0]} scores")
        check_alignment(probs, "probs", ann, "annotations")
        bins = equal_width_bins(z, J)
        counts = np.bincount(bins, minlength=J)
        nonempty = np.flatnonzero(counts)
        fit = self._fit_em(ann, bins, nonempty.size)

        status, message = fit.status, fit.message
        if status == "ok" and nonempty.size < 2 and ann.n_annotators < 3:
            status = "not_identified"
            message = ("two annotators and a single non-empty score bin: the shared channels "
                       "and the prevalence are not identified")
        category = ConvergenceWarning if status == "not_converged" else IdentifiabilityWarning
        self._set_status(status, "" if status == "ok" else
                         f"the joint score-bin EM fit is not accepted: {message}", category)

        tau = np.asarray(fit.item_posterior)[:, 1]
        fallback = float(np.mean(tau))
        values = np.full(J, fallback)
        values[nonempty] = np.asarray(fit.group_prevalence)[:, 1]
        self.values_ = values
        self.counts_ = counts
        self.fallback_ = fallback
        self.fit_ = fit
        self.objective_ = float(fit.loglik) / z.shape[0]
        return self

    def _fit_em(self, ann: Annotations, bins: np.ndarray, n_nonempty: int) -> object:
        """The grouped (or, with one non-empty bin, marginal) shared-channel EM fit."""
        anchor = check_int(self.anchor, "anchor", minimum=0)
        if anchor >= ann.n_annotators:
            raise ValueError(f"anchor must index an annotator (0..{ann.n_annotators - 1}), "
                             f"got {anchor}")
        if self.orientation == "vote" and anchor != 0:
            raise ValueError("anchor applies only with orientation='anchor' (with 'vote' the "
                             f"starts are screened by the first annotator's gap), got {anchor}")
        kwargs = dict(method=EM(n_starts=self.n_starts, max_iter=self.max_iter, tol=self.tol,
                                screen_gaps=True), seed=self.seed,
                      anchor=ann.annotators[anchor] if self.orientation == "anchor" else None)
        # The engine warns about a rejected fit itself; collect its warnings and report the
        # status once, from fit, pointing at the caller.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if n_nonempty >= 2:
                fit = GroupedDawidSkene(2, channels="shared").fit(ann, groups=bins, **kwargs)
            else:
                fit = DawidSkene(2).fit(ann, **kwargs)
        for w in caught:
            if not issubclass(w.category, NoisycalWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return fit
