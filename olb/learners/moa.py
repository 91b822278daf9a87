"""MOA's stream learners (Java) as olb learners, on MOA's own classes through JPype (``pip install "olb[moa]"``).

CapyMOA supplies MOA's jar only (it is found without importing CapyMOA, whose import sets up a JVM of its own);
the learners are MOA's classes, built from MOA's command-line strings, fed one ``DenseInstance`` per row through a
header made once per learner. Registered as:

===============  =====================================================================  ==========
``moa_br_ht``    ``multitarget.BasicMultiLabelClassifier -l trees.HoeffdingTree``        multi-label
``moa_isoupt``   ``multilabel.trees.ISOUPTree``                                         multi-label
``moa_amr``      ``rules.multilabel.AMRulesMultiLabelClassifier``                       multi-label
``moa_ht``       ``trees.HoeffdingTree``                                                multiclass
``moa_ozaboost`` ``meta.OzaBoost -l trees.HoeffdingTree``                               multiclass
``moa_ozabag``   ``meta.OzaBag -l trees.HoeffdingTree``                                 multiclass
===============  =====================================================================  ==========

Every hyperparameter defaults to MOA's default; the Hoeffding trees' ``grace_period``, ``split_confidence``,
``tie_threshold`` and ``leaf_prediction`` set MOA's ``-g``, ``-c``, ``-t`` and ``-l`` (docs/moa.md gives the
settings that match olb's VFDT). ``moa_command`` of a learner is the exact MOA string it runs.

The learners and the JVM: :mod:`olb.learners.moa_learner` and :mod:`olb.learners.moa_jvm`.

jpype is imported when a learner is built or checked, never when the registry is.
"""

from __future__ import annotations

from typing import ClassVar

from olb.learners.base import Param
from olb.learners.moa_costs import MOACost
from olb.learners.moa_jvm import JVM_HEAP_MB, JVM_OPTIONS, JVM_YOUNG_MB, missing_requirements, start_jvm
from olb.learners.moa_learner import (
    ENSEMBLE_SIZE,
    GRACE_PERIOD,
    LEAF_PREDICTION,
    SPLIT_CONFIDENCE,
    TIE_THRESHOLD,
    MOALearner,
    MOAMultiClass,
    MOAMultiLabel,
)
from olb.learners.registry import register

__all__ = [
    "JVM_HEAP_MB",
    "JVM_OPTIONS",
    "JVM_YOUNG_MB",
    "MOAAMR",
    "MOABRHT",
    "MOAHT",
    "MOAISOUPT",
    "MOALearner",
    "MOAOzaBag",
    "MOAOzaBoost",
    "missing_requirements",
    "start_jvm",
]


def _registered(cls: type[MOALearner]) -> type[MOALearner]:
    """``cls`` registered with its cost model (:class:`olb.learners.moa_costs.MOACost`)."""
    return register(cls, MOACost(cls.name, multi_label=cls.task == "multilabel", heap_mb=JVM_HEAP_MB))


class TreeSettings:
    """The settings of MOA's Hoeffding tree, for the learners that are one or are built over one."""

    test_params: ClassVar[dict] = {"grace_period": 20}
    grace_period = GRACE_PERIOD
    split_confidence = SPLIT_CONFIDENCE
    tie_threshold = TIE_THRESHOLD
    leaf_prediction = LEAF_PREDICTION


@_registered
class MOABRHT(TreeSettings, MOAMultiLabel):
    """MOA's binary relevance over its Hoeffding tree (``multitarget.BasicMultiLabelClassifier``)."""

    name = "moa_br_ht"
    moa_class = "multitarget.BasicMultiLabelClassifier"
    over_tree = True


class MOASplitting(MOAMultiLabel):
    """A MOA multi-label learner of its own (no base tree) that grows by a Hoeffding test: grace period, split
    confidence, tie threshold."""

    test_params = {"grace_period": 20}
    grace_period = GRACE_PERIOD
    split_confidence = SPLIT_CONFIDENCE
    tie_threshold = TIE_THRESHOLD


@_registered
class MOAISOUPT(MOASplitting):
    """MOA's iSOUP tree (``multilabel.trees.ISOUPTree``): one multi-target tree over the 0/1 label vector."""

    name = "moa_isoupt"
    moa_class = "multilabel.trees.ISOUPTree"
    regressed = True


@_registered
class MOAAMR(MOASplitting):
    """MOA's AMRules for multi-label streams (``rules.multilabel.AMRulesMultiLabelClassifier``)."""

    name = "moa_amr"
    moa_class = "rules.multilabel.AMRulesMultiLabelClassifier"
    grace_period = Param(int, 200, low=1, doc="examples a rule sees between expansion attempts (MOA's -g)")


@_registered
class MOAHT(TreeSettings, MOAMultiClass):
    """MOA's Hoeffding tree (``trees.HoeffdingTree``)."""

    name = "moa_ht"
    moa_class = "trees.HoeffdingTree"


class MOAEnsemble(TreeSettings, MOAMultiClass):
    """A MOA ensemble of ``ensemble_size`` Hoeffding trees."""

    over_tree = True
    test_params = {"grace_period": 20, "ensemble_size": 3}
    ensemble_size = ENSEMBLE_SIZE


@_registered
class MOAOzaBoost(MOAEnsemble):
    """MOA's online boosting (``meta.OzaBoost``) over its Hoeffding tree."""

    name = "moa_ozaboost"
    moa_class = "meta.OzaBoost"


@_registered
class MOAOzaBag(MOAEnsemble):
    """MOA's online bagging (``meta.OzaBag``) over its Hoeffding tree."""

    name = "moa_ozabag"
    moa_class = "meta.OzaBag"
