"""The VFDT forest's arrays, one record that its compiled kernels (:mod:`olb.weak.vfdt_core`) take whole.

The forest (:class:`olb.weak.vfdt.VFDTForest`) keeps every tree in these shared arrays: per tree, per node
(internal nodes and leaves), per slot (one per leaf) and in a pool of Gaussian estimators, with the settings
its split attempts use. Growing an array gives a new record (``_replace``); the kernels write into the arrays.
"""

from __future__ import annotations

from typing import NamedTuple

from olb.kernel_declarations import (
    BooleanArray1D,
    BooleanArray2D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Int32Array2D,
    Int64Array1D,
    Int64Array2D,
    kernel_record,
)


@kernel_record
class ForestArrays(NamedTuple):
    """N trees over d' covariates each and k labels, in shared arrays."""

    # per tree: its root node, its covariates (N, d'), its grace period, ln(1/delta) and tie threshold tau
    root: Int64Array1D
    covariates: Int64Array2D
    grace: Float64Array1D
    ln_inv_delta: Float64Array1D
    tau: Float64Array1D
    # per node: the split (feature -1: a leaf; the heavier child takes a missing value), the slot of a leaf (-1:
    # an internal node), the class masses and which classes it has seen (k), its weight at the last split attempt
    split_feature: Int64Array1D
    threshold: Float64Array1D
    left: Int64Array1D
    right: Int64Array1D
    nan_left: BooleanArray1D
    slot: Int64Array1D
    class_mass: Float64Array2D
    seen: BooleanArray2D
    weight_at_last_attempt: Float64Array1D
    # per slot: the pool row of each label's estimators (-1: none yet)
    pair_of: Int32Array2D
    # the pool: d' weighted Gaussian estimators per row (weight, mean, M2, min, max), the rows used and free so far
    # (pairs: [used, free]), the free rows (free_pairs[:pairs[1]])
    g_weight: Float64Array2D
    g_mean: Float64Array2D
    g_m2: Float64Array2D
    g_min: Float64Array2D
    g_max: Float64Array2D
    pairs: Int64Array1D
    free_pairs: Int64Array1D
    # the settings: candidate thresholds (fractions of a covariate's range), log2(#classes)^2 per number of classes,
    # numpy's pairwise order over k values (olb.weak.vfdt.pairwise_plan), a new class's mass at a node, the
    # Gaussian estimators' least variance, and the least weight fraction of a branch
    fractions: Float64Array1D
    eps_factor: Float64Array1D
    plan_starts: Int64Array1D
    plan_lengths: Int64Array1D
    plan_ops: Int64Array1D
    pseudo_count: Float64
    min_variance: Float64
    min_branch_fraction: Float64
