"""Figure plumbing shared by the plots: new figures, axes checks, titles that fit."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["new_axes", "check_ax", "set_title", "check_title"]

#: Average glyph width of the default font, in ems (DejaVu Sans is about 0.55-0.6).
_GLYPH_EM = 0.58
#: The smallest line length (characters) a title is wrapped to.
_MIN_CHARS = 16


def new_axes(show_counts: bool) -> Axes:
    """A new figure with one diagram axes, leaving room below it for a count histogram
    (``show_counts``)."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5.0, 6.0) if show_counts else (5.0, 5.0))
    ax = fig.add_axes((0.15, 0.36, 0.8, 0.54) if show_counts else (0.15, 0.12, 0.8, 0.76))
    ax._noisycal_own_figure = True  # set_title may then move the axes to fit its title
    return ax


def check_ax(ax: object, name: str = "ax") -> None:
    """``ax`` must be None or a matplotlib Axes (ValueError naming the argument)."""
    if ax is None:
        return
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ValueError(f"{name} must be a matplotlib Axes or None, got {type(ax).__name__}")


def check_title(title: object, name: str = "title") -> None:
    """``title`` must be None or a string (ValueError naming the argument)."""
    if title is not None and not isinstance(title, str):
        raise ValueError(f"{name} must be a string or None, got {type(title).__name__}")


def _wrap(title: str, n_chars: int) -> str:
    return "\n".join(textwrap.fill(line, n_chars, break_long_words=False) or line
                     for line in title.split("\n"))


def _renderer(fig: Any) -> Any:
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else None


def set_title(ax: Axes, title: str, fontsize: str = "medium") -> None:
    """Set ``title`` on ``ax`` so that the figure's edges do not cut it.

    A title wider than the figure is wrapped at word boundaries, shorter and shorter
    until it fits (measured with the figure's renderer; without one, wrapped to the
    figure's width at an average glyph width). When the axes is in a figure made by the
    plot itself, it is shortened until the title's top lies inside the figure.
    """
    if not title:
        return
    ax.set_title(title, fontsize=fontsize)
    fig = ax.figure
    renderer = _renderer(fig)
    n_chars = max(len(line) for line in title.split("\n"))
    if renderer is None:
        from matplotlib.font_manager import FontProperties

        size = FontProperties(size=fontsize).get_size_in_points()
        fits = int(fig.get_figwidth() * 72.0 / (_GLYPH_EM * size))
        if n_chars > fits:
            ax.set_title(_wrap(title, max(_MIN_CHARS, fits)), fontsize=fontsize)
        return
    box = ax.title.get_window_extent(renderer)
    while (box.x0 < 0 or box.x1 > fig.bbox.width) and n_chars > _MIN_CHARS:
        n_chars = max(_MIN_CHARS, int(n_chars * 0.9))
        ax.set_title(_wrap(title, n_chars), fontsize=fontsize)
        box = ax.title.get_window_extent(renderer)
    over = (box.y1 - fig.bbox.height) / fig.bbox.height
    if over > 0 and getattr(ax, "_noisycal_own_figure", False):
        pos = ax.get_position()
        margin = 0.01
        ax.set_position((pos.x0, pos.y0, pos.width, max(pos.height - over - margin, 0.2)))
