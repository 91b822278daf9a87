"""river's models that :mod:`olb.learners.stream_br` reproduces, and the side-by-side run that checks and times both.

:func:`side_by_side` runs river's model and olb's learner on one prequential stream (the rows in the order given,
every row predicted, then learned), the rows reaching river as olb's river learners hand them over
(:mod:`olb.learners.river_family`: a dict of the row's nonzero entries) and river's label choice being its
``predict_one`` on each label's probabilities. ``tests/test_stream_br.py`` asks for the same label sets on every row,
``benchmarks/bench_stream_br.py`` reports the CPU of both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from olb.learners.base import OnlineLearner
from olb.learners.linear.rows import nonzero_entries


def river_br_knn(n_neighbors: int = 5, window_size: int = 200):
    """river's BR + kNN at the MLHAT benchmark's settings (weighted by inverse distance, Euclidean)."""
    from river import multioutput, neighbors

    search = neighbors.LazySearch(window_size=window_size)
    return multioutput.PerOutputClassifier(
        neighbors.KNNClassifier(n_neighbors=n_neighbors, engine=search, weighted=True)
    )


def river_br_ht(grace_period: int = 200, split_confidence: float = 1e-5, tie_threshold: float = 0.05):
    """river's BR + Hoeffding tree at the MLHAT benchmark's settings (info gain, naive-Bayes-adaptive leaves,
    nb_threshold 0, Gaussian splitter)."""
    from river import multioutput, tree

    return multioutput.PerOutputClassifier(
        tree.HoeffdingTreeClassifier(
            grace_period=grace_period,
            delta=split_confidence,
            tau=tie_threshold,
            split_criterion="info_gain",
            leaf_prediction="nba",
            nb_threshold=0,
        )
    )


REFERENCES: dict[str, Callable] = {"br_knn": river_br_knn, "br_ht": river_br_ht}
"""olb's learner name -> river's model it reproduces (a factory taking the learner's hyperparameters but
``feature_scaling``)."""


@dataclass
class SideBySide:
    """What :func:`side_by_side` found: the rows where the label sets differ, and each side's CPU seconds."""

    rows: int
    differ: list[int]
    river_cpu_s: float
    olb_cpu_s: float


def side_by_side(river_model, learner: OnlineLearner, X, Y, order=None) -> SideBySide:
    """Test-then-train over the rows of ``X`` (dense, or CSR) in ``order`` (default: file order), river's model and
    then ``learner``, each pass timed whole (river's rows are made into dicts before its clock starts)."""
    keys = [f"y{k}" for k in range(Y.shape[1])]
    for key in keys:  # one classifier per label before any example, as olb's river learners make them
        river_model[key]
    order = range(X.shape[0]) if order is None else order
    rows = [X[i] if isinstance(X, np.ndarray) else X[[i]] for i in order]
    entries = [nonzero_entries(x, False) for x in rows]
    dicts = [dict(zip(idx.tolist(), val.tolist())) for idx, val in entries]
    targets = [{key: bool(v) for key, v in zip(keys, Y[i])} for i in order]
    expected = np.zeros((len(rows), len(keys)), dtype=np.int8)
    started = time.process_time()
    for n, (row, target) in enumerate(zip(dicts, targets)):
        proba = river_model.predict_proba_one(row)
        for k, key in enumerate(keys):  # river's predict_one: each label's most probable value
            if proba[key]:
                expected[n, k] = max(proba[key], key=proba[key].get)
        river_model.learn_one(row, target)
    middle = time.process_time()
    predicted = np.zeros_like(expected)
    for n, (x, i) in enumerate(zip(rows, order)):
        predicted[n] = learner.predict_one(x)["labels"]
        learner.learn_one(x, Y[i])
    ended = time.process_time()
    differ = [order[n] for n in np.flatnonzero((predicted != expected).any(axis=1)).tolist()]
    return SideBySide(len(rows), differ, middle - started, ended - middle)
