"""The arrays of :class:`olb.learners.stream_br.hoeffding.BRHT`'s trees, the record its kernels take whole.

Apart from the kernels (:mod:`olb.learners.stream_br.hoeffding_core`), so that a process that runs them from the
compiled extension imports no numba.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from olb.kernel_declarations import (
    BooleanArray2D,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64Array1D,
    Int64Array2D,
    kernel_record,
)

BooleanArray3D = Annotated[np.ndarray, "boolean[:, :, ::1]"]


@kernel_record
class TreeArrays(NamedTuple):
    """Every label's tree: nodes (branches and leaves) in shared arrays, a leaf's river state in its row."""

    root: Int64Array1D  # (q,) each label's root node
    classes: BooleanArray2D  # (q, 2) the label values each tree has learned (river's tree.classes)
    feature: Int64Array1D  # (N,) a branch's split feature; -1 for a leaf
    threshold: Float64Array1D  # (N,) a branch's threshold: x <= threshold goes left
    left: Int64Array1D
    right: Int64Array1D
    weight: Float64Array2D  # (N, 2) a leaf's class weights (river's leaf.stats)
    has_class: BooleanArray2D  # (N, 2) whether the class is a key of leaf.stats
    first_class: Int64Array1D  # (N,) the first key of leaf.stats (its dict order: ties go to it); -1 if none
    mc_correct: Float64Array1D  # (N,) the leaf's majority-class hits (naive-Bayes-adaptive leaves)
    nb_correct: Float64Array1D  # (N,) its naive Bayes hits
    last_attempt: Float64Array1D  # (N,) the leaf's weight at its last split attempt
    order: Int64Array2D  # (N, d) the leaf's features in the order it first saw them (its splitters' dict order)
    n_order: Int64Array1D  # (N,) how many
    g_first: Int64Array2D  # (N, d) the first class of a feature's splitter (its estimators' order); -1: no splitter
    g_has: BooleanArray3D  # (N, 2, d) whether the splitter has an estimator of the class
    g_n: Float64Array3D  # (N, 2, d) the estimator's weight, mean, sum of squared deviations, min and max
    g_mean: Float64Array3D
    g_S: Float64Array3D
    g_min: Float64Array3D
    g_max: Float64Array3D
    g_var: Float64Array3D  # (N, 2, d) the estimator's variance where river's log density is finite, else 0
    g_half_log_var: Float64Array3D  # (N, 2, d) 0.5 * log(variance) there: each kept from the last update
