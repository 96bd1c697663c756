"""The Dawid & Skene (1979) anaesthetist ratings (Table 1 of the paper).

45 patients rated on a 4-point scale by 5 observers; observer 1 rated every patient
three times. Ratings are coded 1..4 as printed. The values are those of NumPyro's
``examples/annotation.py`` (``get_data``), which reproduces Table 1 of

Dawid, A. P. and Skene, A. M. (1979). Maximum likelihood estimation of observer
error-rates using the EM algorithm. Applied Statistics 28(1), 20-28.
"""

from __future__ import annotations

__all__ = ["POSITIONS_OBSERVER", "RATINGS"]

#: Observer (1..5) who gave the rating at each position of a row of ``RATINGS``.
POSITIONS_OBSERVER = (1, 1, 1, 2, 3, 4, 5)

#: RATINGS[i][p]: rating (1..4) of patient i + 1 at position p.
RATINGS = (
    (1, 1, 1, 1, 1, 1, 1),
    (3, 3, 3, 4, 3, 3, 4),
    (1, 1, 2, 2, 1, 2, 2),
    (2, 2, 2, 3, 1, 2, 1),
    (2, 2, 2, 3, 2, 2, 2),
    (2, 2, 2, 3, 3, 2, 2),
    (1, 2, 2, 2, 1, 1, 1),
    (3, 3, 3, 3, 4, 3, 3),
    (2, 2, 2, 2, 2, 2, 3),
    (2, 3, 2, 2, 2, 2, 3),
    (4, 4, 4, 4, 4, 4, 4),
    (2, 2, 2, 3, 3, 4, 3),
    (1, 1, 1, 1, 1, 1, 1),
    (2, 2, 2, 3, 2, 1, 2),
    (1, 2, 1, 1, 1, 1, 1),
    (1, 1, 1, 2, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (2, 2, 2, 2, 2, 2, 1),
    (2, 2, 2, 1, 3, 2, 2),
    (2, 2, 2, 2, 2, 2, 2),
    (2, 2, 2, 2, 2, 2, 1),
    (2, 2, 2, 3, 2, 2, 2),
    (2, 2, 1, 2, 2, 2, 2),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (2, 3, 2, 2, 2, 2, 2),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 2, 1, 1, 2, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (3, 3, 3, 3, 2, 3, 3),
    (1, 1, 1, 1, 1, 1, 1),
    (2, 2, 2, 2, 2, 2, 2),
    (2, 2, 2, 3, 2, 3, 2),
    (4, 3, 3, 4, 3, 4, 3),
    (2, 2, 1, 2, 2, 3, 2),
    (2, 3, 2, 3, 2, 3, 3),
    (3, 3, 3, 3, 4, 3, 2),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
    (1, 2, 1, 2, 1, 1, 1),
    (2, 3, 2, 2, 2, 2, 2),
    (1, 2, 1, 1, 1, 1, 1),
    (2, 2, 2, 2, 2, 2, 2),
)
