"""Calibration under ambiguous ground truth.

This package holds the targets and protocol of Tao, Luo, Dong & Xu (2026), "Confidence
Calibration under Ambiguous Ground Truth" (arXiv:2603.22879).

When annotators disagree, the calibration target is the annotator distribution, not
the majority vote. The paper's single-temperature methods are one map, temperature
scaling (:class:`~noisycal.calibrators.TemperatureScaling`, solved exactly in 1/T),
fitted to different targets, so this module builds targets, not calibrators:

==============  ==================================================  =====================
method          target row i                                        constructor
==============  ==================================================  =====================
TS              one-hot voted label e_{y*}                          :func:`voted_from`
SLTS            annotator distribution pi-hat_i (Eq. 3)             :func:`slts`
MCTS (S)        shares of S sampled annotations (Appendix D)        :func:`mcts`
LS-TS           (1 - eps-bar) e_{y*} + eps-bar / K (Eq. 4)          :func:`label_smoothed`
Fixed-LS        eps = 0.1                                           ``rule='fixed'``
Ent-LS          eps_i = H(p-hat_i) / log K                          ``rule='entropy'``
C-LS            eps of the voted class                              ``rule='classwise'``
Oracle          the true distribution (simulations)                 :func:`oracle`
==============  ==================================================  =====================

SoftPlatt, VS and Dirichlet-Soft are :class:`~noisycal.calibrators.PlattScaling`,
:class:`~noisycal.calibrators.VectorScaling` and
:class:`~noisycal.calibrators.MatrixScaling` fitted to :func:`slts`.
:func:`paper_targets` builds every target for one calibration set,
:func:`fit_temperatures` fits TS to each, and :func:`compare_calibrators` runs the paper's
table (true-label ECE, voted ECE, classwise ECE, Brier, NLL, T), and
:func:`posterior_true_label_ece` reports the true-label ECE after a Bayesian map (a NUTS
fit of :class:`~noisycal.annotators.soft_labels.DirichletSoftLabels`) with a credible
interval that carries the map's posterior uncertainty. The paper's simulators
are here too: the ISIC 2019 annotator model (:func:`sample_annotations`,
:data:`ISIC2019_CONFUSION`) and the three-Gaussian toy (:func:`three_gaussians`).

Temperature scaling depends on the target only through
``m = mean_i <t_i, z_i>``, and T decreases in m; so SLTS's T exceeds voted TS's exactly
when ``mean_i (z_{i,y*} - <pi_i, z_i>) > 0`` (our observation; see
:mod:`noisycal.calibrators.scaling.temperature`).
"""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from ._compare import METHODS, compare_calibrators, evaluate_predictions
    from ._maps import posterior_true_label_ece
    from ._simulate import (
        ISIC2019_CLASS_COUNTS,
        ISIC2019_CLASSES,
        ISIC2019_CONFUSION,
        THREE_GAUSSIANS,
        ThreeGaussians,
        sample_annotations,
        three_gaussians,
    )
    from ._targets import (
        LS_RULES,
        fit_temperatures,
        label_smoothed,
        mcts,
        oracle,
        paper_targets,
        slts,
        stratified_split,
        voted_from,
    )

__all__ = [
    "slts",
    "mcts",
    "label_smoothed",
    "oracle",
    "voted_from",
    "LS_RULES",
    "paper_targets",
    "fit_temperatures",
    "stratified_split",
    "compare_calibrators",
    "evaluate_predictions",
    "posterior_true_label_ece",
    "METHODS",
    "sample_annotations",
    "ISIC2019_CLASSES",
    "ISIC2019_CONFUSION",
    "ISIC2019_CLASS_COUNTS",
    "three_gaussians",
    "ThreeGaussians",
    "THREE_GAUSSIANS",
]

__getattr__, __dir__ = attach(__name__, __file__)
