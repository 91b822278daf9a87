"""The ranking metrics of a score vector: rank loss (papers 000, 004) and ranking loss Rl (paper 002)."""

import numpy as np

from olb.metrics.ratios import _ratio, _value


def _pair_counts_sorted(S, Y):
    """Per row i: gt[i] = #{(l, r): Y[i,l], not Y[i,r], S[i,r] > S[i,l]}, eq[i] the same with ==.

    S (m, k) float; Y (m, k) bool. One sort per row, O(k log k), no k x k temporaries: for
    batches with a label set per row. (With one label set and |Y| |Y^c| pairs, the broadcast in
    rank_loss_many is faster up to |Y| ~ k/2 at k = 101, so it is not used there.)
    """
    m, k = S.shape
    order = np.argsort(S, axis=1)
    s = np.take_along_axis(S, order, axis=1)
    rel = np.take_along_axis(Y, order, axis=1)
    irr = ~rel
    cirr = np.cumsum(irr, axis=1)  # irrelevant labels at or before each sorted position
    n_irr = cirr[:, -1:]
    first = np.ones((m, k), dtype=bool)  # first position of a group of tied scores
    np.not_equal(s[:, 1:], s[:, :-1], out=first[:, 1:])
    last = np.ones((m, k), dtype=bool)
    last[:, :-1] = first[:, 1:]
    # irrelevant labels scored strictly below / at most the score at each position
    below = np.maximum.accumulate(np.where(first, cirr - irr, 0), axis=1)
    upto = np.minimum.accumulate(np.where(last, cirr, k)[:, ::-1], axis=1)[:, ::-1]
    gt = np.where(rel, n_irr - upto, 0).sum(axis=1)
    eq = np.where(rel, upto - below, 0).sum(axis=1)
    return gt, eq


def _finish(gt, eq, n_pairs, normalized, ties):
    loss = gt + ties * eq
    if normalized:
        return _ratio(loss, n_pairs, 0.0)
    return np.asarray(loss, dtype=float)


def rank_loss(scores, y, normalized=True, ties=0.5):
    """Rank loss: mis-ordered (relevant, irrelevant) label pairs [paper 000, §3.1, L_rnk].

    ``L = w_Y * sum_{l in Y} sum_{r not in Y} [1(s[r] > s[l]) + ties * 1(s[r] == s[l])]``, with
    ``w_Y = 1 / (|Y| |Y^c|)`` when ``normalized`` (paper 004's *weighted* rank loss, Tables 1-3) and
    ``w_Y = 1`` otherwise (paper 004's *unweighted* rank loss, §2). The loss is 0 when |Y| is 0 or k.

    ``ties=0.5`` is paper 000's definition and what both papers' code reports. Paper 004's text writes
    ``1(s[a] <= s[b])`` (ties count fully, as in its Hedge update): pass ``ties=1.0``.

    Parameters
    ----------
    scores : (k,) one example, or (n, k) a batch.
    y : 0/1 relevance of the same shape. A (k,) ``y`` with (n, k) scores scores n score vectors against
        one label set (same as :func:`rank_loss_many`).

    Returns a float for one example, an (n,) array for a batch. One example costs one
    O(|Y| |Y^c|) numpy broadcast (about 5 us at k = 6); a batch with a label set per row is sorted
    row-wise, O(n k log k).

    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0])   # pairs (0,1) (0,3) (2,1) ok, (2,3) tied
    0.125
    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0], normalized=False)
    0.5
    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0], ties=1.0)
    0.25
    >>> rank_loss([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], [[1, 0, 0], [1, 1, 1]])
    array([1., 0.])
    """
    s = np.asarray(scores, dtype=float)
    yb = np.asarray(y, dtype=bool)
    if s.ndim == 1:  # the hot single-example path: an O(|Y| |Y^c|) broadcast, no Python loop
        pos = s[yb][:, None]
        neg = s[~yb]
        n_pairs = pos.size * neg.size
        if n_pairs == 0:
            return 0.0
        loss = np.count_nonzero(neg > pos)
        if ties:
            loss = loss + ties * np.count_nonzero(neg == pos)
        return float(loss / n_pairs if normalized else loss)
    if yb.ndim == 1:
        return rank_loss_many(s, yb, normalized=normalized, ties=ties)
    n_pos = yb.sum(axis=1)
    gt, eq = _pair_counts_sorted(s, yb)
    return _finish(gt, eq, n_pos * (s.shape[1] - n_pos), normalized, ties)


def rank_loss_many(S, y, normalized=True, ties=0.5):
    """:func:`rank_loss` of m score vectors against one label set: S (m, k), y (k,) -> (m,).

    All N experts' losses on one example in one call, as an O(m |Y| |Y^c|) numpy broadcast (m |Y| |Y^c|
    booleans of temporary memory). Ada.OLMR's Hedge update computes the same values compiled
    (:func:`olb.learners.boosting.rounds.rank_losses`; this module stays free of numba).

    >>> S = np.array([[0.0, 0.0, 0.0], [3.0, 1.0, 2.0], [1.0, 3.0, 2.0]])
    >>> rank_loss_many(S, [1, 0, 0])
    array([0.5, 0. , 1. ])
    """
    S = np.asarray(S, dtype=float)
    yb = np.asarray(y, dtype=bool)
    m, k = S.shape
    n_pos = int(np.count_nonzero(yb))
    n_pairs = n_pos * (k - n_pos)
    if n_pairs == 0:
        return np.zeros(m)
    pos = S[:, yb][:, :, None]
    neg = S[:, ~yb][:, None, :]
    gt = np.count_nonzero(neg > pos, axis=(1, 2))
    eq = np.count_nonzero(neg == pos, axis=(1, 2)) if ties else 0
    return _finish(gt, eq, n_pairs, normalized, ties)


def ranking_loss(scores, y, empty=0.0):
    """Ranking loss Rl [paper 002, §6.2]: like :func:`rank_loss` but ties count as errors.

    Per example ``|{(l, r) in Y x Y^c : s[l] <= s[r]}| / (|Y| |Y^c|)``, i.e. ``rank_loss(ties=1.0)``.
    This is scikit-learn's ``label_ranking_loss`` per example. Examples with |Y| = 0 or k get ``empty``:
    0 (the default, scikit-learn, which keeps them in the mean) or ``np.nan`` (our reading for
    ALT: leave them out, average with ``np.nanmean``; the ``METRICS`` entry does this).

    >>> ranking_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0])
    0.25
    >>> ranking_loss([[0.2, 0.3], [0.5, 0.5]], [[1, 1], [1, 0]], empty=np.nan)
    array([nan,  1.])
    """
    yb = np.asarray(y, dtype=bool)
    loss = rank_loss(scores, yb, normalized=True, ties=1.0)
    n_pos = yb.sum(axis=-1)
    return _value(np.where((n_pos == 0) | (n_pos == yb.shape[-1]), empty, loss))
