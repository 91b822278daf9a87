"""Weak learners: a pool of N learners that predict distributions over labels and take importance weights."""

from __future__ import annotations

from olb.weak.base import WeakLearners
from olb.weak.river_adapter import RiverWeakLearners, river_hoeffding_tree
from olb.weak.vfdt import VFDTForest

WEAK_LEARNERS = ("vfdt", "river_hoeffding_tree")


def make_weak_learners(
    kind: str,
    n_learners: int,
    n_features: int,
    n_labels: int,
    num_covariates: int,
    importance_scale_range: tuple[float, float] | None,
    seed,
) -> WeakLearners:
    """The pool of N weak learners named ``kind`` (see ``WEAK_LEARNERS``), with random per-tree parameters.

    ``river_hoeffding_tree`` draws the same parameter ranges as the VFDT forest for river's
    ``HoeffdingTreeClassifier`` (``leaf_prediction='mc'``); importance scales apply only to the VFDT forest.
    """
    if kind == "vfdt":
        return VFDTForest(
            n_learners,
            n_features,
            n_labels,
            num_covariates=num_covariates,
            importance_scale_range=importance_scale_range,
            seed=seed,
        )
    if kind == "river_hoeffding_tree":
        return RiverWeakLearners(river_hoeffding_tree, n_learners, n_features, n_labels, num_covariates, seed)
    raise ValueError(f"unknown weak learner {kind!r}; allowed: {', '.join(WEAK_LEARNERS)}")


__all__ = ["WeakLearners", "VFDTForest", "RiverWeakLearners", "make_weak_learners", "WEAK_LEARNERS"]
