"""User-facing annotator models, statsmodels style: ``Model(...).fit(annotations) -> result``.

- :mod:`noisycal.annotators.dawid_skene`: Dawid–Skene, one-coin and grouped Dawid–Skene.
- :mod:`noisycal.annotators.hierarchical`: hierarchical Dawid–Skene (channels partially
  pooled around a population, NUTS).
- :mod:`noisycal.annotators.channel_models`: class-conditional Dawid–Skene and MACE.
- :mod:`noisycal.annotators.hui_walter`: the Hui–Walter two-annotator, score-group model.
- :mod:`noisycal.annotators.soft_labels`: the Dirichlet-multinomial soft-label model.
- :mod:`noisycal.annotators.noise_check`: :func:`noise_check`, a test of the
  class-conditional noise assumption against channels that vary with a classifier's score;
  :mod:`noisycal.annotators.checks.noise_target`: :func:`with_noise_check`, which puts a
  rejection on a Target, and :func:`checked_target`, which runs the check for a Target.
- :mod:`noisycal.annotators.ppc`: :func:`ppc`, posterior predictive checks (parametric
  bootstrap for EM fits) of Dawid–Skene family fits on agreement discrepancies.
- :mod:`noisycal.annotators.compare`: :func:`compare`, model comparison by leave-one-item-out
  cross-validation (NUTS fits; stacking weights) or AIC/BIC (EM and MLE fits).
- :mod:`noisycal.annotators.item_difficulty`: :class:`ItemDifficultyModel`, annotators'
  logistic ability against each item's difficulty (NUTS).
- :mod:`noisycal.annotators.sbc`: :func:`sbc`, simulation-based calibration of the
  models' NUTS fits (models plug in through ``SBC_MODELS``).
- :mod:`noisycal.annotators.classifier_informed`: :class:`ClassifierInformedDawidSkene`,
  Dawid–Skene channels with each item's class prior from a fixed classifier's scores.
- :mod:`noisycal.annotators.glad`: :class:`GLAD`, annotators' ability times each item's
  easiness (EM), and its fit :class:`GLADFit`.

All inference (EM, gradient MLE/MAP, NUTS, moments and GMM) lives in :mod:`noisycal.engines`;
:func:`moment_triple` (the closed-form three-annotator estimator of
:mod:`noisycal.engines.moments`) is re-exported here because users call it directly.
"""

from typing import TYPE_CHECKING

from .._util.lazy import attach

# the public names, imported on first use (noisycal._util.lazy reads this block)
if TYPE_CHECKING:
    from ..engines.moments import moment_triple
    from .channel_models import MACE, ClassConditionalDawidSkene
    from .checks.compare import ComparisonResult, compare
    from .checks.noise_check import NoiseCheck, noise_check, score_groups
    from .checks.noise_target import checked_target, with_noise_check
    from .checks.ppc import PPCResult, ppc
    from .checks.sbc import SBC_MODELS, SBCResult, SBCSpec, sbc
    from .classifier_informed import ClassifierInformedDawidSkene, ClassifierInformedFit
    from .dawid_skene import DawidSkene, GroupedDawidSkene, OneCoinDawidSkene, predict
    from .glad import GLAD, GLADFit
    from .hierarchical import HierarchicalDawidSkene
    from .hui_walter import HuiWalter, equal_count_groups
    from .item_difficulty import ItemDifficultyModel
    from .soft_labels import DirichletSoftLabels, SoftLabelFit

__all__ = [
    "DawidSkene",
    "OneCoinDawidSkene",
    "GroupedDawidSkene",
    "HierarchicalDawidSkene",
    "ClassConditionalDawidSkene",
    "MACE",
    "HuiWalter",
    "DirichletSoftLabels",
    "SoftLabelFit",
    "equal_count_groups",
    "moment_triple",
    "predict",
    "NoiseCheck",
    "noise_check",
    "score_groups",
    "with_noise_check",
    "checked_target",
    "ppc",
    "PPCResult",
    "compare",
    "ComparisonResult",
    "ItemDifficultyModel",
    "sbc",
    "SBCResult",
    "SBCSpec",
    "SBC_MODELS",
    "ClassifierInformedDawidSkene",
    "ClassifierInformedFit",
    "GLAD",
    "GLADFit",
]

__getattr__, __dir__ = attach(__name__, __file__)
