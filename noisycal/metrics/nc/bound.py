"""Finite-sample bounds for NC-ECE, with a Hoeffding or an empirical-Bernstein radius.

The bounds cover two classes ("Noisy-Label Calibration with Multiple Unreliable Labels",
Theorem 1 / Eq. C.11 and Proposition 1) and K classes (our generalisation); the
empirical-Bernstein radius is that of Maurer & Pontil (2009).

With probability at least 1 - eta, ``|NC-ECE_B - ECE_B(f)| <= rho + d_ch``; for two classes
and Hoeffding ``rho = B sqrt(2 (M log 2 + log(c / eta)) / n)``, B = sum_j alpha_j / (b_j -
a_j), c = 2 (Theorem 1) or 6J (channels fitted on the evaluated items, Proposition 1).
:func:`nc_ece_bound` states and proves the K-class and Bernstein forms. d_ch is exact
(known channels), B r (a channel radius r) or left out ('binned_only', said so). ECE(f)
itself needs a Lipschitz term L_r h not added here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._util.validation import check_level
from ...intervals.options import BOUND_KINDS, BOUND_MODES, Bound

__all__ = ["BOUND_MODES", "BOUND_KINDS", "DEFAULT_BOUND_KIND", "nc_ece_bound",
           "hoeffding_radius", "target_range",
           "class_ranges", "channel_errors", "infer_same_sample", "check_fit_identified"]

#: The default concentration inequality of the sampling radius (:func:`nc_ece_bound`;
#: the modes and inequalities are ``BOUND_MODES`` and ``BOUND_KINDS`` of
#: :class:`noisycal.intervals.Bound`); 'auto' takes the smaller of the two, each at
#: eta / 2.
DEFAULT_BOUND_KIND = "auto"


def _item_weights(details: Any) -> tuple[np.ndarray, np.ndarray]:
    """Weights w_ij renormalised over item i's informative raters, and the used annotators."""
    alpha = np.asarray(details["weights"], dtype=np.float64)
    inf = details.get("informative")
    use = alpha > 0
    if inf is not None:
        use &= np.asarray(inf, dtype=bool)
    obs = details.get("observed")
    obs = np.ones((1, alpha.size), bool) if obs is None else np.asarray(obs, dtype=bool)
    w = np.where(obs & use[None, :], alpha[None, :], 0.0)
    tot = w.sum(axis=1, keepdims=True)
    return np.divide(w, tot, out=np.zeros_like(w), where=tot > 0), use


def _inverses(confusion: np.ndarray, use: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """G_j = C_j^{-1} (unused: identity), column minima lo_jk and ranges D_jk."""
    C = np.asarray(confusion, dtype=np.float64)
    G = np.linalg.inv(np.where(use[:, None, None], C, np.eye(C.shape[-1])))
    lo = G.min(axis=1)
    return G, lo, G.max(axis=1) - lo


def class_ranges(details: Any, scale: np.ndarray | None = None) -> np.ndarray:
    r"""B-hat of every class of a corrected target: :math:`B_k = \max_i \sum_j w_{ij} D_{jk}`.

    :math:`D_{jk}` is the range of column k of :math:`\hat C_j^{-1}`, so :math:`|T_i[k] -
    c| \le B_k` for c in [0, 1] (:func:`nc_ece_bound`, Lemma 1); two classes: both are
    the paper's B-hat.

    Parameters
    ----------
    details : mapping
        The details of :func:`noisycal.targets.corrected` (weights, confusion, observed).
    scale : ndarray of shape (n_annotators,) or (n_annotators, K), optional
        1-D: factors e_j multiplying D_jk; 2-D: replaces D_jk (:func:`channel_errors`).

    Returns
    -------
    ndarray of shape (K,)
    """
    w, use = _item_weights(details)
    D = _inverses(details["confusion"], use)[2]
    if scale is not None:
        scale = np.asarray(scale, dtype=np.float64)
        D = scale[:, None] * D if scale.ndim == 1 else scale
    return np.max(w @ np.where(use[:, None], D, 0.0), axis=0, initial=0.0)


def target_range(details: Any, scale: np.ndarray | None = None) -> float:
    """B-hat of a corrected target: the largest of :func:`class_ranges`.

    For two classes the paper's sum_j alpha_j / delta_j (every item rated) or its maximum
    over items (missing ratings), as :func:`noisycal.correction.correction_range`.

    Parameters
    ----------
    details, scale
        As in :func:`class_ranges`.

    Returns
    -------
    float
    """
    return float(np.max(class_ranges(details, scale)))


def channel_errors(confusion_hat: np.ndarray, confusion_true: np.ndarray) -> np.ndarray:
    r"""Channel errors :math:`e_{jk} = \max_y |((C_j - \hat C_j)\hat C_j^{-1})[y, k]|`: the
    largest bias of annotator j's corrected label in column k (:func:`nc_ece_bound`,
    Lemma 2); for two classes :math:`e_{j1}` is the paper's :math:`e_j/\hat\delta_j`.

    Parameters
    ----------
    confusion_hat, confusion_true : ndarray of shape (n_annotators, K, K)
        The channels the target used and the true ones.

    Returns
    -------
    ndarray of shape (n_annotators, K)
    """
    Ch = np.asarray(confusion_hat, dtype=np.float64)
    G = np.linalg.inv(Ch)
    return np.abs(np.einsum("jya,jak->jyk", np.asarray(confusion_true) - Ch, G)).max(axis=1)


def infer_same_sample(target: Any) -> tuple[bool, str]:
    """Whether a corrected target's channels were fitted on the items it evaluates.

    The rule (ours): channels given directly (no fit) are fixed independently of the
    items (Theorem 1); channels from a fit were fitted on them (Proposition 1, which holds
    for any estimate), unless the fit's and the target's item ids are disjoint.

    Parameters
    ----------
    target : Target
        A corrected target.

    Returns
    -------
    same_sample : bool
    reason : str
    """
    det = getattr(target, "details", {})
    fit = det.get("fit")
    if fit is None:
        return False, "channels given directly (not fitted on these items)"
    fit_items = getattr(fit, "items", None)
    items = getattr(target, "items", None)
    items = det.get("items") if items is None else items
    if fit_items is not None and items is not None \
            and not np.isin(np.asarray(items), np.asarray(fit_items)).any():
        return False, "channels fitted on items disjoint from the evaluated ones"
    return True, "channels fitted on these annotations"


def check_fit_identified(target: Any, what: str = "interval='bound'") -> None:
    """Refuse a bound for a corrected target whose fit's status is not 'ok'.

    Parameters
    ----------
    target : Target
        A corrected target.
    what : str, default="interval='bound'"
        The request, for the message.
    """
    status = getattr(target, "details", {}).get("fit_status")
    if status not in (None, "ok"):
        raise ValueError(f"target: {what} needs identified channels, but the channel fit "
                         f"the target was built from has status {status!r} (the bound "
                         "assumes its channels are identified and consistent); refit with "
                         "a design that identifies them, or use interval='bootstrap'")


def _log_term(n: int, n_bins: int, level: float, log_union: float) -> float:
    """M log 2 + log(c / eta), after checking ``level`` and ``n``."""
    level = check_level(level)
    if not n >= 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return n_bins * math.log(2.0) + log_union - math.log(1.0 - level)


def hoeffding_radius(b_hat: float, n: int, n_bins: int, level: float, *,
                     union: float = 2.0) -> float:
    r"""Hoeffding radius of the binned NC-ECE: :math:`\hat B \sqrt{2 (M \log 2 +
    \log(c/\eta)) / n}` (union over the :math:`2^M` sign vectors of M bins and c events:
    c = 2 in Theorem 1 / Eq. C.11, c = 6J in Proposition 1, c = 2F for F cross-fitting
    folds; :func:`nc_ece_bound`).

    Parameters
    ----------
    b_hat : float
        B-hat, :func:`class_ranges`.
    n, n_bins : int
        Items and bins M (empty ones included).
    level : float
        1 - eta, a fraction in (0, 1).
    union : float, default=2.0
        c, the number of events in the union bound.

    Returns
    -------
    float

    Examples
    --------
    >>> round(hoeffding_radius(1 / 0.76, 5000, 10, 0.95), 4)
    0.0858
    """
    return float(b_hat) * math.sqrt(2.0 * _log_term(n, n_bins, level, math.log(union)) / n)


def _bernstein(b_hat: float, second_moment: float, n: int, L: float) -> float:
    """Maurer & Pontil's Theorem 4 for summands in [-B, B] (nc_ece_bound, Notes)."""
    if not n >= 2:
        raise ValueError(f"n must be at least 2 for an empirical-Bernstein radius, got {n}")
    return math.sqrt(2.0 * second_moment * L / n) + 14.0 * float(b_hat) * L / (3.0 * (n - 1))


def _log_union(K: int, J: int, n_groups: int, same_sample: bool) -> float:
    """log c of the union (:func:`nc_ece_bound`, Notes)."""
    if not same_sample:
        return math.log(2.0 * n_groups)
    if K == 2:  # per group: the level set of its column is known
        return math.log(6.0 * J * n_groups)
    log_i = math.log(3.0 * J) + K * math.log(2.0) + math.log1p(-2.0 ** -K)
    log_i += math.log1p(math.exp(-log_i))  # |I| = 3J(2^K - 1) + 1
    return math.log(2.0 * n_groups) + (K * log_i if n_groups == 1 else log_i)


def _group_columns(K: int, n_groups: int) -> list[np.ndarray]:
    """Columns each score group uses: positive class, any (top label), g (classwise)."""
    if K == 2 and n_groups == 1:
        return [np.array([1])]
    if n_groups == 1:
        return [np.arange(K)]
    if n_groups == K:
        return [np.array([g]) for g in range(K)]
    raise ValueError(f"counts must have 1 or {K} rows (score groups), got {n_groups}")


def _squares(det: Any, values: np.ndarray, items: tuple, B: np.ndarray,
             same_sample: bool) -> np.ndarray:
    """Per group, sum_i r_i^2 / (n - 1): r_i the residual (fixed channels) or, for the
    same-sample decomposition, r_i^2 = B_g sum_j w_ij D_jk q_ij (Notes of nc_ece_bound)."""
    conf, _, cols = (np.asarray(x) for x in items)
    n = conf.shape[1]
    if not same_sample:
        t = np.take_along_axis(values, cols.T, axis=1).T
        return np.sum((t - conf) ** 2, axis=1) / (n - 1)
    w, use = _item_weights(det)
    G, lo, D = _inverses(det["confusion"], use)
    a = np.argmax(np.asarray(det["ratings"]), axis=2)  # (n, J); unrated: w_ij = 0
    J = G.shape[0]
    out = np.empty(conf.shape[0])
    for g in range(conf.shape[0]):
        k, c = cols[g][:, None], conf[g][:, None]
        lo_k, D_k = lo.T[cols[g]], D.T[cols[g]]  # (n, J)
        phi = (G[np.arange(J)[None, :], a, k] - lo_k) / D_k
        u, v = -lo_k / D_k, 1.0 / D_k
        q = (1 - u - v) * phi + v * (phi * (1 - 2 * c) + c * c) + u * (1 - phi)
        out[g] = B[g] * np.sum(w * D_k * q) / (n - 1)
    return out


def nc_ece_bound(value: float, target: Any, counts: np.ndarray, level: float, *,
                 mode: str | None = None, channel_radius: float | None = None,
                 true_channels: Any = None, same_sample: bool | None = None,
                 bound_kind: str = DEFAULT_BOUND_KIND,
                 items: tuple | None = None) -> tuple[tuple[float, float], dict]:
    r"""Interval ``[max(0, value - rad), value + rad]`` and its components.

    Parameters
    ----------
    value : float
        The NC-ECE: positive-class (two classes), top-label or classwise (K > 2).
    target : Target
        A corrected target (``kind='corrected'``).
    counts : ndarray of shape (M,) or (n_groups, M)
        Items per bin (M bins, empty ones included) of each score group: one for the
        positive-class and top-label errors, K for the classwise error.
    level : float
        1 - eta.
    mode : {'binned_only', 'oracle', 'radius'}, optional
        As ``mode`` of :class:`noisycal.intervals.Bound`, which checks these options
        (default: 'radius' with ``channel_radius``, 'oracle' with ``true_channels``, else
        'binned_only'; an option of another mode raises).
    channel_radius : float, optional
        For ``mode='radius'``: r >= max_j max_y TV(C_j[y], C_hat_j[y]), the largest
        total-variation distance between a true and an estimated confusion row (two
        classes: max_j max(|a_hat_j - a_j|, |b_hat_j - b_j|)).
    true_channels : (a, b) or array of shape (n_annotators, K, K), optional
        The true channels, for ``mode='oracle'``.
    same_sample : bool, optional
        Channels fitted on the evaluated items (Proposition 1 of "Noisy-Label Calibration
        with Multiple Unreliable Labels", K classes: Notes) or not (Theorem 1). None
        (default): :func:`infer_same_sample`.
    bound_kind : {'auto', 'bernstein', 'hoeffding'}, default='auto'
        Neither inequality is always narrower: Bernstein wins when the residuals' spread
        is small against their range and n is large, Hoeffding for small n and large
        unions (Bernstein's term of order B log / n). 'auto' (the default) keeps the
        smaller of the two at eta / 2 each; it is never wider than 'hoeffding' (Notes).
        ``benchmarks/bound_study.py`` measures all three.
    items : (conf, bins, cols), optional
        Arrays of shape (n_groups, n_items): confidences, bin indices and target columns
        of every score group (:func:`noisycal.metrics.nc.intervals.nc_ece_items`). Needed for
        K > 2 and for the Bernstein radius.

    Returns
    -------
    interval : (low, high)
    details : dict
        B_hat, class_ranges, sampling_radius, channel_term, expectation_bias_bound,
        bound_mode, bound_kind, bound_method, statement, log_union, ...

    Notes
    -----
    Setting: i.i.d. items, :math:`G_j = \hat C_j^{-1}`, target :math:`T_i = \sum_j
    w_{ij} e_{A_{ij}} G_j`. Score group g gives item i a confidence :math:`c_i \in [0,1]`
    and a column :math:`k_i` (positive class; predicted class, :math:`c_i = \max_k
    p_{ik}`; class g, :math:`c_i = p_{ig}`); its NC-ECE is :math:`\sum_\ell |\hat
    r_\ell|`, :math:`\hat r_\ell = \frac1n \sum_i 1(c_i \in B_\ell)(T_i[k_i] - c_i)`, and
    :math:`\mathrm{ECE}_\mathcal{B}` the same with :math:`e_{Y_i}` in expectation.

    Lemma 1 (range). :math:`D_{jk} = \max_a G_j[a,k] - \min_a G_j[a,k]`. As
    :math:`\hat C_j G_j = I` with probability rows, :math:`\sum_a \hat C_j[k,a]
    G_j[a,k] = 1` gives :math:`\max_a G_j[a,k] \ge 1` and :math:`\sum_a \hat C_j[y,a]
    G_j[a,k] = 0` (y != k) gives :math:`\min_a G_j[a,k] \le 0`, so for c in [0, 1]
    :math:`|G_j[a,k] - c| \le D_{jk}` and :math:`|T_i[k] - c| \le B_k` (:func:`class_ranges`;
    two classes: :math:`D_{j1} = 1/\hat\delta_j`, the paper's Lemma C.3). Group g has
    :math:`B_g = \max_k B_k` over its columns.

    Lemma 2 (channel term). With true channels :math:`C_j` and class-conditional noise,
    :math:`E[T_i[k] | Y=y, Z] - 1(y=k) = \sum_j w_{ij}((C_j - \hat C_j)G_j)[y,k]`, at most
    :math:`d_k = \max_i \sum_j w_{ij} e_{jk}` (:func:`channel_errors`) in absolute value;
    summed over bins, :math:`|Q_g - \mathrm{ECE}_{\mathcal B,g}| \le d_g = \max_k d_k`
    (Q: the population value with the estimated channels; 'oracle'). Rows of
    :math:`C_j - \hat C_j` sum to 0, so centring column k at its mid-range gives
    :math:`e_{jk} \le \tau_j D_{jk}` with :math:`\tau_j = \max_y \frac12\|C_j[y] - \hat
    C_j[y]\|_1` (half the :math:`\infty`-operator norm of :math:`C_j - \hat C_j`): for
    r >= max_j tau_j, :math:`d_g \le r B_g` ('radius'; two classes: tau_j is the paper's
    :math:`e_j = \max(|\hat a_j - a_j|, |\hat b_j - b_j|)`).

    Theorem (fixed channels and weights; Theorem 1 / Eq. C.11 for two classes).
    :math:`|\sum_\ell|\hat r_\ell| - \sum_\ell|q_\ell|| \le \max_s \frac1n\sum_i(f_s(O_i)
    - E f_s)` over :math:`s \in \{\pm1\}^M`, :math:`f_s = s_{\ell(c)}(T[k] - c) \in
    [-B_g, B_g]`. With :math:`L = M\log 2 + \log(c/\eta)`, c = 2 n_g (:math:`n_g`
    groups), and probability at least 1 - eta, :math:`|\mathrm{NC} -
    \mathrm{ECE}_\mathcal{B}| \le \mathrm{mean}_g(\rho_g + d_g)`:

    - 'hoeffding': :math:`\rho_g = B_g\sqrt{2L/n}` (two-sided per s, the paper's count;
      one-sided suffices, as s and -s are both in the union);
    - 'bernstein': Maurer & Pontil's Theorem 4 on :math:`(B_g - f_s)/(2B_g) \in [0,1]`
      (one-sided, its :math:`\log(2/\delta)` at :math:`\delta = \eta/(2^M n_g)`):
      :math:`\rho_g = \sqrt{2V_gL/n} + 14B_gL/(3(n-1))`, :math:`V_g = \sum_i (T_i[k_i]
      - c_i)^2/(n-1)` bounding every :math:`f_s`'s sample variance;
    - 'auto': the smaller of one-sided Hoeffding and Bernstein, each at eta/2: L for
      Hoeffding (the 'hoeffding' radius) and L + log 2 for Bernstein.

    Same sample (Proposition 1; K classes ours). With :math:`\phi = (G_j[\cdot,k] -
    lo)/D = \sum_S \lambda_S 1_S` over its upper level sets S (convex), :math:`u =
    -lo/D`, :math:`v = 1/D` (:math:`u, v \ge 0`, :math:`u + v \le 1` by Lemma 1),
    exactly :math:`G_j[a,k] - c = D_{jk}\sum_S\lambda_S[(1-u-v)1_S(a) + v(1_S(a) - c) +
    u(1_S(a) - 1)]`. So for every channel estimate and weight vector :math:`f_s/B_g` is a
    convex combination of 0 and the fixed functions :math:`s_{\ell(c)}h(A_j, c) \in
    [-1,1]`, :math:`h \in \{1_S, 1_S - c, 1_S - 1\}`, and the union runs over them: two
    classes, S = {1}, c = 6J (the paper's); K > 2, all :math:`2^K - 1` sets, :math:`|I| =
    3J(2^K-1) + 1` per class, c = 2K|I| classwise and :math:`c = 2|I|^K` top-label (its
    combination depends on the predicted class: K-tuples). Hoeffding gives
    :math:`\rho_g = B_g\sqrt{2L/n}`; Bernstein, with :math:`\sum_m\mu_m\sqrt{V_m} \le
    (\sum_m\mu_mV_m)^{1/2}`, the form above with :math:`V_g = \sum_i\tilde r_i^2/(n-1)`,
    :math:`\tilde r_i^2 = B_g\sum_j w_{ij}D_{jk_i}q_{ij} \ge (T_i[k_i] - c_i)^2`,
    :math:`q_{ij} = (1-u-v)\phi + v(\phi(1-2c) + c^2) + u(1-\phi)` at :math:`a =
    A_{ij}`. With missing ratings the weights depend on the raters and this is a plug-in.

    The interval is clipped at 0 (a library convention). With fixed channels the weights
    must not depend on the evaluated ratings ('iv' weights' plug-in prevalence does).
    """
    opts = Bound(mode=mode, kind=bound_kind, channel_radius=channel_radius,
                 true_channels=true_channels, same_sample=same_sample)
    mode, true_channels, same_sample = opts.mode, opts.true_channels, opts.same_sample
    if getattr(target, "kind", None) != "corrected":
        raise ValueError("interval='bound' needs a corrected target (nc.targets.corrected); "
                         "it bounds NC-ECE only")
    check_fit_identified(target)
    reason = "given by the caller"
    if same_sample is None:
        same_sample, reason = infer_same_sample(target)
    det, K = target.details, int(target.n_classes)
    counts = np.atleast_2d(np.asarray(counts))
    n_groups, M = counts.shape
    n = int(np.sum(counts[0]))
    columns = _group_columns(K, n_groups)
    if items is None and (K > 2 or bound_kind != "hoeffding"):
        raise ValueError("items (conf, bins, cols) are needed for K > 2 and for the "
                         "Bernstein radius (bound_kind='auto' or 'bernstein')")
    if items is not None and not all(np.shape(x) == (n_groups, n) for x in items):
        raise ValueError(f"items must be three arrays of shape ({n_groups}, {n})")
    Bk, use = class_ranges(det), _item_weights(det)[1]
    B = np.array([Bk[c].max() for c in columns])
    log_union = _log_union(K, int(use.sum()), n_groups, same_sample)
    L = _log_term(n, M, level, log_union)
    rho = B * math.sqrt(2.0 * L / n)
    inequality = np.full(n_groups, "hoeffding")
    if bound_kind != "hoeffding":
        V = _squares(det, np.asarray(target.values, dtype=np.float64), items, B, same_sample)
        Lb = L + math.log(2.0) * (bound_kind == "auto")
        rho_b = np.array([_bernstein(b, v, n, Lb) for b, v in zip(B, V, strict=True)])
        inequality[(rho_b < rho) | (bound_kind == "bernstein")] = "bernstein"
        rho = np.where(inequality == "bernstein", rho_b, rho)
    chosen = "+".join(sorted(set(inequality.tolist()), reverse=True))
    bias = B * np.sqrt(counts / n).sum(axis=1) / math.sqrt(n)
    if mode == "oracle":
        C_hat = np.asarray(det["confusion"], dtype=np.float64)
        if true_channels.shape != C_hat.shape:
            raise ValueError(f"true_channels must give channels of shape {C_hat.shape} "
                             f"(the target's), got {true_channels.shape}")
        e = np.zeros(C_hat.shape[:2])
        e[use] = channel_errors(C_hat[use], true_channels[use])
        dk = class_ranges(det, scale=e)
        channel = np.array([dk[c].max() for c in columns])
        note = "channel term exact (oracle channels)"
    elif mode == "radius":
        channel = B * opts.channel_radius
        note = f"channel term B * r with r = {opts.channel_radius:g}"
    else:
        channel = np.zeros(n_groups)
        note = "assumes exact channels (the channel term d_ch is not included)"
    rad = float(np.mean(rho + channel))
    statement = (("Proposition 1" if same_sample else "Theorem 1 / Eq. C.11")
                 + (", generalised to K classes" if K > 2 else ""))
    how = " and ".join({"hoeffding": "Hoeffding", "bernstein": "empirical Bernstein "
                        "(Maurer & Pontil 2009, Theorem 4)"}[k] for k in chosen.split("+"))
    if bound_kind == "auto":
        how = f"the smaller of Hoeffding and empirical Bernstein at eta/2 ({how})"
    note = f"{statement} ({reason}), {how}; {note}"
    details = {"B_hat": float(B.max()), "class_ranges": Bk, "sampling_radius":
               float(np.mean(rho)), "channel_term": float(np.mean(channel)),
               "expectation_bias_bound": float(np.mean(bias)), "bound_mode": mode,
               "bound_kind": bound_kind, "inequality": chosen, "bound_method":
               f"{chosen}-union", "same_sample": same_sample, "same_sample_reason": reason,
               "statement": statement, "log_union": log_union, "n_bins": M,
               "eta": 1.0 - level, "bound_note": note}
    if bound_kind != "hoeffding":  # V_g of the Notes
        details["second_moment"] = V if n_groups > 1 else float(V[0])
    return (max(0.0, value - rad), value + rad), details
