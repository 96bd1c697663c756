"""What a fitted channel model offers the targets and the metrics built on them.

A corrected or posterior target keeps the fit it was built from
(``target.details['fit']``), and the metrics ask that fit, never the inference engines,
for what the channels' uncertainty needs. :class:`ChannelFit` is that contract, a
structural protocol: every :class:`~noisycal.engines.results.AnnotatorFit` implements it
(without importing it, so the engines need not import the targets):

- the estimates and their ids: ``confusion`` (``[annotator, true, observed]``),
  ``group_prevalence`` and ``prevalence``, ``item_posterior``, ``classes``,
  ``annotators``, ``items``, ``n_items``, ``status`` and ``message``, ``details``, and
  the ``annotations`` it was fitted on;
- ``influence()``: the per-item influence of the fitted items on the free parameters (the
  sandwich pieces behind the delta method of the noise-corrected ECE's default interval),
  a :class:`~noisycal.engines.influence.ChannelInfluence`; its ``parametrisation`` maps
  the free coordinates back to the channels;
- ``refit(weights)``: the channels and prevalences refitted under item weights, one row of
  weights per replicate, all replicates in one compiled loop that can also draw each
  replicate's weights and evaluate a statistic of each refit (the refit bootstrap), a
  :class:`~noisycal.engines.results.ChannelRefits`;
- ``posterior_draws(level)``: the posterior draws of a NUTS fit, refused when too few for
  an equal-tailed interval at ``level``.

What a fit cannot offer (the influence of a hierarchical model, the refit of a NUTS fit,
posterior draws of an EM fit) it refuses with :class:`~noisycal.exceptions.NotOffered`,
whose message says why; a metric turns that into a status or an error naming its own
option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["ChannelFit"]


@runtime_checkable
class ChannelFit(Protocol):
    """What a fitted channel model offers the targets and metrics (see the module doc).

    Every :class:`~noisycal.engines.results.AnnotatorFit` implements it; its methods are
    documented there. A target built from a fit (``target.details['fit']``) hands the
    metrics this object, so the metrics never reach into the inference engines.

    Attributes
    ----------
    model, method : str
        What was fitted, and how (``'em'``, ``'mle'``, ``'nuts'``, ``'mom'``, ``'gmm'``).
    classes, annotators, items : ndarray
        The ids the estimates are indexed by.
    group_prevalence : ndarray of shape (L, K)
    confusion : ndarray of shape (J, K, K)
    item_posterior : ndarray of shape (n_items, K)
    status, message : str
        A fit may also offer ``statuses`` (every status that applies, most severe
        first; an AnnotatorFit does): the targets built from it carry them all, and
        fall back to ``(status,)`` when it has none.
    details : mapping
    annotations : Annotations or None
        The ratings the model was fitted on.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]]] * 3)
    >>> ann = nc.simulate.dawid_skene(200, [0.6, 0.4], conf, seed=0).annotations
    >>> isinstance(nc.DawidSkene(2).fit(ann), nc.targets.ChannelFit)
    True
    """

    model: str
    method: str
    classes: np.ndarray
    annotators: np.ndarray
    items: np.ndarray
    group_prevalence: np.ndarray
    confusion: np.ndarray
    item_posterior: np.ndarray
    status: str
    message: str
    details: Mapping[str, Any]
    annotations: Any

    @property
    def prevalence(self) -> np.ndarray:
        """Class proportions: (K,) for a marginal model, (L, K) for a grouped one."""
        ...  # pragma: no cover - a protocol

    @property
    def n_items(self) -> int:
        """Number of items fitted."""
        ...  # pragma: no cover - a protocol

    def influence(self, annotations: Any = None) -> Any:
        """The per-item influence on the free parameters (a ``ChannelInfluence``);
        ``NotOffered`` when there is none."""
        ...  # pragma: no cover - a protocol

    def refit(self, weights: Any, *, draw: Callable[..., Any] | None = None,
              statistic: Callable[..., Any] | None = None, args: Any = (),
              progress: bool | str = False) -> Any:
        """The channels refitted under each row of item weights (a ``ChannelRefits``);
        ``NotOffered`` when the fit cannot be refitted.

        Parameters
        ----------
        weights : array of shape (B, n_items), or (B, ...) inputs of ``draw``
            Item weights, one replicate per row.
        draw : callable, optional
            ``draw(x, args) -> (n_items,)``: a replicate's weights from its row of
            ``weights``, inside the compiled loop.
        statistic : callable, optional
            ``statistic(w, confusion, prevalence, args)``, evaluated on every refit
            inside the compiled loop.
        args : pytree of arrays, default=()
            Passed to ``draw`` and ``statistic``.
        progress : bool or str, default=False
            A progress bar on stderr (a string: its label).

        Returns
        -------
        ChannelRefits
            See :meth:`noisycal.engines.results.AnnotatorFit.refit`.
        """
        ...  # pragma: no cover - a protocol

    def posterior_draws(self, level: float | None = None) -> Mapping[str, np.ndarray]:
        """The posterior draws, checked for an interval at ``level``; ``NotOffered``
        for a fit without posterior draws."""
        ...  # pragma: no cover - a protocol
