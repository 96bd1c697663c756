"""Set-size plots of conformal prediction sets and heatmaps of annotator channels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.types import ArrayLike
from ._layout import check_ax, check_title, set_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["set_size_plot", "confusion_heatmap", "set_sizes"]

#: Most panels :func:`confusion_heatmap` draws unless ``annotators=`` picks them.
MAX_PANELS = 24


def _check_sets(sets: ArrayLike) -> np.ndarray:
    arr = np.asarray(sets)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"sets must be a boolean matrix of shape (n_items, n_classes), got "
                         f"shape {arr.shape}")
    if arr.dtype.kind != "b":
        if arr.dtype.kind not in "iuf" or not np.all(np.isin(arr, (0, 1))):
            raise ValueError("sets must be boolean (True: the class is in the item's set), "
                             f"or 0/1; got dtype {arr.dtype}")
        arr = arr.astype(bool)
    return arr


def set_sizes(sets: ArrayLike) -> np.ndarray:
    """The size of every prediction set: the number of True entries in each row.

    Parameters
    ----------
    sets : array-like of bool, shape (n_items, n_classes)

    Returns
    -------
    ndarray of int, shape (n_items,)
    """
    return _check_sets(sets).sum(axis=1)


def set_size_plot(sets: ArrayLike, *, labels: ArrayLike | None = None,
                  ax: Axes | None = None, title: str | None = None) -> Axes:
    """Histogram of the sizes of conformal prediction sets.

    One bar per size 0..n_classes with the share of items whose set has that size; with
    ``labels``, each bar is split into the sets that contain the item's label and those
    that miss it, so the coverage at every size can be read off.

    Parameters
    ----------
    sets : array-like of bool, shape (n_items, n_classes)
        ``sets[i, k]``: class k is in item i's set (as from
        :meth:`noisycal.calibrators.SplitConformal.predict_sets`); 0/1 integers are
        accepted.
    labels : array-like of int, shape (n_items,), optional
        Class indices of the items' labels.
    ax : matplotlib.axes.Axes, optional
        Axes to draw in; default a new figure.
    title : str, optional
        Default: the number of sets, their mean size, the share of empty sets and, with
        ``labels``, the coverage. ``''`` for none.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        If ``sets`` is not a boolean (or 0/1) matrix, ``labels`` are not class indices
        of the right length, or ``ax``/``title`` has the wrong type.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> sets = np.array([[True, False, False], [True, True, False], [False, False, False]])
    >>> ax = nc.plots.set_size_plot(sets)
    >>> [round(p.get_height(), 4) for p in ax.patches]   # shares of sizes 0, 1, 2, 3
    [0.3333, 0.3333, 0.3333, 0.0]
    """
    arr = _check_sets(sets)
    check_ax(ax)
    check_title(title)
    n, K = arr.shape
    size = arr.sum(axis=1)
    hit = None
    if labels is not None:
        y = np.asarray(labels)
        if y.shape != (n,) or y.dtype.kind not in "iu" or np.any((y < 0) | (y >= K)):
            raise ValueError(f"labels must be {n} class indices in 0..{K - 1}, got shape "
                             f"{y.shape} and dtype {y.dtype}")
        hit = arr[np.arange(n), y]
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5.0, 3.8), layout="constrained")
    sizes = np.arange(K + 1)
    share = np.bincount(size, minlength=K + 1) / n
    if hit is None:
        ax.bar(sizes, share, width=0.8, color="C0", alpha=0.7, label="sets")
    else:
        covered = np.bincount(size[hit], minlength=K + 1) / n
        ax.bar(sizes, covered, width=0.8, color="C0", alpha=0.75, label="contains the label")
        ax.bar(sizes, share - covered, width=0.8, bottom=covered, color="C3", alpha=0.55,
               label="misses the label")
        ax.legend(fontsize="small", frameon=False)
    ax.set_xticks(sizes)
    ax.set_xlabel("set size (classes in the set)")
    ax.set_ylabel("share of items")
    default = f"{n} sets: mean size {size.mean():.3g}, {np.mean(size == 0):.1%} empty"
    if hit is not None:
        default += f", coverage {hit.mean():.3f}"
    set_title(ax, default if title is None else title)
    return ax


def _channels(fit: Any) -> tuple[np.ndarray, list, list]:
    """The confusion matrices (J, K, K), annotator ids and class labels of ``fit``."""
    if hasattr(fit, "confusion"):
        conf = np.asarray(fit.confusion, dtype=np.float64)
        ids = list(np.asarray(getattr(fit, "annotators", np.arange(conf.shape[0]))).tolist())
        classes = list(np.asarray(getattr(fit, "classes", np.arange(conf.shape[-1]))).tolist())
    else:
        conf = np.asarray(fit, dtype=np.float64)
        conf = conf[None] if conf.ndim == 2 else conf
        ids, classes = list(range(conf.shape[0])), list(range(conf.shape[-1]))
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2] or not np.all(np.isfinite(conf)):
        raise ValueError("fit must be an annotator fit or finite confusion matrices of shape "
                         f"(n_annotators, K, K) or (K, K), got shape {conf.shape}")
    return conf, ids, classes


def _pick(annotators: Any, ids: list) -> list[int]:
    if annotators is None:
        if len(ids) > MAX_PANELS:
            raise ValueError(f"the fit has {len(ids)} annotators; pick at most {MAX_PANELS} "
                             "with annotators= (ids or positions)")
        return list(range(len(ids)))
    chosen = [annotators] if np.ndim(annotators) == 0 else list(annotators)
    out = []
    for a in chosen:
        if a in ids:
            out.append(ids.index(a))
        elif isinstance(a, int | np.integer) and not isinstance(a, bool) \
                and 0 <= int(a) < len(ids):
            out.append(int(a))
        else:
            raise ValueError(f"annotators: {a!r} is neither an annotator id of the fit "
                             f"({ids[:10]}{'...' if len(ids) > 10 else ''}) nor a position "
                             f"below {len(ids)}")
    if not out:
        raise ValueError("annotators must name at least one annotator")
    return out


def confusion_heatmap(fit: Any, *, annotators: Any = None, ax: Axes | None = None,
                      ncols: int = 4) -> np.ndarray:
    """Heatmaps of the confusion matrices of a fitted annotator model, one per annotator.

    Cell (true k, observed m) of annotator j's panel is ``confusion[j, k, m]``, the
    probability that j reports m for an item of class k, printed in the cell; a reliable
    annotator has a dark diagonal.

    Parameters
    ----------
    fit : AnnotatorFit or array-like of shape (n_annotators, K, K) or (K, K)
        A fitted annotator model (:class:`noisycal.DawidSkene` and the others), whose
        annotator ids and class labels label the panels, or the matrices themselves.
    annotators : annotator id, int, or list of them, optional
        Which annotators to draw, by id (``fit.annotators``) or position; default all (at
        most 24).
    ax : matplotlib.axes.Axes, optional
        Axes to draw in when a single annotator is drawn; default a new figure.
    ncols : int, default=4
        Panels per row of a new figure.

    Returns
    -------
    ndarray of matplotlib.axes.Axes, shape (n_panels,)
        One axes per annotator drawn, in the order asked for.

    Raises
    ------
    ValueError
        If ``fit`` has no confusion matrices of shape (n_annotators, K, K), an annotator
        is unknown, ``ax`` is given for more than one panel, or ``ncols`` is not a
        positive integer.

    Examples
    --------
    >>> import numpy as np, noisycal as nc
    >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.3, 0.7]]])
    >>> axes = nc.plots.confusion_heatmap(conf)
    >>> [ax.get_title() for ax in axes]
    ['annotator 0', 'annotator 1']
    """
    conf, ids, classes = _channels(fit)
    chosen = _pick(annotators, ids)
    check_ax(ax)
    if isinstance(ncols, bool) or not isinstance(ncols, int | np.integer) or ncols < 1:
        raise ValueError(f"ncols must be a positive integer, got {ncols!r}")
    if ax is not None and len(chosen) != 1:
        raise ValueError(f"ax holds one panel, but {len(chosen)} annotators are drawn; pick "
                         "one with annotators=, or leave ax=None")
    if ax is None:
        import matplotlib.pyplot as plt

        cols = min(int(ncols), len(chosen))
        rows = -(-len(chosen) // cols)
        fig, grid = plt.subplots(rows, cols, figsize=(2.8 * cols + 0.8, 2.7 * rows),
                                 squeeze=False, layout="constrained")
        for extra in grid.ravel()[len(chosen):]:
            extra.remove()
        panels = grid.ravel()[:len(chosen)]
    else:
        fig, panels = ax.figure, np.array([ax], dtype=object)
    image = None
    for axis, j in zip(panels, chosen, strict=True):
        image = _heatmap(axis, conf[j], classes, f"annotator {ids[j]}")
    fig.colorbar(image, ax=list(panels), shrink=0.8, label="P(observed | true)")
    return np.asarray(panels, dtype=object)


def _heatmap(ax: Axes, mat: np.ndarray, classes: list, title: str) -> Any:
    K = mat.shape[0]
    image = ax.imshow(mat, vmin=0.0, vmax=1.0, cmap="Blues")
    for k in range(K):
        for m in range(K):
            ax.text(m, k, f"{mat[k, m]:.2f}", ha="center", va="center", fontsize="small",
                    color="white" if mat[k, m] > 0.6 else "black")
    labels = [str(c) for c in classes]
    ax.set_xticks(range(K), labels)
    ax.set_yticks(range(K), labels)
    ax.set_xlabel("observed")
    ax.set_ylabel("true")
    ax.set_title(title, fontsize="medium")
    return image
